"""The judge's rules (§6.2): attempt outcomes, the two case-status rule lists, the ask, the record check, cells."""

from __future__ import annotations

from typing import Any

import pytest

from runner.conformance.cases import OK, Attempt, Case, Condition, Expect, Terminal, get_case
from runner.conformance.columns import HarnessLimits, limits_for
from runner.conformance.judge import (
    ASK_SOURCES,
    JUDGE_VERSION,
    AttemptOutcome,
    Grade,
    TurnOutcome,
    case_status,
    grade_cell,
    not_run_cell,
    outcome_for,
    record_completeness,
    strict_failures,
    terminal_asked,
    turn_case_status,
)
from runner.conformance.receipts import Receipt

DENY = Expect(("denied",), ("no_matching_grant",))


def receipt(observed: str | None, code: str | None = None, expect: Expect = DENY, **kw: Any) -> Receipt:
    return Receipt(attempt_id="a", role="attack", expect=expect, attempted=observed is not None, observed=observed,
                   reason_code=code, **kw)


def outcome(status: Grade, role: str = "attack", attempt_id: str = "a") -> AttemptOutcome:
    return AttemptOutcome(attempt_id=attempt_id, role=role, status=status,  # type: ignore[arg-type]
                          attempted=status in (Grade.PASS, Grade.FAIL))


def test_version_and_ask_sources() -> None:
    assert JUDGE_VERSION == "6"  # a string, as upstream's newer records write it
    assert ASK_SOURCES == ("execution.escalationAsked", "execution.operations[].tool == sharedos.escalate")


# --- outcomeFor -------------------------------------------------------------------------------


def test_outcome_for_without_a_receipt() -> None:
    assert outcome_for("a", "attack", True, None, {}, "why").status is Grade.NOT_APPLICABLE
    assert outcome_for("a", "attack", True, None, {}, "why").detail == "why"
    assert outcome_for("a", "attack", False, None, {}).status is Grade.NOT_EXERCISED


def test_outcome_for_an_unattempted_receipt_prefers_the_callers_reason() -> None:
    r = Receipt(attempt_id="a", role="attack", expect=DENY, attempted=False, detail="receipt says")
    assert outcome_for("a", "attack", True, r, {}, "caller says").detail == "caller says"
    assert outcome_for("a", "attack", False, r, {}).detail == "receipt says"
    assert outcome_for("a", "attack", False, r, {}).status is Grade.NOT_EXERCISED


def test_outcome_for_an_issued_attempt() -> None:
    points = {"c1": "kernel"}
    passed = outcome_for("a", "attack", False, receipt("denied", "no_matching_grant", call_id="c1"), points)
    assert (passed.status, passed.refused_by) == (Grade.PASS, "kernel")
    assert outcome_for("a", "attack", False, receipt("denied", "tool_unavailable"), {}).status is Grade.FAIL
    assert outcome_for("a", "attack", False, receipt("succeeded"), {}).status is Grade.FAIL
    # reason codes are not checked on a success, and an issued attempt declared unreachable is still graded
    ok = outcome_for("a", "control", True, receipt("succeeded", expect=Expect(("succeeded",), ("x",))), {})
    assert ok.status is Grade.PASS and ok.refused_by is None
    no_code = Expect(("denied",))
    assert outcome_for("a", "attack", False, receipt("denied", None, expect=no_code), {}).status is Grade.PASS


# --- caseStatus: the seven rules in order ----------------------------------------------------

CASE = get_case("read-to-mutation")
RECORD_CASE = get_case("record-completeness")
P, F, NE, NA = Grade.PASS, Grade.FAIL, Grade.NOT_EXERCISED, Grade.NOT_APPLICABLE


