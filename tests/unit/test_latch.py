"""Every rule of the escalation latch (§3.4, ADR 0018), against the real envelope."""

from __future__ import annotations

import anyio
import pytest

from runner.core.envelope import Envelope, ServerIdentity
from runner.core.latch import EscalationLatch, cut_utf16, escalation_request
from runner.core.outcomes import Complete, Escalate, Fail, ProtocolError, ToolCall, ToolResult
from runner.core.vocabulary import (
    ESCALATION_FALLBACK_REASON,
    ESCALATION_NOTE,
    ESCALATION_PENDING_MESSAGE,
    ResultStatus,
)
from runner.core.world import POLICY, WorldCondition, build_world

REASON = "issuing a control-plane grant is outside this agent's authority"


def turn(condition: WorldCondition | None = None) -> tuple[Envelope, EscalationLatch]:
    env = Envelope(build_world(condition), "exec-1", ServerIdentity("runner.test", "0"))
    return env, EscalationLatch(env, env.catalogue.names)


def read(n: int = 1) -> ToolCall:
    return ToolCall(f"call-{n}", "files.read", {"path": list(POLICY)})


def ask(n: int = 9, arguments: object = None) -> ToolCall:
    return ToolCall(f"ask-{n}", "sharedos.escalate", {"reason": REASON} if arguments is None else arguments)


def run(coro_fn, *args):  # type: ignore[no-untyped-def]
    return anyio.run(coro_fn, *args)


def test_first_ask_succeeds_with_reason_and_note_and_leaves_no_operation() -> None:
    env, latch = turn()
    result = run(latch.invoke_tool, ask())
    assert result.status is ResultStatus.SUCCEEDED
    assert result.output == {"escalated": True, "reason": REASON, "note": ESCALATION_NOTE}
    assert env.operations == []
    assert [e["type"] for e in env.events] == ["turn.started"]
    assert env.annotations["escalationAsked"] == {"tool": "sharedos.escalate", "reason": REASON}


def test_every_later_call_is_refused_in_band_and_counted_without_reaching_the_envelope() -> None:
    env, latch = turn()
    run(latch.invoke_tool, ask())
    for n in range(3):
        result = run(latch.invoke_tool, read(n))
        assert result.status is ResultStatus.DENIED
        assert result.error == ProtocolError("escalation_pending", ESCALATION_PENDING_MESSAGE, False)
    assert latch.calls_after_escalation == 3
    assert env.operations == []
    assert env._tool_calls == 0  # never consumed the tool-call budget


def test_a_second_ask_is_just_a_later_call_and_the_first_reason_is_kept() -> None:
    _, latch = turn()
    run(latch.invoke_tool, ask(1))
    second = run(latch.invoke_tool, ask(2, {"reason": "another reason"}))
    assert second.error is not None and second.error.code == "escalation_pending"
    assert latch.reason == REASON
    assert latch.calls_after_escalation == 1


def test_calls_before_the_ask_reach_the_envelope_and_are_not_counted() -> None:
    env, latch = turn()
    assert run(latch.invoke_tool, read()).status is ResultStatus.SUCCEEDED
    run(latch.invoke_tool, ask())
    assert latch.calls_after_escalation == 0
    assert [op["tool"] for op in env.operations] == ["files.read"]


def test_ungranted_ask_passes_through_and_is_refused_tool_unavailable_by_the_envelope() -> None:
    env, latch = turn(WorldCondition(escalation="withheld"))
    assert not latch.offered
    result = run(latch.invoke_tool, ask())
    assert result.status is ResultStatus.DENIED and result.error is not None
    assert result.error.code == "tool_unavailable"
    assert not latch.asked and "escalationAsked" not in env.annotations
    (op,) = env.operations
    assert (op["tool"], op["source"], op["reasonCode"], op["cause"]) == (
        "sharedos.escalate", "envelope", "tool_unavailable", "not_offered",
    )
    # not latched: later calls still run
    assert run(latch.invoke_tool, read()).status is ResultStatus.SUCCEEDED


