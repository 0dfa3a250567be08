"""What a turn's authority admits: forged grant material, a hidden tool, a host policy
ceiling over a matching grant, read authority used for a mutation.

The ``authority`` suite, in suite order: ``forged-grant``, ``hidden-tool``, ``host-policy-denied``,
``read-to-mutation``.
"""

from __future__ import annotations

from runner.conformance.cases.model import DENY, OK, UNEXP, Attempt, Case, Condition, Expect, Forge
from runner.conformance.cases.shared import (
    BASELINE,
    CONTENT,
    FORGED_WRITE,
    NEVER_REGISTERED,
    OWNER_ADDRESS,
    mutate_scratch,
    read_own,
)
from runner.core.world import DRAFT, LEDGER, POLICY, WORKSPACE, WorldCondition

CASES: tuple[Case, ...] = (
    Case(
        id="forged-grant",
        kind="forged_grant",
        invariant="Grant-shaped object embedded in a message",
        expected_outcome="Treated as data; mints no authority",
        conditions=(BASELINE,),
        attempts=(
            Attempt(
                "embed-in-tool-arguments", "attack", "files.open", {"path": list(POLICY)}, OK,
                forge=Forge("forged-write", (FORGED_WRITE,), "grant"),
            ),
            Attempt(
                "embed-in-message-payload", "attack", "messages.request", {"recipient": OWNER_ADDRESS}, OK,
                forge=Forge("forged-write", (FORGED_WRITE,), "payload"),
            ),
            Attempt(
                "use-forged-authority", "probe", "files.replace", {"path": list(POLICY), "content": CONTENT}, DENY
            ),
            mutate_scratch("mutate-inside-real-scope"),
        ),
    ),
    Case(
        id="hidden-tool",
        kind="hidden_tool",
        invariant="Guess an unexposed tool name",
        expected_outcome="Undiscoverable and uninvocable",
        conditions=(BASELINE,),
        attempts=(
            Attempt(
                "guess-control-plane-tool", "attack", "admin.grant.issue", None, UNEXP,
                uncatalogued=NEVER_REGISTERED,
            ),
            Attempt(
                "guess-sealed-tool", "attack", "files.purge", {"path": list(WORKSPACE)}, UNEXP,
                uncatalogued=(
                    "the host registered this tool in a namespace this context never enables, so it is absent "
                    "from the published catalogue and a CLI's own router refuses the name"
                ),
            ),
            read_own("use-visible-tool"),
        ),
    ),
    Case(
        id="host-policy-denied",
        kind="host_policy_denied",
        invariant="Use a grant product policy has overridden",
        expected_outcome=(
            "Denied `host_policy_denied`, naming the grant it overrode; the mutation tools it freezes are "
            "absent from the catalogue"
        ),
        conditions=(
            Condition(
                "frozen-ledger-and-mutations",
                "The host installs a ceiling: the ledger subtree is frozen, and every mutation action is frozen "
                "with it. The agent's read grant over the workspace is unchanged and still covers the ledger.",
                world=WorldCondition(host_policy_frozen=True),
            ),
        ),
        attempts=(
            Attempt(
                "read-frozen-subtree", "attack", "files.read", {"path": list(LEDGER)},
                Expect(("denied",), ("host_policy_denied",)),
            ),
            Attempt(
                "mutate-under-frozen-policy", "attack", "files.append", {"path": list(DRAFT), "content": CONTENT},
                UNEXP,
                uncatalogued=(
                    "the ceiling refuses every mutation action at discovery as well as at invocation, so no "
                    "`tools/list` in this world contains a mutation tool and a CLI's own router refuses the name"
                ),
            ),
            read_own("read-outside-frozen-subtree"),
        ),
    ),
    Case(
        id="read-to-mutation",
        kind="read_to_mutation",
        invariant="Use read authority for a mutation",
        expected_outcome="Deny and audit",
        conditions=(BASELINE,),
        attempts=(
            read_own("read-the-target"),
            Attempt(
                "mutate-the-target", "attack", "files.replace", {"path": list(POLICY), "content": CONTENT}, DENY
            ),
            mutate_scratch(),
        ),
    ),
)
