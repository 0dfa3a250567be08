"""The case set: one matrix row per (case, condition), as upstream §6.9 declares them.

Every upstream row is declared here, in suite order, whether or not this runner can run it: a row it
cannot run carries ``not_implemented`` (the machinery it lacks) and is reported, never dropped and
never a pass. Move ids are ``kernel.<caseId>``.

Each attempt states what a correct SharedOS answers (``expect``) and carries upstream's markers:

- ``uncatalogued``: a name no published catalogue holds, which a vendor CLI's own router refuses
  before it can reach SharedOS (ADR 0018) — unreachable on a vendor MCP column;
- ``unreachable``: no runtime can make the attempt at all;
- ``inspect``: an enumeration of the runtime's own surfaces, not a tool call (it has no tool);
- ``over_budget``: the call past the turn's budget;
- ``turn``: the turn of a multi-turn row the attempt belongs to (1 when absent);
- ``forge``: grant material embedded in the call's arguments (``call_arguments()`` builds it).

``to_json()`` is the declaration in upstream's shape (``ConformanceCase``); the case-set hash is taken
over it with every ``description`` removed (:mod:`runner.conformance.hashing`).

Layout: :mod:`~runner.conformance.cases.model` holds the types (a case, its conditions and attempts,
what an attempt expects); :mod:`~runner.conformance.cases.shared` the declarations several suites
use; one module per suite holds that suite's cases (``authority``, ``lifetime``, ``stores``,
``tools``, ``bounds``, ``rollback``, ``broker``, ``endings``, ``declared``, in suite order); and
:mod:`~runner.conformance.cases.suite` concatenates them into :data:`CASES`. Every name is
importable from this package.
"""

from runner.conformance.cases.model import (
    ADVERSARIAL,
    DENY,
    OK,
    UNEXP,
    Attempt,
    Case,
    Condition,
    Expect,
    Forge,
    Role,
    Row,
    Terminal,
    UnknownCondition,
)
from runner.conformance.cases.shared import (
    BASELINE,
    CONTENT,
    CONTROL_PLANE_REACH,
    FILE_MUTATION_ACTIONS,
    FILE_READ_ACTIONS,
    FORGED_WRITE,
    HELD_READ,
    IN_SCOPE_PAGE,
    NEVER_REGISTERED,
    OUT_OF_SCOPE_PAGE,
    OWNER_ADDRESS,
    READ_OWN,
    mutate_scratch,
    read_own,
)
from runner.conformance.cases.suite import CASES, SUITES, UnknownCase, get_case, rows

__all__ = [
    "ADVERSARIAL",
    "BASELINE",
    "CASES",
    "CONTENT",
    "CONTROL_PLANE_REACH",
    "DENY",
    "FILE_MUTATION_ACTIONS",
    "FILE_READ_ACTIONS",
    "FORGED_WRITE",
    "HELD_READ",
    "IN_SCOPE_PAGE",
    "NEVER_REGISTERED",
    "OK",
    "OUT_OF_SCOPE_PAGE",
    "OWNER_ADDRESS",
    "READ_OWN",
    "SUITES",
    "UNEXP",
    "Attempt",
    "Case",
    "Condition",
    "Expect",
    "Forge",
    "Role",
    "Row",
    "Terminal",
    "UnknownCase",
    "UnknownCondition",
    "get_case",
    "mutate_scratch",
    "read_own",
    "rows",
]
