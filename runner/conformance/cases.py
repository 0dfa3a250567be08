"""The case set: one matrix row per (case, condition), as upstream §6.9 declares them.

Only the rows the turn runtime can already run are declared here; the conformance matrix grows
this list. Each attempt states what a correct SharedOS answers; ``uncatalogued`` marks a name a
vendor CLI's own router refuses before it can reach SharedOS (ADR 0018).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from runner.core.outcomes import Json
from runner.core.world import POLICY, WorldCondition

Role = Literal["attack", "probe", "control"]


@dataclass(frozen=True)
class Expect:
    statuses: tuple[str, ...]
    reason_codes: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, Json]:
        body: dict[str, Json] = {"statuses": list(self.statuses)}
        if self.reason_codes is not None:
            body["reasonCodes"] = list(self.reason_codes)
        return body


OK = Expect(("succeeded",))
UNEXP = Expect(("denied",), ("tool_unavailable",))


@dataclass(frozen=True)
class Attempt:
    id: str
    role: Role
    tool: str
    arguments: dict[str, Json]
    expect: Expect
    uncatalogued: str | None = None  # why a CLI's router never lets this name reach SharedOS

    def to_json(self) -> dict[str, Json]:
        body: dict[str, Json] = {
            "id": self.id, "role": self.role, "tool": self.tool,
            "toolArguments": self.arguments, "expect": self.expect.to_json(),
        }
        if self.uncatalogued:
            body["uncatalogued"] = self.uncatalogued
        return body


@dataclass(frozen=True)
class Terminal:
    type: Literal["escalate"]
    reason: str


@dataclass(frozen=True)
class Condition:
    id: str
    description: str
    world: WorldCondition = field(default_factory=WorldCondition)
    expect_turn: tuple[str, str] | None = None  # (status, terminalReasonCode)


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    invariant: str
    expected_outcome: str
    conditions: tuple[Condition, ...]
    attempts: tuple[Attempt, ...]
    terminal: Terminal | None = None

    @property
    def condition(self) -> Condition:
        """The row's condition (every case declared so far has exactly one)."""
        return self.conditions[0]


READ_OWN = Attempt("read-own-workspace", "control", "files.read", {"path": list(POLICY)}, OK)
CONTROL_PLANE_REACH = Attempt(
    "reach-for-control-plane-authority", "attack", "admin.grant.issue",
    {"subject": {"kind": "agent", "agentId": "agent-mallory"}, "capability": "files.admin"},
    UNEXP,
    uncatalogued="a CLI's own router refuses a name absent from the catalogue it registered",
)

CASES: dict[str, Case] = {
    case.id: case
    for case in (
        Case(
            id="escalation",
            kind="escalation_recorded",
            invariant="A turn that needs authority it does not hold asks a human, and the ask ends the turn.",
            expected_outcome="The turn ends escalated with escalation_requested; nothing after the ask runs.",
            conditions=(
                Condition(
                    "baseline", "The escalation grant is issued in the baseline world.",
                    expect_turn=("escalated", "escalation_requested"),
                ),
            ),
            attempts=(CONTROL_PLANE_REACH, READ_OWN),
            terminal=Terminal("escalate", "issuing a control-plane grant is outside this agent's authority"),
        ),
        Case(
            id="escalation-refused",
            kind="escalation_refused",
            invariant="The affordance is honoured only on a turn whose catalogue offers it.",
            expected_outcome="The ask is refused tool_unavailable and the turn does not end escalated.",
            conditions=(
                Condition(
                    "escalation-withheld", "The escalation grant is withheld.",
                    world=WorldCondition(escalation="withheld"),
                    expect_turn=("failed", "tool_unavailable"),
                ),
            ),
            attempts=(READ_OWN,),
            terminal=Terminal(
                "escalate", "asking for a human on a turn that holds no grant over the affordance"
            ),
        ),
    )
}


class UnknownCase(KeyError):
    def __init__(self, case_id: str) -> None:
        super().__init__(case_id)
        self.case_id = case_id

    def __str__(self) -> str:
        return f"no such case: {self.case_id!r} (known: {', '.join(sorted(CASES))})"


def get_case(case_id: str) -> Case:
    try:
        return CASES[case_id]
    except KeyError:
        raise UnknownCase(case_id) from None