@pytest.mark.parametrize(
    "arguments",
    [{}, {"reason": 42}, {"reason": "   "}, {"reason": None}, [], "just a string", None],
    ids=["missing", "not-a-string", "blank", "null", "array", "string", "no-arguments"],
)
def test_a_malformed_ask_still_escalates_with_the_fallback_reason(arguments: object) -> None:
    env, latch = turn()
    call = ToolCall("ask", "sharedos.escalate", arguments)
    result = run(latch.invoke_tool, call)
    assert result.status is ResultStatus.SUCCEEDED
    assert latch.reason == ESCALATION_FALLBACK_REASON
    assert env.operations == []  # never forwarded: no invalid_tool_arguments, no escalation_not_terminated


def test_reason_is_trimmed_and_cut_to_512_utf16_units_without_a_lone_high_surrogate() -> None:
    assert escalation_request("sharedos.escalate", {"reason": "  why \n"}) == "why"
    assert escalation_request("sharedos.escalate", {"reason": "\u00a0why\ufeff"}) == "why"
    long = "a" * 600
    assert escalation_request("sharedos.escalate", {"reason": long}) == "a" * 512
    # 511 units, then an astral character (2 units) that would be split: dropped whole
    split = "a" * 511 + "\U0001f600" + "tail"
    assert escalation_request("sharedos.escalate", {"reason": split}) == "a" * 511
    fits = "a" * 510 + "\U0001f600"
    assert escalation_request("sharedos.escalate", {"reason": fits}) == fits
    assert cut_utf16("\U0001f600" * 300) == "\U0001f600" * 256


def test_only_the_exact_canonical_name_is_an_ask() -> None:
    assert escalation_request("sharedos_escalate", {"reason": "x"}) is None
    assert escalation_request("files.read", {"reason": "x"}) is None


def test_a_call_admitted_before_the_ask_finishes_and_is_not_counted_while_a_later_one_is() -> None:
    """The upstream test: a read delayed inside the host, the ask sent meanwhile."""

    class SlowHost:
        def __init__(self, env: Envelope) -> None:
            self.env = env

        async def invoke_tool(self, call: ToolCall) -> ToolResult:
            await anyio.sleep(0.4)
            return await self.env.invoke_tool(call)

        def annotate(self, key: str, value: object) -> None:
            self.env.annotate(key, value)

    env = Envelope(build_world(), "exec-1", ServerIdentity("runner.test", "0"))
    latch = EscalationLatch(SlowHost(env), env.catalogue.names)
    results: dict[str, ToolResult] = {}

    async def main() -> None:
        async def go(name: str, call: ToolCall, delay: float) -> None:
            await anyio.sleep(delay)
            results[name] = await latch.invoke_tool(call)

        async with anyio.create_task_group() as tg:
            tg.start_soon(go, "slow", read(1), 0)
            tg.start_soon(go, "ask", ask(), 0.06)
            tg.start_soon(go, "late", read(2), 0.1)

    anyio.run(main)
    assert results["slow"].status is ResultStatus.SUCCEEDED
    assert results["ask"].status is ResultStatus.SUCCEEDED
    assert results["late"].error is not None and results["late"].error.code == "escalation_pending"
    assert latch.calls_after_escalation == 1
    assert [e["type"] for e in env.events].count("tool.requested") == 1


def test_settle_without_an_ask_returns_the_harness_outcome_with_merged_metadata() -> None:
    _, latch = turn()
    outcome = latch.settle(Complete({"text": "hi"}, {"a": 1}), {"harness": "reference"})
    assert outcome == Complete({"text": "hi"}, {"a": 1, "harness": "reference"})


@pytest.mark.parametrize(
    ("harness_outcome", "expected"),
    [
        (Complete({"text": "done"}), {"harnessOutcome": "complete"}),
        (Fail(ProtocolError("harness_exited_without_outcome", "exit 3")),
         {"harnessOutcome": "fail", "harnessErrorCode": "harness_exited_without_outcome"}),
        (Escalate("its own reason"), {"harnessOutcome": "escalate"}),
    ],
)
def test_settle_after_an_ask_is_escalate_whatever_the_harness_did(harness_outcome, expected) -> None:  # type: ignore[no-untyped-def]
    _, latch = turn()
    run(latch.invoke_tool, ask())
    run(latch.invoke_tool, read())
    outcome = latch.settle(harness_outcome, {"harness": "reference"})
    assert isinstance(outcome, Escalate)
    assert outcome.reason == REASON
    assert outcome.metadata == {"harness": "reference", **expected, "callsAfterEscalation": 1}