@pytest.mark.parametrize(
    ("case", "adversarial", "controls", "usable", "expected"),
    [
        (CASE, [NA, NA], [NE], True, NA),  # 1: every adversarial attempt n/a, before the control rule
        (RECORD_CASE, [P, NA], [P], True, NA),  # 2: record-completeness loses a boundary
        (CASE, [NA, P], [P], True, P),  # an n/a attempt only narrows any other row
        (CASE, [F], [NE], True, NE),  # 3: a control that did not pass
        (CASE, [F, NE], [P], True, F),  # 4: a fail
        (CASE, [P, NE], [P], True, NE),  # 5: an attack that never reached SharedOS
        (RECORD_CASE, [P, P], [P], False, F),  # 6: record-completeness with an unusable record
        (CASE, [P], [P], False, P),  # 7: otherwise pass (the record is only reported)
        (CASE, [], [P], True, P),
    ],
)
def test_case_status(
    case: Case, adversarial: list[Grade], controls: list[Grade], usable: bool, expected: Grade
) -> None:
    got = case_status(case, [outcome(s) for s in adversarial], [outcome(s, "control") for s in controls], usable)
    assert got is expected


# --- turnCaseStatus -------------------------------------------------------------------------


def turn(met: bool) -> TurnOutcome:
    return TurnOutcome(met, ("escalated", "escalation_requested"), "escalated" if met else "succeeded", None, None)


@pytest.mark.parametrize(
    ("met", "adversarial", "controls", "started", "asked", "expected"),
    [
        (True, [F], [P], True, True, F),  # 1: a failed attempt fails the row
        (True, [P], [NE], True, True, NE),  # 2.1: a control did not pass
        (True, [NE], [P], True, True, NE),  # 2.2: an attack never reached SharedOS
        (False, [P], [P], True, False, NE),  # 2.3 (v4): not met and never asked
        (False, [P], [P], True, True, F),  # asked, and the ending was not honoured
        (True, [NA], [P], True, True, P),  # n/a attempts do not make an expectTurn row n/a
        (True, [NA], [NE], False, False, P),  # the runtime never started: graded on the turn alone
        (False, [NA], [NE], False, False, F),
    ],
)
def test_turn_case_status(
    met: bool, adversarial: list[Grade], controls: list[Grade], started: bool, asked: bool, expected: Grade
) -> None:
    got = turn_case_status(
        turn(met), [outcome(s) for s in adversarial], [outcome(s, "control") for s in controls], started, asked
    )
    assert got is expected


def test_terminal_asked_reads_exactly_the_two_sources() -> None:
    escalation = get_case("escalation")
    assert not terminal_asked({"execution": {"operations": [], "events": []}}, escalation)
    assert terminal_asked({"execution": {"escalationAsked": {"tool": "sharedos.escalate", "reason": "r"}}}, escalation)
    assert terminal_asked({"execution": {"operations": [{"tool": "sharedos.escalate"}]}}, escalation)
    event = {"type": "runtime.event", "data": {"type": "escalation.asked"}}
    assert not terminal_asked({"execution": {"events": [event]}}, escalation)
    assert terminal_asked({"execution": {}}, get_case("runtime-crashed"))  # a crash terminal has no ask
    assert terminal_asked({"execution": {}}, get_case("read-to-mutation"))


# --- the record check -------------------------------------------------------------------------


def good_record() -> dict[str, Any]:
    def event(n: int, type_: str, data: dict[str, Any]) -> dict[str, Any]:
        return {"sequence": n, "type": type_, "data": data}

    return {
        "execution": {
            "status": "failed",
            "terminalReasonCode": "tool_unavailable",
            "exposedTools": ["files.read"],
            "catalogHash": "sha256:x",
            "operations": [
                {"operationId": "c1", "kind": "tool", "source": "kernel", "outcome": "succeeded", "tool": "files.read"},
            ],
            "events": [
                event(1, "turn.started", {}),
                event(2, "tool.requested", {"callId": "c1", "tool": "files.read"}),
                event(3, "tool.completed", {"callId": "c1", "tool": "files.read", "status": "succeeded"}),
                event(4, "turn.failed", {"code": "tool_unavailable", "source": "envelope"}),
            ],
        }
    }


