"""The scripted player: the step rule, skipped calls, terminals, side requests."""

from __future__ import annotations

from typing import Any

import pytest

from runner.conformance.behaviours import FINAL_TEXT, PERSISTENT_EXTRA_CALLS, Behaviour, actions_for
from runner.conformance.cases import get_case
from runner.harnesses.droid.naming import NAMING as DROID
from runner.model.names import ExposedTool
from runner.model.script import (
    DEFAULT_FINAL_TEXT,
    SIDE_TEXT,
    ScriptError,
    StallReply,
    TextReply,
    ToolCallReply,
    decide,
    normalise_actions,
    plan_for,
)

CLAUDE = [ExposedTool(f"mcp__sharedos__{n}") for n in ("files_read", "files_list", "sharedos_escalate")]


def call(tool: str, **arguments: object) -> dict[str, Any]:
    return {"do": "call", "tool": tool, "arguments": arguments}


def names(plan_calls: object) -> list[str]:
    return [c.target.canonical for c in plan_calls]  # type: ignore[attr-defined]


def test_step_indexes_playable_calls_then_finish() -> None:
    actions = [call("files.read", path=["a"]), call("sharedos.escalate", reason="r"), {"do": "finish", "text": "F"}]
    replies = [decide(actions, CLAUDE, step).reply for step in range(4)]
    assert [r.target.canonical for r in replies[:2] if isinstance(r, ToolCallReply)] == ["files.read",
                                                                                        "sharedos.escalate"]
    assert replies[2] == TextReply("F") and replies[3] == TextReply("F")
    first = replies[0]
    assert isinstance(first, ToolCallReply)
    assert first.step == 0 and first.call_id == "call_runner_0"
    assert first.target.arguments == {"path": ["a"]}


def test_unoffered_call_is_skipped_before_indexing() -> None:
    # escalation case, uncatalogued attempt issued: admin.grant.issue is not among the CLI's tools
    case = get_case("escalation")
    actions = [a.to_json() for a in actions_for(case, Behaviour.COOPERATIVE, issue_uncatalogued=True)]
    assert actions[0]["tool"] == "admin.grant.issue"
    plan = plan_for(actions, CLAUDE)
    assert names(plan.calls) == ["files.read", "sharedos.escalate"]
    assert len(plan.skipped) == 1 and plan.skipped[0].index == 0
    assert "admin.grant.issue" in plan.skipped[0].reason
    assert plan.reply(0).target.canonical == "files.read"  # type: ignore[union-attr]
    assert plan.reply(2) == TextReply(FINAL_TEXT)


def test_persistent_plays_every_call_after_the_ask() -> None:
    actions = actions_for(get_case("escalation"), Behaviour.PERSISTENT, issue_uncatalogued=False)
    plan = plan_for(normalise_actions(actions), CLAUDE)
    assert names(plan.calls) == ["files.read", "sharedos.escalate"] + ["files.read"] * PERSISTENT_EXTRA_CALLS
    assert plan.terminal == TextReply(FINAL_TEXT)


def test_hang_after_the_last_call_stalls() -> None:
    actions = normalise_actions(actions_for(get_case("escalation"), Behaviour.HANG_AFTER_ASK, issue_uncatalogued=False))
    plan = plan_for(actions, CLAUDE)
    assert names(plan.calls) == ["files.read", "sharedos.escalate"]
    assert plan.reply(2) == StallReply() and plan.reply(7) == StallReply()


def test_hang_after_a_skipped_call_still_stalls() -> None:
    actions = [call("files.read"), call("sharedos.escalate"), {"do": "hang"}, {"do": "finish", "text": "x"}]
    plan = plan_for(actions, CLAUDE[:1])  # the escalate tool is filtered by the CLI
    assert names(plan.calls) == ["files.read"]
    assert plan.reply(1) == StallReply()


def test_actions_after_the_terminal_are_never_played() -> None:
    actions = [call("files.read"), {"do": "hang"}, call("files.list")]
    plan = plan_for(actions, CLAUDE)
    assert names(plan.calls) == ["files.read"] and plan.terminal == StallReply()


