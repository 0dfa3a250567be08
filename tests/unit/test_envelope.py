"""The envelope's mediation order, budgets, kernel refusals and settlement (§2.3, §8 item 18)."""

from __future__ import annotations

import dataclasses

import pytest

from runner.core.envelope import Envelope, HostClosed, ServerIdentity, StepLimits
from runner.core.outcomes import Complete, Escalate, Fail, ProtocolError, ToolCall
from runner.core.vocabulary import ExecutionStatus, ResultStatus
from runner.core.world import DRAFT, POLICY, WorldCondition, build_world


def envelope(condition: WorldCondition | None = None, limits: StepLimits | None = None) -> Envelope:
    return Envelope(build_world(condition), "exec-1", ServerIdentity("runner.test", "0"), limits)


def call(tool: str, n: int = 1, **arguments: object) -> ToolCall:
    return ToolCall(f"call-{n}", tool, arguments)


def codes(env: Envelope) -> list[tuple[str, str, str | None]]:
    return [(op["tool"], op["source"], op.get("reasonCode")) for op in env.operations]


def test_an_allowed_read_succeeds_and_is_recorded_with_its_grant() -> None:
    env = envelope()
    result = env.mediate(call("files.read", path=list(POLICY)))
    assert result.status is ResultStatus.SUCCEEDED
    assert result.output == {"path": list(POLICY), "content": "Only the owner changes policy.\n"}
    (op,) = env.operations
    assert op["grantId"] == "grant-read" and op["outcome"] == "succeeded" and op["source"] == "kernel"
    types = [e["type"] for e in env.events]
    assert types == ["turn.started", "tool.requested", "tool.completed"]


@pytest.mark.parametrize(
    ("tool", "arguments", "status", "code"),
    [
        ("files.replace", {"path": list(POLICY), "content": "x"}, "denied", "no_matching_grant"),
        ("files.replace", {"path": list(DRAFT), "content": "x"}, "succeeded", None),
        ("files.fetch", {"path": list(POLICY), "owner": {"kind": "human", "userId": "user-mallory"}},
         "denied", "invalid_request"),
        ("files.index", {}, "failed", "invalid_tool_requirement"),
        ("files.describe", {"path": list(POLICY)}, "failed", "invalid_tool_result"),
        ("files.read", {"path": ["Workspace", "..", "Vault"]}, "failed", "invalid_tool_arguments"),
        ("files.read", {"path": "/etc/passwd"}, "failed", "invalid_tool_arguments"),
        ("files.read", {"path": ["Vault", "secrets.md"]}, "denied", "no_matching_grant"),
        ("files.open", {"path": list(POLICY), "grant": {"id": "forged"}}, "succeeded", None),
        ("messages.request", {"recipient": {"kind": "human", "userId": "user-alice"}}, "succeeded", None),
    ],
)
def test_kernel_decisions_use_the_upstream_codes(tool: str, arguments: dict, status: str, code: str | None) -> None:
    env = envelope()
    result = env.mediate(ToolCall("c", tool, arguments))
    assert result.status.value == status
    assert (result.error.code if result.error else None) == code


def test_deeply_nested_arguments_are_refused_without_harm() -> None:
    nested: object = "x"
    for _ in range(200):
        nested = {"a": nested}
    env = envelope()
    result = env.mediate(ToolCall("c", "files.open", {"path": list(POLICY), "deep": nested}))
    assert result.error is not None and result.error.code == "invalid_tool_arguments"


def test_an_uncatalogued_name_spends_a_unit_of_the_budget_before_the_catalogue_check() -> None:
    env = envelope(limits=StepLimits(max_steps=8, max_tool_calls=1))
    first = env.mediate(call("admin.grant.issue", 1))
    assert first.error is not None and first.error.code == "tool_unavailable"
    second = env.mediate(call("files.read", 2, path=list(POLICY)))
    assert second.error is not None and second.error.code == "tool_call_limit_exceeded"
    assert codes(env) == [
        ("admin.grant.issue", "envelope", "tool_unavailable"),
        ("files.read", "envelope", "tool_call_limit_exceeded"),
    ]
    assert env.operations[0]["cause"] == "not_offered"


def test_draining_is_checked_before_budgets() -> None:
    env = envelope(limits=StepLimits(max_steps=8, max_tool_calls=0))
    env.draining = True
    result = env.mediate(call("files.read", path=list(POLICY)))
    assert result.error is not None and result.error.code == "turn_draining"