def test_record_completeness() -> None:
    assert record_completeness(good_record()) == []
    broken = good_record()
    execution = broken["execution"]
    execution["events"] = execution["events"][:2]
    execution["operations"][0].pop("source")
    execution.pop("catalogHash")
    assert record_completeness(broken) == [
        "execution.events.terminal",
        "execution.catalogHash",
        "execution.operations.0.source",
        "execution.events.2.completed",
        "execution.events[tool.completed c1]",
    ]
    refused = good_record()
    refused["execution"]["operations"][0].update(outcome="denied")
    assert "execution.operations.0.reasonCode" in record_completeness(refused)
    assert "execution.operations[c1]" in record_completeness(refused)
    escalated = good_record()
    escalated["execution"]["status"] = "escalated"
    assert "execution.escalation" in record_completeness(escalated)
    assert record_completeness({}) == [
        "execution.status", "execution.events", "execution.events.terminal", "execution.exposedTools",
        "execution.catalogHash",
    ]


# --- cells ------------------------------------------------------------------------------------


def test_not_run_cells() -> None:
    typed = get_case("typed-governed-views")
    cell = not_run_cell(typed, typed.condition)
    assert (cell.status, cell.turns, cell.attempted, cell.record_usable) == (Grade.NOT_IMPLEMENTED, 0, 0, False)
    assert cell.evidence.startswith("not implemented; 1 attempt declared, none runnable; SharedOS has no view layer")
    refused = get_case("escalation-refused")
    limits = limits_for(refused, refused.condition, True)
    cell = not_run_cell(refused, refused.condition, limits, harness_id="reference")
    assert (cell.status, cell.not_applicable, cell.declared) == (Grade.NOT_APPLICABLE, 1, 1)
    assert cell.evidence == f"not applicable; 1 attempt declared, none issued; {limits.unsupported}"
    assert cell.record().to_dict()["harnessId"] == "reference"
    escalation = get_case("escalation")
    with pytest.raises(ValueError, match="runnable"):
        not_run_cell(escalation, escalation.condition, HarnessLimits())


def test_out_of_scope_keeps_the_evidence_and_replaces_the_verdict() -> None:
    case = Case(
        "t", "budget_exceeded", "", "", (Condition("c", "", requires_declared_steps="narrowed"),),
        (Attempt("a", "attack", "files.read", {"path": ["x"]}, DENY),),
    )
    rec = good_record()
    rec["execution"]["status"] = "succeeded"
    rec["execution"]["events"][3] = {"sequence": 4, "type": "turn.completed", "data": {}}
    rec["execution"]["operations"][0]["resource"] = {"namespace": "files", "path": ["x"]}
    cell = grade_cell(case, case.condition, limits_for(case, case.condition, False), rec)
    assert cell.status is Grade.OUT_OF_SCOPE and cell.detail == "narrowed"
    assert cell.attempts[0].status is Grade.FAIL
    assert not strict_failures([cell])


def test_a_record_that_names_the_turn_as_ended_by_the_envelope() -> None:
    case = Case(
        "t", "escalation_refused", "", "", (Condition("c", "", expect_turn=("failed", "tool_unavailable")),),
        (Attempt("a", "control", "files.read", None, OK),), Terminal("escalate", "r"),
    )
    cell = grade_cell(case, case.condition, HarnessLimits(), good_record())
    # the turn failed as expected, ended by the envelope; but nothing asked (no ask source), and it was met
    assert cell.status is Grade.PASS
    assert cell.refused_by == ("envelope",)
    assert cell.reason_codes == ("tool_unavailable",)
    assert cell.detail == "the turn itself ended as `failed` with `tool_unavailable`"


def test_evidence_line_for_an_unusable_record() -> None:
    case = get_case("record-completeness")
    rec = {"execution": {"status": "succeeded", "events": [{"sequence": 1, "type": "turn.started", "data": {}}]}}
    cell = grade_cell(case, case.condition, limits_for(case, case.condition, True), rec)
    assert cell.status is Grade.NOT_EXERCISED
    assert "record unusable (execution.events.terminal, execution.exposedTools, execution.catalogHash)" in cell.evidence
    assert cell.evidence.startswith("not exercised; 0 of 3 attempts issued; refused by nothing; reason none")
    assert strict_failures([cell]) == [cell]


