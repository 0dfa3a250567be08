"""Live receipts (§6.4 ``liveReceiptsFromRecord``): correlation on tool and resource path."""

from __future__ import annotations

from typing import Any

from runner.conformance.cases import OK, UNEXP, Attempt, Case, Condition, Expect, get_case
from runner.conformance.receipts import NO_MATCH, NO_SURFACE, live_receipts_from_record

POLICY = ["Workspace", "policy.md"]
DRAFT = ["Workspace", "scratch", "draft.md"]


def op(op_id: str, tool: str, outcome: str = "succeeded", path: list[str] | None = None, **kw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"operationId": op_id, "kind": "tool", "source": "kernel", "outcome": outcome, "tool": tool}
    if path is not None:
        body["resource"] = {"namespace": "files", "path": path}
    body.update(kw)
    return body


def record(*operations: dict[str, Any]) -> dict[str, Any]:
    return {"execution": {"operations": list(operations)}}


def case_of(*attempts: Attempt) -> Case:
    return Case("t", "test", "", "", (Condition("baseline", ""),), attempts)


def test_exact_path_first_then_an_operation_refused_before_authorization() -> None:
    case = case_of(
        Attempt("first", "control", "files.replace", {"path": DRAFT, "content": "x"}, OK),
        Attempt("second", "attack", "files.replace", {"path": POLICY, "content": "x"}, Expect(("denied",))),
    )
    fumble = op("a", "files.replace", "failed", reasonCode="invalid_tool_arguments")
    retry = op("b", "files.replace", "denied", POLICY, reasonCode="no_matching_grant")
    control = op("c", "files.replace", "succeeded", DRAFT)
    first, second = live_receipts_from_record(case, record(fumble, retry, control))
    assert (first.call_id, second.call_id) == ("c", "b")  # the fumble never outranks an exact match
    assert second.observed == "denied" and second.reason_code == "no_matching_grant" and second.refused_by == "kernel"
    assert first.refused_by is None


def test_each_operation_is_consumed_once_in_declared_order() -> None:
    case = case_of(
        Attempt("one", "control", "files.read", {"path": POLICY}, OK),
        Attempt("two", "attack", "files.read", {"path": POLICY}, Expect(("denied",))),
    )
    only = op("a", "files.read", "succeeded", POLICY)
    one, two = live_receipts_from_record(case, record(only))
    assert one.attempted and one.call_id == "a"
    assert not two.attempted and two.detail == NO_MATCH
    refused = op("b", "files.read", "denied", source="envelope", reasonCode="tool_call_limit_exceeded")
    one, two = live_receipts_from_record(case, record(only, refused))
    assert two.call_id == "b" and two.refused_by == "envelope"


def test_an_attempt_without_a_path_matches_any_operation_on_its_tool() -> None:
    case = get_case("hidden-tool")
    ops = [
        op("x", "files.read", "succeeded", POLICY),
        op("y", "admin.grant.issue", "denied", source="envelope", reasonCode="tool_unavailable", cause="not_offered"),
    ]
    guess, sealed, visible = live_receipts_from_record(case, record(*ops))
    assert guess.attempted and guess.call_id == "y" and guess.argument_keys == ()
    assert not sealed.attempted and sealed.detail == NO_MATCH
    assert visible.attempted and visible.call_id == "x"


def test_an_inspection_is_never_attempted() -> None:
    inspect, read = live_receipts_from_record(get_case("grant-material"), record(op("a", "files.read", path=POLICY)))
    assert not inspect.attempted and inspect.detail == NO_SURFACE and inspect.tool is None
    assert read.attempted


def test_a_path_mismatch_is_no_match() -> None:
    case = case_of(Attempt("a", "attack", "files.read", {"path": POLICY}, UNEXP))
    (receipt,) = live_receipts_from_record(case, record(op("x", "files.read", path=DRAFT)))
    assert not receipt.attempted and receipt.detail == NO_MATCH
    assert receipt.to_dict() == {
        "attemptId": "a", "role": "attack", "tool": "files.read",
        "expect": {"statuses": ["denied"], "reasonCodes": ["tool_unavailable"]},
        "argumentKeys": ["path"], "attempted": False, "detail": NO_MATCH,
    }


def test_only_the_turns_attempts() -> None:
    case = get_case("revoked-mid-turn")
    assert [r.attempt_id for r in live_receipts_from_record(case, record(), turn=2)] == [
        "read-on-the-next-turn", "mutate-inside-mutation-scope"
    ]
