"""Columns and what each cannot do for a row (upstream §6.3, ``mcpHarnessLimits``).

A column is the ``reference`` harness or a vendor CLI. Every column this runner has reaches SharedOS
over MCP and runs its own loop, so every column is graded under the MCP limits:

- a row of kind ``escalation_refused`` or ``runtime_crashed`` is **unsupported** (not run; the cell is
  ``not_applicable`` and every declared attempt counts as not applicable);
- an ``inspect`` attempt is **unreachable** (a harness is never handed the runtime's surfaces);
- an ``uncatalogued`` attempt is **unreachable**, with its own reason — except on a column whose
  profile says ``issues_uncatalogued: true``: the reference harness has no router of its own, so it
  issues those names and the envelope refuses them ``tool_unavailable`` (as upstream's model-driven
  column, ``modelLimits``, which declares nothing about uncatalogued names);
- a condition with ``requires_declared_steps`` is **out of scope** (MCP calls declare no step): the row
  still runs and its evidence is kept, and the cell is ``out_of_scope``.

No MCP column declares ``driverIssued`` attempts.

:func:`issuable_attempts` is the one list of calls a column can make on a turn; the prompt
(``movesToPrompt``) and the scripted actions (reference harness and scripted model) both use it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from runner.conformance.cases import Attempt, Case, Condition
from runner.core.outcomes import JsonValue

INSPECT_UNREACHABLE = (
    "a harness speaks tool calls over MCP and is never handed the runtime surfaces to enumerate"
)
UNSUPPORTED: dict[str, str] = {
    "escalation_refused": (
        "the MCP runtime settles escalate only from a call to the catalogued affordance, and the harness has "
        "no outcome of its own"
    ),
    "runtime_crashed": "a harness crash is a lost connection, not a throw out of `run`",
}


@dataclass(frozen=True)
class HarnessLimits:
    """``ColumnLimits``: what one column structurally cannot do for one row under one condition."""

    unsupported: str | None = None  # the whole row is not run
    unreachable: Mapping[str, str] = field(default_factory=dict)  # attempt id -> why
    out_of_scope: str | None = None  # SharedOS declares the guarantee does not reach this column
    driver_issued: Mapping[str, str] = field(default_factory=dict)  # always empty on an MCP column

    def to_json(self) -> dict[str, JsonValue]:
        body: dict[str, JsonValue] = {}
        if self.unsupported is not None:
            body["unsupported"] = self.unsupported
        if self.unreachable:
            body["unreachable"] = dict(self.unreachable)
        if self.out_of_scope is not None:
            body["outOfScope"] = self.out_of_scope
        if self.driver_issued:
            body["driverIssued"] = dict(self.driver_issued)
        return body


def limits_for(case: Case, condition: Condition, issues_uncatalogued: bool) -> HarnessLimits:
    """``mcpHarnessLimits`` for one row, on a column that does (or does not) issue uncatalogued names."""
    unreachable: dict[str, str] = {}
    for attempt in case.attempts:
        if attempt.inspect is not None:
            unreachable[attempt.id] = INSPECT_UNREACHABLE
        if attempt.uncatalogued is not None and not issues_uncatalogued:
            unreachable[attempt.id] = attempt.uncatalogued
    return HarnessLimits(
        unsupported=UNSUPPORTED.get(case.kind),
        unreachable=unreachable,
        out_of_scope=condition.requires_declared_steps,
    )


def issuable_attempts(case: Case, limits: HarnessLimits, *, turn: int = 1) -> list[Attempt]:
    """The attempts a column issues on ``turn``, in declared order (upstream ``issuableByHarness``).

    Not marked ``unreachable``, not named by the column's limits, not an inspection, and with a tool. The
    condition reaches this list through ``limits`` (:func:`limits_for` is per case and condition); an
    unsupported row still has issuable attempts (``runner exec`` may run it; the matrix does not).
    """
    return [
        a
        for a in case.attempts
        if a.turn_index == turn
        and a.unreachable is None
        and a.id not in limits.unreachable
        and a.inspect is None
        and a.tool is not None
    ]