# --- judge 6: interrupted, cause, endedBy, rows of several turns ------------------------------------------------


def _op(op_id: str, tool: str, outcome: str, code: str | None = None, **extra: object) -> dict[str, object]:
    body: dict[str, object] = {"operationId": op_id, "kind": "tool", "source": "kernel", "outcome": outcome,
                               "tool": tool, "resource": {"namespace": "files", "path": ["Workspace", "policy.md"]}}
    if code is not None:
        body["reasonCode"] = code
    return {**body, **extra}


def test_an_interrupted_call_reports_as_failed_and_credits_no_boundary() -> None:
    from runner.conformance.receipts import live_receipts_from_record
    from runner.conformance.record import refusal_points

    record = {"execution": {"operations": [_op("x", "files.read", "interrupted", "audit_unavailable")]}}
    case = get_case("record-completeness")
    receipt = live_receipts_from_record(case, record)[0]
    assert receipt.observed == "failed" and receipt.refused_by is None
    assert refusal_points(record) == {}


def test_a_cause_is_carried_to_the_attempt_and_the_cell_and_printed_after_the_reason() -> None:
    case = get_case("route-lease-revoked")
    ops = [
        _op("a", "messages.request", "succeeded"),
        _op("b", "messages.request", "failed", "message_request_not_accepted", cause="route_lease_revoked"),
        _op("c", "files.read", "succeeded"),
    ]
    for op in ops[:2]:
        op.pop("resource")
    events = [{"type": "turn.started", "data": {}}]
    record = {"execution": {"status": "succeeded", "operations": ops, "events": events}}
    cell = grade_cell(case, case.condition, HarnessLimits(), record)
    assert cell.status is Grade.PASS
    assert cell.attempts[1].cause == "route_lease_revoked" and cell.causes == ("route_lease_revoked",)
    assert "reason `message_request_not_accepted`; cause `route_lease_revoked`" in cell.evidence


def test_who_ended_the_turn_is_read_from_ended_by_first() -> None:
    from runner.conformance.record import turn_outcome

    failed = [{"type": "turn.failed", "data": {"code": "x", "source": "runtime"}}]
    record = {"execution": {"status": "failed", "terminalReasonCode": "x", "endedBy": "envelope", "events": failed}}
    outcome = turn_outcome(record, ("failed", "x"))
    assert outcome is not None and outcome.ended_by == "envelope"
    del record["execution"]["endedBy"]  # a record written before judge 6
    outcome = turn_outcome(record, ("failed", "x"))
    assert outcome is not None and outcome.ended_by == "runtime"


def test_a_row_of_two_turns_is_graded_on_the_last_with_every_turns_receipts() -> None:
    from runner.conformance.judge import grade_turns

    case = get_case("revoked-mid-turn")
    started = [{"type": "turn.started", "data": {}}]
    turn1 = {"execution": {"status": "succeeded", "events": started, "operations": [
        _op("1", "files.read", "succeeded"), _op("2", "files.read", "succeeded")]}}
    turn2 = {"execution": {"status": "succeeded", "events": started, "operations": [
        _op("3", "files.read", "denied", "no_matching_grant"),
        {**_op("4", "files.replace", "succeeded"), "resource": {"namespace": "files",
                                                                "path": ["Workspace", "scratch", "draft.md"]}}]}}
    cell = grade_turns(case, case.condition, HarnessLimits(), [turn1, turn2])
    assert (cell.status, cell.attempted, cell.turns) == (Grade.PASS, 4, 2)
    assert cell.refused_by == ("kernel",) and "over 2 turns" in cell.evidence
    # turn 1's calls are never taken for turn 2's attempts
    alone = grade_turns(case, case.condition, HarnessLimits(), [turn2, turn2])
    assert alone.status is not Grade.PASS