def test_exit_and_flood_are_skipped_with_a_reason() -> None:
    actions = normalise_actions(
        actions_for(get_case("escalation"), Behaviour.CRASH_AFTER_ASK, issue_uncatalogued=False)
    )
    plan = plan_for(actions, CLAUDE)
    assert [s.action["do"] for s in plan.skipped] == ["exit"]
    assert plan.terminal == TextReply(FINAL_TEXT)


def test_say_is_a_preamble_to_the_next_call_or_the_final_text() -> None:
    actions = [{"do": "say", "text": "first"}, call("files.read"), {"do": "say", "text": "last"},
               {"do": "finish", "text": "F"}]
    plan = plan_for(actions, CLAUDE)
    assert plan.calls[0].preamble == "first"
    assert plan.terminal == TextReply("last\n\nF")


def test_no_finish_gives_the_default_text() -> None:
    assert plan_for([call("files.read")], CLAUDE).terminal == TextReply(DEFAULT_FINAL_TEXT)
    assert plan_for([], CLAUDE).reply(0) == TextReply(DEFAULT_FINAL_TEXT)


def test_side_request_gets_side_text_whatever_the_step() -> None:
    actions = [call("files.read"), {"do": "finish", "text": "F"}]
    for exposed in ([], [ExposedTool("read_file")]):
        plan = plan_for(actions, exposed)
        assert plan.side
        assert plan.reply(0) == TextReply(SIDE_TEXT, side=True)
        assert plan.reply(3) == TextReply(SIDE_TEXT, side=True)


def test_our_tools_but_none_playable_is_not_a_side_request() -> None:
    plan = plan_for([call("admin.grant.issue"), {"do": "finish", "text": "F"}], CLAUDE)
    assert not plan.side and plan.calls == () and plan.reply(0) == TextReply("F")


def test_decision_log_explains_itself() -> None:
    actions = [call("admin.grant.issue"), call("files.read"), {"do": "finish", "text": "F"}]
    decision = decide(actions, CLAUDE, 0).to_json()
    assert decision["reply"] == "call" and decision["call"]["scheme"] == "claude"
    assert decision["skipped"][0]["action"]["tool"] == "admin.grant.issue"
    assert decide(actions, [], 0).to_json()["reply"] == "side"
    assert decide([{"do": "hang"}], CLAUDE, 0).to_json()["reply"] == "stall"


@pytest.mark.parametrize(
    "bad",
    [[{"do": "dance"}], [{"do": "call"}], [{"do": "call", "tool": "x", "arguments": [1]}], ["call"],
     [{"do": "finish", "text": 3}]],
)
def test_bad_actions_are_refused(bad: list[object]) -> None:
    with pytest.raises(ScriptError):
        normalise_actions(bad)


def test_action_objects_are_accepted() -> None:
    actions = actions_for(get_case("escalation-refused"), Behaviour.COOPERATIVE, issue_uncatalogued=False)
    assert normalise_actions(actions) == [a.to_json() for a in actions]


def test_droid_loads_its_deferred_tools_first_in_every_request() -> None:
    """Droid 0.225.2: the first request offers only ToolSearch; once it ran, the tools are offered as
    ``sharedos___<tool>`` and the ToolSearch result counts as step 0, so the search stays the first call."""
    actions = [call("files.read", path=["a"]), call("sharedos.escalate", reason="r"), {"do": "finish", "text": "F"}]
    before = [ExposedTool("ToolSearch")]
    after = [ExposedTool(n) for n in ("ToolSearch", "sharedos___files_read", "sharedos___sharedos_escalate")]
    first = decide(actions, before, 0, naming=DROID)
    assert isinstance(first.reply, ToolCallReply) and first.reply.target.name == "ToolSearch"
    assert first.reply.target.arguments == {"query": "select:sharedos___files_read,sharedos___sharedos_escalate"}
    assert not first.plan.skipped and not first.plan.side
    replies = [decide(actions, after, step, naming=DROID).reply for step in (1, 2, 3)]
    assert [r.target.name for r in replies[:2] if isinstance(r, ToolCallReply)] == [
        "sharedos___files_read", "sharedos___sharedos_escalate"]
    assert replies[2] == TextReply("F")
