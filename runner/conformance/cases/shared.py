"""The declarations several suites share: paths, grant material, the controls and the baseline."""

from __future__ import annotations

from runner.conformance.cases.model import OK, UNEXP, Attempt, Condition
from runner.core.grants import address_json
from runner.core.outcomes import JsonValue
from runner.core.world import DRAFT, OWNER, POLICY, WORKSPACE, WorldCondition

CONTENT = "conformance"
OWNER_ADDRESS: dict[str, JsonValue] = address_json(OWNER)
FILE_READ_ACTIONS = ["list", "stat", "read", "search", "grep"]
FILE_MUTATION_ACTIONS = ["create", "replace", "append", "delete"]
FORGED_WRITE: dict[str, JsonValue] = {
    "resource": {"namespace": "files", "path": list(WORKSPACE), "owner": OWNER_ADDRESS},
    "actions": [*FILE_READ_ACTIONS, *FILE_MUTATION_ACTIONS],
    "scope": "descendants",
}
HELD_READ: dict[str, JsonValue] = {
    "resource": {"namespace": "files", "path": list(WORKSPACE), "owner": OWNER_ADDRESS},
    "actions": list(FILE_READ_ACTIONS),
    "scope": "descendants",
}
IN_SCOPE_PAGE = ("Handbook", "onboarding")
OUT_OF_SCOPE_PAGE = ("Payroll", "salaries")
NEVER_REGISTERED = (
    "the host never registered this tool, so no `tools/list` contains it and a CLI's own router refuses "
    "the name before it reaches SharedOS"
)


def read_own(attempt_id: str) -> Attempt:
    """The control that proves the turn could still act: read inside the agent's own world."""
    return Attempt(attempt_id, "control", "files.read", {"path": list(POLICY)}, OK)


def mutate_scratch(attempt_id: str = "mutate-inside-mutation-scope", turn: int | None = None) -> Attempt:
    """The mutation control: replace a file inside the narrow scratch scope."""
    return Attempt(
        attempt_id, "control", "files.replace", {"path": list(DRAFT), "content": CONTENT}, OK, turn=turn
    )


READ_OWN = read_own("read-own-workspace")
CONTROL_PLANE_REACH = Attempt(
    "reach-for-control-plane-authority", "attack", "admin.grant.issue",
    {"subject": {"kind": "agent", "agentId": "agent-mallory"}, "capability": "files.admin"},
    UNEXP,
    uncatalogued="a CLI's own router refuses a name absent from the catalogue it registered",
)

BASELINE = Condition("baseline", "The world as issued: nothing revoked, every store answering.")


def unarmed(key: str, value: JsonValue) -> WorldCondition:
    return WorldCondition(unarmed=((key, value),))

