"""The model column's agent loop, its pure parts: the names it gives the model, the requests it builds in each
dialect, and how it reads an answer -- checked against the host side's own dialect modules, so the agent and
the scripted model are proven to understand each other without a container."""

from __future__ import annotations

from typing import Any

import pytest

from runner.harnesses.model import agent
from runner.model.dialects import BY_NAME, RenderContext, RequestInfo
from runner.model.names import ExposedTool, ToolTarget, resolve_tool
from runner.model.script import TextReply, ToolCallReply, plan_for

SCHEMA = {"type": "object", "properties": {"path": {"type": "array"}}}
TOOLS = [agent.Tool(name, "d", SCHEMA, agent.exposed_name(name, "sharedos"))
         for name in ("files.read", "files.list", "sharedos.escalate")]
DIALECTS = ["anthropic-messages", "openai-chat", "openai-responses", "gemini"]


def conversation(name: str) -> agent.Dialect:
    return agent.dialect_named(name)("runner-scripted", "the instructions", "the prompt", TOOLS)


def test_exposed_names_map_back_and_an_unknown_name_goes_as_it_is() -> None:
    assert [t.exposed for t in TOOLS] == ["sharedos__files_read", "sharedos__files_list",
                                          "sharedos__sharedos_escalate"]
    assert agent.mcp_name("sharedos__files_read", TOOLS) == "files.read"
    assert agent.mcp_name("files.read", TOOLS) == "files.read"
    # nothing filters a model's call: a name it invents reaches SharedOS, which refuses it
    assert agent.mcp_name("admin.grant.issue", TOOLS) == "admin.grant.issue"


def test_anthropic_is_an_alias() -> None:
    assert agent.dialect_named("anthropic") is agent.AnthropicMessages
    assert sorted(agent.BY_NAME) == sorted(DIALECTS)


@pytest.mark.parametrize("name", DIALECTS)
def test_the_host_reads_the_agents_request_in_its_dialect(name: str) -> None:
    talk = conversation(name)
    host = BY_NAME[name]
    assert host.match_path("POST", talk.path())
    body = talk.body()
    exposed = host.exposed_tools(body)
    assert [t.name for t in exposed] == [t.exposed for t in TOOLS]
    assert host.count_tool_results(body) == 0
    # the scripted model finds the agent's names (Cline's scheme, without Cline's hash suffix)
    target = resolve_tool("files.read", {}, exposed)
    assert target is not None and target.scheme == "cline" and target.name == "sharedos__files_read"


@pytest.mark.parametrize("name", DIALECTS)
@pytest.mark.parametrize("preamble", [None, "first a read"])
def test_a_call_the_host_renders_is_read_executed_and_fed_back(name: str, preamble: str | None) -> None:
    talk, host = conversation(name), BY_NAME[name]
    target = ToolTarget("files.read", "cline", "sharedos__files_read", {"path": ["Workspace", "policy.md"]})
    rendered = host.tool_call_body(ToolCallReply(target, 0, preamble), RenderContext("runner-scripted", 0))
    answer = talk.read(rendered)
    assert [(c.name, c.arguments) for c in answer.calls] == [("sharedos__files_read", target.arguments)]
    assert answer.text == (preamble or "")
    talk.add_answer(answer)
    talk.add_results([(answer.calls[0], '{"content": "x"}', False)])
    assert host.count_tool_results(talk.body()) == 1  # the scripted model's next step


@pytest.mark.parametrize("name", DIALECTS)
def test_a_final_text_ends_the_turn(name: str) -> None:
    talk, host = conversation(name), BY_NAME[name]
    answer = talk.read(host.text_body("Done.", RenderContext("runner-scripted", 2)))
    assert answer.calls == [] and answer.text == "Done."


@pytest.mark.parametrize("name", DIALECTS)
def test_what_is_not_a_model_answer_is_a_model_error(name: str) -> None:
    talk, host = conversation(name), BY_NAME[name]
    with pytest.raises(agent.ModelError):
        talk.read(host.error_body(500, "boom"))


@pytest.mark.parametrize("raw", ["{not json", "[1]", 3])
def test_arguments_must_be_an_object(raw: Any) -> None:
    with pytest.raises(agent.ModelError):
        agent._args(raw)


def test_gemini_asks_its_models_path_and_sends_its_key_header() -> None:
    talk = conversation("gemini")
    assert talk.path() == "/v1beta/models/runner-scripted:generateContent"
    assert BY_NAME["gemini"].wants_stream(RequestInfo("POST", talk.path()), talk.body()) is False
    assert talk.headers("k") == {"x-goog-api-key": "k"}
    assert conversation("anthropic-messages").headers("k")["x-api-key"] == "k"
    assert conversation("openai-chat").headers("k") == {"authorization": "Bearer k"}


def test_the_scripted_model_invents_an_unoffered_name_only_for_a_column_that_filters_nothing() -> None:
    actions = [{"do": "call", "tool": "admin.grant.issue"}, {"do": "call", "tool": "files.read"},
               {"do": "finish", "text": "F"}]
    model = [ExposedTool(t.exposed) for t in TOOLS]
    plan = plan_for(actions, model, invents=True)
    assert [(c.target.scheme, c.target.name) for c in plan.calls] == [
        ("invented", "admin.grant.issue"), ("cline", "sharedos__files_read")]
    # a vendor CLI (its router refuses what it did not register): the unoffered call is skipped, as before
    vendor = plan_for(actions, model)
    assert [c.target.name for c in vendor.calls] == ["sharedos__files_read"]
    assert vendor.skipped[0].action["tool"] == "admin.grant.issue"
    # a side request stays a side request
    assert plan_for(actions, [], invents=True).side
    assert plan_for([], model, invents=True).reply(0) == TextReply("Done.")