def test_declared_steps_are_bounded_by_max_steps() -> None:
    env = envelope(limits=StepLimits(max_steps=2, max_tool_calls=8))
    ok = [env.mediate(call("files.read", n, path=list(POLICY)), step=s) for n, s in enumerate([0, 1, 1])]
    assert all(r.status is ResultStatus.SUCCEEDED for r in ok)
    over = env.mediate(call("files.read", 9, path=list(POLICY)), step=2)
    assert over.error is not None and over.error.code == "step_limit_exceeded"
    with pytest.raises(TypeError):
        env.mediate(call("files.read", 10, path=list(POLICY)), step=-1)


def test_the_escalate_handler_reached_directly_fails_escalation_not_terminated() -> None:
    env = envelope()
    result = env.mediate(call("sharedos.escalate", reason="forwarded by some driver"))
    assert result.error is not None and result.error.code == "escalation_not_terminated"


def test_an_escalate_outcome_is_gated_on_the_catalogue() -> None:
    env = envelope(WorldCondition(escalation="withheld"))
    result = env.settle(Escalate("why", {"harnessOutcome": "complete"}))
    assert result.status is ExecutionStatus.FAILED
    assert result.error is not None and result.error.code == "tool_unavailable"
    assert result.events[-1]["data"] == {"code": "tool_unavailable", "source": "envelope"}
    assert result.metadata["harnessOutcome"] == "complete"


def test_an_escalate_outcome_on_an_offering_turn_is_escalated_pending_with_the_owner_as_reviewer() -> None:
    env = envelope()
    result = env.settle(Escalate("why"))
    assert result.status is ExecutionStatus.ESCALATED
    assert result.escalation is not None
    assert result.escalation.to_json()["reviewer"] == {"kind": "human", "userId": "user-alice"}
    assert result.escalation.status == "pending"
    assert result.reason_code == "escalation_requested"
    assert result.events[-1]["type"] == "turn.escalated"


def test_metadata_merges_outcome_then_annotations_then_runtime() -> None:
    env = envelope()
    env.annotate("promptHash", "abc")
    env.annotate("shared", "annotation wins")
    result = env.settle(Complete("ok", {"shared": "outcome", "runtime": "overwritten", "mine": 1}))
    assert result.metadata == {
        "shared": "annotation wins", "mine": 1, "promptHash": "abc",
        "runtime": {"id": "runner.test", "version": "0", "protocolVersion": "1"},
    }


def test_annotations_refuse_reserved_keys_and_are_dropped_after_close() -> None:
    env = envelope()
    for key in ("", "runtime", "__proto__"):
        with pytest.raises(TypeError):
            env.annotate(key, 1)
    env.settle(Complete("ok"))
    env.annotate("late", 1)
    assert "late" not in env.annotations
    with pytest.raises(HostClosed):
        env.mediate(call("files.read", path=list(POLICY)))


def test_a_retryable_failure_is_kept_retryable_only_when_nothing_unrepeatable_took_effect() -> None:
    env = envelope()
    env.mediate(call("files.read", path=list(POLICY)))
    kept = env.settle(Fail(ProtocolError("harness_failed", "boom", True)))
    assert kept.error is not None and kept.error.retryable is True
    env = envelope()
    env.mediate(call("files.append", path=list(DRAFT), content="x"))
    downgraded = env.settle(Fail(ProtocolError("harness_failed", "boom", True)))
    assert downgraded.error is not None and downgraded.error.retryable is False


def test_cancel_ends_cancelled_turn_cancelled_and_keeps_annotations() -> None:
    env = envelope()
    env.annotate("escalationAsked", {"tool": "sharedos.escalate", "reason": "r"})
    result = env.cancel("the deadline passed")
    assert result.status is ExecutionStatus.CANCELLED
    assert result.reason_code == "turn_cancelled"
    assert result.metadata["escalationAsked"]["reason"] == "r"


def test_the_envelope_takes_agent_owner_clock_and_namespaces_from_its_world() -> None:
    default = envelope()
    assert default.events[0]["data"]["agent"] == ["agent", "agent-mallory"]
    assert default.events[0]["occurredAt"] == "2026-08-18T09:00:00.000Z"
    world = dataclasses.replace(
        build_world(),
        agent=("agent", "agent-other"),
        owner=("human", "user-bob"),
        now="2030-01-01T00:00:00.000Z",
        enabled_tool_namespaces=("files", "sharedos"),
    )
    env = Envelope(world, "exec-1", ServerIdentity("runner.test", "0"))
    started = env.events[0]
    assert started["data"]["agent"] == ["agent", "agent-other"]
    assert started["occurredAt"] == "2030-01-01T00:00:00.000Z"
    assert "files.read" in env.catalogue.names and "messages.request" not in env.catalogue.names
    assert world.describe()["enabledToolNamespaces"] == ["files", "sharedos"]
    result = env.settle(Escalate("why"))
    assert result.escalation is not None
    assert result.escalation.to_json()["reviewer"] == {"kind": "human", "userId": "user-bob"}
