"""Each dialect on requests shaped like the ones ``reference/vendor-clis.md`` measured."""

from __future__ import annotations

import json
from typing import Any

import pytest

from runner.core.usage import Usage
from runner.model.dialects import (
    ANTHROPIC,
    GEMINI,
    OPENAI_CHAT,
    OPENAI_RESPONSES,
    Dialect,
    RenderContext,
    RequestInfo,
    dialect_for,
    guess_dialect,
)
from runner.model.dialects.gemini import minimal_instance, parse_path
from runner.model.dialects.openai_chat import REASONING_TEXT
from runner.model.names import ExposedTool, ToolTarget
from runner.model.script import ToolCallReply, plan_for
from tests.simulated_clis import SimulatedCli, parse_answer

ARGS = {"path": ["Workspace", "policy.md"]}
USAGE = Usage(input=100, cached_input=40, output=10, reasoning=3)
CTX = RenderContext(model="fake-model", step=1, usage=USAGE, created=1)
INFO = RequestInfo("POST", "/v1/x")


def call_reply(name: str, namespace: str | None = None, preamble: str | None = None) -> ToolCallReply:
    return ToolCallReply(ToolTarget("files.read", "x", name, dict(ARGS), namespace), 1, preamble)


def payloads(events: list[Any]) -> list[Any]:
    out = []
    for event in events:
        raw = event.encode().decode()
        assert raw.endswith("\n\n")
        if event.data != "[DONE]":
            out.append(json.loads(event.data))
    return out


# --- detection ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "dialect"),
    [
        ("POST", "/v1/responses", OPENAI_RESPONSES),
        ("POST", "/responses", OPENAI_RESPONSES),
        ("POST", "/v1/chat/completions", OPENAI_CHAT),
        ("POST", "/compatible-mode/v1/chat/completions", OPENAI_CHAT),
        ("GET", "/v1/models", OPENAI_CHAT),
        ("POST", "/v1/messages", ANTHROPIC),
        ("POST", "/v1/messages/count_tokens", ANTHROPIC),
        ("POST", "/v1beta/models/fake-model:streamGenerateContent", GEMINI),
        ("POST", "/v1beta/models/gemini-2.5-pro:generateContent", GEMINI),
        ("POST", "/v1beta/models/m:countTokens", GEMINI),
        ("GET", "/v1/responses", None),
        ("POST", "/v1/completions", None),
        ("HEAD", "/api/hello", None),
    ],
)
def test_dialect_for_path(method: str, path: str, dialect: Dialect | None) -> None:
    assert dialect_for(method, path) is dialect


@pytest.mark.parametrize("cli", ["codex", "claude", "gemini", "qwen", "opencode", "pi-proxy", "dsh"])
def test_shapes_are_recognised(cli: str) -> None:
    sim = SimulatedCli(cli, ["files.read"])
    body = sim.request()
    assert guess_dialect(body) is not None
    assert guess_dialect(body).name == sim.dialect  # type: ignore[union-attr]
    assert dialect_for("POST", sim.path.split("?")[0]).looks_like(body)  # type: ignore[union-attr]


def test_gemini_path() -> None:
    assert parse_path("/v1beta/models/fake-model:streamGenerateContent") == ("fake-model", "streamGenerateContent")
    assert parse_path("/v1beta/models/fake-model") is None


# --- OpenAI Responses (Codex) ---------------------------------------------------------------------

CODEX_REQUEST = {
    "model": "fake-model", "stream": True, "tool_choice": "auto", "parallel_tool_calls": True,
    "tools": [
        {"type": "function", "name": "exec_command", "parameters": {}},
        {"type": "namespace", "name": "mcp__sharedos", "description": "Tools in the mcp__sharedos namespace.",
         "tools": [{"type": "function", "name": "files_read", "strict": False, "parameters": {}},
                   {"type": "function", "name": "sharedos_escalate", "strict": False, "parameters": {}}]},
        {"type": "web_search"},
    ],
    "input": [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "go"}]},
        {"type": "function_call", "name": "files_read", "namespace": "mcp__sharedos", "arguments": "{}",
         "call_id": "call_1"},
        {"type": "function_call_output", "call_id": "call_1", "output": [
            {"type": "input_text", "text": "Wall time: 0.0092 seconds\nOutput:"},
            {"type": "input_text", "text": "echo: hello from turn 1"}]},
        {"type": "function_call", "name": "sharedos_escalate", "namespace": "mcp__sharedos", "arguments": "{}",
         "call_id": "call_2"},
        {"type": "function_call_output", "call_id": "call_2", "output": "denied: escalation_pending"},
    ],
}


def test_responses_reads_codex_request() -> None:
    assert OPENAI_RESPONSES.count_tool_results(CODEX_REQUEST) == 2
    assert OPENAI_RESPONSES.exposed_tools(CODEX_REQUEST) == [
        ExposedTool("exec_command"), ExposedTool("files_read", "mcp__sharedos"),
        ExposedTool("sharedos_escalate", "mcp__sharedos"),
    ]
    assert OPENAI_RESPONSES.wants_stream(INFO, CODEX_REQUEST)
    plan = plan_for([{"do": "call", "tool": "files.read"}], OPENAI_RESPONSES.exposed_tools(CODEX_REQUEST))
    assert plan.calls[0].target.namespace == "mcp__sharedos" and plan.calls[0].target.name == "files_read"


def test_responses_call_events() -> None:
    events = OPENAI_RESPONSES.tool_call_events(call_reply("files_read", "mcp__sharedos"), CTX)
    assert [e.event for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added",
        "response.function_call_arguments.delta", "response.function_call_arguments.done",
        "response.output_item.done", "response.completed",
    ]
    data = payloads(events)
    assert [d["type"] for d in data] == [e.event for e in events]
    assert [d["sequence_number"] for d in data] == list(range(len(data)))
    item = data[5]["item"]
    assert item == {"type": "function_call", "id": "fc_runner_1", "call_id": "call_runner_1", "name": "files_read",
                    "namespace": "mcp__sharedos", "arguments": json.dumps(ARGS, separators=(",", ":")),
                    "status": "completed"}
    usage = data[-1]["response"]["usage"]
    assert usage == {"input_tokens": 100, "input_tokens_details": {"cached_tokens": 40}, "output_tokens": 10,
                     "output_tokens_details": {"reasoning_tokens": 3}, "total_tokens": 110}
    assert data[-1]["response"]["output"] == [item]


def test_responses_text_events_and_preamble() -> None:
    events = OPENAI_RESPONSES.text_events("FINAL: done", CTX)
    assert [e.event for e in events] == [
        "response.created", "response.in_progress", "response.output_item.added", "response.content_part.added",
        "response.output_text.delta", "response.output_text.done", "response.content_part.done",
        "response.output_item.done", "response.completed",
    ]
    item = payloads(events)[7]["item"]
    assert item["type"] == "message" and item["content"] == [
        {"type": "output_text", "text": "FINAL: done", "annotations": []}]
    answer = parse_answer("openai-responses", events=payloads(
        OPENAI_RESPONSES.tool_call_events(call_reply("files_read", "mcp__sharedos", "thinking aloud"), CTX)))
    assert answer.text == "thinking aloud" and answer.calls[0].namespace == "mcp__sharedos"


def test_responses_non_stream() -> None:
    body = OPENAI_RESPONSES.tool_call_body(call_reply("files_read", "mcp__sharedos"), CTX)
    assert body["object"] == "response" and body["status"] == "completed"
    assert parse_answer("openai-responses", body=body).calls[0].arguments == ARGS
    assert parse_answer("openai-responses", body=OPENAI_RESPONSES.text_body("T", CTX)).text == "T"


# --- OpenAI Chat (Pi, Qwen, opencode) -------------------------------------------------------------


def chat_request(tools: list[str], results: int = 0, **extra: Any) -> dict[str, Any]:
    messages: list[Any] = [{"role": "system", "content": "sys"}, {"role": "user", "content": "go"}]
    for i in range(results):
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": f"call_{i}", "type": "function", "function": {"name": tools[0], "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"call_{i}", "content": "Error: denied: escalation_pending"},
        ]
    return {"model": "fake-model", "stream": True, "messages": messages,
            "tools": [{"type": "function", "function": {"name": n, "parameters": {}}} for n in tools], **extra}


@pytest.mark.parametrize(
    ("tools", "scheme", "name", "arguments"),
    [
        (["read", "bash", "mcpScript", "mcp", "mcp__sharedos"], "pi-proxy", "mcp",
         {"tool": "sharedos_files_read", "args": ARGS}),
        (["read", "sharedos_files_read", "mcp"], "server-prefix", "sharedos_files_read", ARGS),
        (["read_file", "tool_search", "tool_call"], "qwen-proxy", "tool_call",
         {"name": "mcp__sharedos__files_read", "arguments": ARGS}),
        (["tool_search", "tool_call", "mcp__sharedos__files_read"], "claude", "mcp__sharedos__files_read", ARGS),
        (["sharedos_files_read", "list_mcp_resources", "read_mcp_resource"], "server-prefix", "sharedos_files_read",
         ARGS),
    ],
)
def test_chat_name_mapping(tools: list[str], scheme: str, name: str, arguments: dict[str, Any]) -> None:
    request = chat_request(tools, results=2)
    assert OPENAI_CHAT.count_tool_results(request) == 2
    plan = plan_for([{"do": "call", "tool": "files.read", "arguments": ARGS}], OPENAI_CHAT.exposed_tools(request))
    target = plan.calls[0].target
    assert (target.scheme, target.name, target.arguments) == (scheme, name, arguments)


def test_chat_call_events() -> None:
    ctx = RenderContext(model="m", step=1, usage=USAGE, created=1,
                        body=chat_request(["x"], stream_options={"include_usage": True}))
    events = OPENAI_CHAT.tool_call_events(call_reply("sharedos_files_read"), ctx)
    assert all(e.event is None for e in events)
    assert events[-1].data == "[DONE]"
    data = payloads(events)
    assert [d["object"] for d in data] == ["chat.completion.chunk"] * 4
    first = data[0]["choices"][0]["delta"]
    assert first["role"] == "assistant" and first["tool_calls"][0] == {
        "index": 0, "id": "call_runner_1", "type": "function",
        "function": {"name": "sharedos_files_read", "arguments": ""}}
    assert json.loads(data[1]["choices"][0]["delta"]["tool_calls"][0]["function"]["arguments"]) == ARGS
    assert data[2]["choices"][0]["finish_reason"] == "tool_calls" and "usage" not in data[2]
    assert data[3]["choices"] == [] and data[3]["usage"] == {
        "prompt_tokens": 100, "completion_tokens": 10, "total_tokens": 110,
        "prompt_tokens_details": {"cached_tokens": 40}, "completion_tokens_details": {"reasoning_tokens": 3}}
    assert parse_answer("openai-chat", events=data).calls[0].arguments == ARGS


def test_chat_text_events_not_asked_for_usage_carry_it_on_the_finishing_chunk() -> None:
    ctx = RenderContext(model="m", step=3, usage=USAGE, body=chat_request(["x"]))
    data = payloads(OPENAI_CHAT.text_events("FINAL", ctx))
    assert [d["choices"][0]["finish_reason"] for d in data] == [None, None, "stop"]
    assert ["usage" in d for d in data] == [False, False, True]  # DeepSeek's shape: no chunk of its own
    assert data[-1]["usage"]["completion_tokens"] == 10
    assert parse_answer("openai-chat", events=data).text == "FINAL"


def test_chat_preamble_and_non_stream() -> None:
    ctx = RenderContext(model="m", step=1, body={})
    events = OPENAI_CHAT.tool_call_events(call_reply("n", None, "hm"), ctx)
    answer = parse_answer("openai-chat", events=payloads(events))
    assert answer.text == "hm" and answer.calls[0].name == "n"
    body = OPENAI_CHAT.tool_call_body(call_reply("n"), ctx)
    assert body["object"] == "chat.completion" and body["choices"][0]["finish_reason"] == "tool_calls"
    assert parse_answer("openai-chat", body=body).calls[0].arguments == ARGS
    assert parse_answer("openai-chat", body=OPENAI_CHAT.text_body("T", ctx)).text == "T"


def test_chat_thinking_request_gets_reasoning_content_first() -> None:
    # dsh 0.1.0-rc.8: thinking on, always streamed, usage requested; its tools carry a 12-hex suffix
    sim = SimulatedCli("dsh", ["files.read", "sharedos.escalate"])
    body = sim.request()
    assert OPENAI_CHAT.thinking(body) and body["stream"] is True
    plan = plan_for([{"do": "call", "tool": "files.read", "arguments": ARGS}], OPENAI_CHAT.exposed_tools(body))
    target = plan.calls[0].target
    assert (target.scheme, target.name) == ("claude+hash", sim.tool_names()[0])
    assert target.name.startswith("mcp__sharedos__files_read_") and len(target.name.rsplit("_", 1)[1]) == 12
    ctx = RenderContext(model="deepseek-v4-flash", step=0, created=1, body=body)
    data = payloads(OPENAI_CHAT.tool_call_events(call_reply(target.name), ctx))
    first = data[0]["choices"][0]["delta"]
    assert first == {"role": "assistant", "content": None, "reasoning_content": REASONING_TEXT}
    answer = parse_answer("openai-chat", events=data)
    assert answer.reasoning == REASONING_TEXT and answer.calls[0].name == target.name and answer.text == ""
    assert data[-1]["choices"] == [] and "usage" in data[-1]  # include_usage
    text = parse_answer("openai-chat", events=payloads(OPENAI_CHAT.text_events("FINAL", ctx)))
    assert (text.text, text.reasoning) == ("FINAL", REASONING_TEXT)
    assert OPENAI_CHAT.text_body("T", ctx)["choices"][0]["message"]["reasoning_content"] == REASONING_TEXT


def test_chat_without_thinking_has_no_reasoning_content() -> None:
    for body in (chat_request(["x"]), {"thinking": {"type": "disabled"}}, {"thinking": "enabled"}):
        ctx = RenderContext(model="m", step=0, created=1, body=body)
        events = OPENAI_CHAT.tool_call_events(call_reply("x"), ctx) + OPENAI_CHAT.text_events("T", ctx)
        assert "reasoning_content" not in json.dumps(payloads(events))
        assert "reasoning_content" not in json.dumps(OPENAI_CHAT.text_body("T", ctx))


def test_chat_dsh_title_request_is_a_side_request() -> None:
    sim = SimulatedCli("dsh", ["files.read", "sharedos.escalate"])
    title = sim.side_request()
    assert title["thinking"] == {"type": "disabled"} and title["max_tokens"] == 64 and "tools" not in title
    assert plan_for([{"do": "call", "tool": "files.read"}], OPENAI_CHAT.exposed_tools(title)).side


def test_chat_models_list() -> None:
    rendered = OPENAI_CHAT.auxiliary(RequestInfo("GET", "/v1/models"), None, "runner-scripted")
    assert rendered is not None and rendered.body["data"][0]["id"] == "runner-scripted"


# --- Anthropic (Claude Code) ----------------------------------------------------------------------

CLAUDE_REQUEST = {
    "model": "claude-opus-5-5", "max_tokens": 128000, "stream": True,
    "system": [{"type": "text", "text": "You are Claude Code."}],
    "tools": [
        {"name": "Bash", "input_schema": {}},
        {"name": "mcp__sharedos__files_read", "description": "Read.", "input_schema": {}},
        {"name": "mcp__sharedos__sharedos_escalate", "input_schema": {}},
        {"name": "DeferredToolPlaceholder", "defer_loading": True, "input_schema": {}},
    ],
    "messages": [
        {"role": "user", "content": [{"type": "text", "text": "go"}]},
        {"role": "system", "content": "environment and deferred tools"},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "mcp__sharedos__files_read",
                                           "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": [{"type": "text", "text": "echo: hello from turn 1"}]}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_2",
                                           "name": "mcp__sharedos__sharedos_escalate", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "content": "denied: escalation_pending",
                                      "is_error": True, "tool_use_id": "toolu_2"}]},
        {"role": "user", "content": "a plain string content"},
    ],
}


def test_anthropic_reads_claude_request() -> None:
    assert ANTHROPIC.count_tool_results(CLAUDE_REQUEST) == 2
    assert [t.name for t in ANTHROPIC.exposed_tools(CLAUDE_REQUEST)] == [
        "Bash", "mcp__sharedos__files_read", "mcp__sharedos__sharedos_escalate"]  # deferred ones are not callable
    assert ANTHROPIC.looks_like(CLAUDE_REQUEST)


def test_anthropic_call_events() -> None:
    events = ANTHROPIC.tool_call_events(call_reply("mcp__sharedos__files_read"), CTX)
    assert [e.event for e in events] == [
        "message_start", "content_block_start", "content_block_delta", "content_block_stop", "message_delta",
        "message_stop",
    ]
    data = payloads(events)
    assert [d["type"] for d in data] == [e.event for e in events]
    message = data[0]["message"]
    assert message["role"] == "assistant" and message["content"] == [] and message["stop_reason"] is None
    assert set(message["usage"]) == {"input_tokens", "output_tokens", "cache_creation_input_tokens",
                                     "cache_read_input_tokens"}
    assert data[1]["content_block"] == {"type": "tool_use", "id": "toolu_runner_1",
                                        "name": "mcp__sharedos__files_read", "input": {}}
    assert data[2]["delta"]["type"] == "input_json_delta" and json.loads(data[2]["delta"]["partial_json"]) == ARGS
    assert data[4]["delta"] == {"stop_reason": "tool_use", "stop_sequence": None}
    assert data[4]["usage"]["output_tokens"] == 10
    assert (message["usage"]["input_tokens"], message["usage"]["cache_read_input_tokens"]) == (60, 40)


def test_anthropic_text_events_and_preamble() -> None:
    data = payloads(ANTHROPIC.text_events("FINAL: done", CTX))
    assert data[1]["content_block"] == {"type": "text", "text": ""}
    assert data[2]["delta"] == {"type": "text_delta", "text": "FINAL: done"}
    assert data[4]["delta"]["stop_reason"] == "end_turn"
    events = ANTHROPIC.tool_call_events(call_reply("n", None, "let me look"), CTX)
    assert [d.get("index") for d in payloads(events)] == [None, 0, 0, 0, 1, 1, 1, None, None]
    answer = parse_answer("anthropic-messages", events=payloads(events))
    assert answer.text == "let me look" and answer.calls[0].arguments == ARGS


def test_anthropic_non_stream_and_count_tokens() -> None:
    body = ANTHROPIC.tool_call_body(call_reply("n"), CTX)
    assert body["stop_reason"] == "tool_use" and body["content"][0]["input"] == ARGS
    assert ANTHROPIC.text_body("T", CTX)["stop_reason"] == "end_turn"
    rendered = ANTHROPIC.auxiliary(RequestInfo("POST", "/v1/messages/count_tokens"), CLAUDE_REQUEST, "m")
    assert rendered is not None and rendered.body["input_tokens"] > 0
    assert ANTHROPIC.auxiliary(RequestInfo("POST", "/v1/messages"), CLAUDE_REQUEST, "m") is None


# --- Gemini ---------------------------------------------------------------------------------------

GEMINI_REQUEST = {
    "contents": [
        {"role": "user", "parts": [{"text": "Use the tools."}]},
        {"role": "model", "parts": [{"functionCall": {"name": "mcp_sharedos_files_read", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "mcp_sharedos_files_read", "response": {
            "output": "<untrusted_context>\necho: hi\n</untrusted_context>"}}}]},
        {"role": "model", "parts": [{"functionCall": {"name": "mcp_sharedos_sharedos_escalate", "args": {}}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "mcp_sharedos_sharedos_escalate", "response": {
            "error": "MCP tool 'sharedos_escalate' reported tool error ..."}}}]},
    ],
    "tools": [{"functionDeclarations": [{"name": "read_file"}, {"name": "mcp_sharedos_files_read"},
                                        {"name": "mcp_sharedos_sharedos_escalate"}]}],
    "systemInstruction": {"parts": [{"text": "sys"}]}, "generationConfig": {},
}
GEMINI_INFO = RequestInfo("POST", "/v1beta/models/fake-model:streamGenerateContent", {"alt": "sse"})


def test_gemini_reads_request() -> None:
    assert GEMINI.count_tool_results(GEMINI_REQUEST) == 2
    assert [t.name for t in GEMINI.exposed_tools(GEMINI_REQUEST)] == [
        "read_file", "mcp_sharedos_files_read", "mcp_sharedos_sharedos_escalate"]
    assert GEMINI.wants_stream(GEMINI_INFO, GEMINI_REQUEST)
    assert not GEMINI.wants_stream(RequestInfo("POST", "/v1beta/models/m:generateContent"), GEMINI_REQUEST)
    assert GEMINI.model_name(GEMINI_INFO, GEMINI_REQUEST, "default") == "fake-model"


def test_gemini_call_and_text_events() -> None:
    events = GEMINI.tool_call_events(call_reply("mcp_sharedos_files_read"), CTX)
    assert [e.event for e in events] == [None]
    chunk = payloads(events)[0]
    candidate = chunk["candidates"][0]
    assert candidate["content"] == {"role": "model", "parts": [
        {"functionCall": {"name": "mcp_sharedos_files_read", "args": ARGS}}]}
    assert candidate["finishReason"] == "STOP"
    assert chunk["usageMetadata"] == {"promptTokenCount": 100, "cachedContentTokenCount": 40,
                                      "candidatesTokenCount": 7, "thoughtsTokenCount": 3, "totalTokenCount": 110}
    text = payloads(GEMINI.text_events("FINAL", CTX))[0]
    assert text["candidates"][0]["content"]["parts"] == [{"text": "FINAL"}]


def test_gemini_stream_without_sse_is_a_json_array() -> None:
    from runner.model.script import TextReply

    rendered = GEMINI.render(TextReply("x"), CTX, stream=True,
                             info=RequestInfo("POST", "/v1beta/models/m:streamGenerateContent"))
    assert rendered.events is None and isinstance(rendered.body, list) and len(rendered.body) == 1
    rendered = GEMINI.render(TextReply("x"), CTX, stream=True, info=GEMINI_INFO)
    assert rendered.events is not None


def test_gemini_json_mode_side_answer() -> None:
    sim = SimulatedCli("gemini", [])
    side = sim.side_request()
    text = GEMINI.side_text(side, "OK.")
    assert json.loads(text) == {"reasoning": "", "next_speaker": "user"}
    assert GEMINI.side_text({"generationConfig": {"responseMimeType": "application/json"}}, "OK.") == "{}"
    assert GEMINI.side_text({}, "OK.") == "OK."


def test_minimal_instance() -> None:
    schema = {"type": "OBJECT", "properties": {"a": {"type": "INTEGER"}, "b": {"type": "ARRAY"},
                                               "c": {"anyOf": [{"type": "boolean"}]}, "d": {"type": "string"}},
              "required": ["a", "b", "c"]}
    assert minimal_instance(schema) == {"a": 0, "b": [], "c": False}


def test_gemini_count_tokens() -> None:
    rendered = GEMINI.auxiliary(RequestInfo("POST", "/v1beta/models/m:countTokens"), GEMINI_REQUEST, "m")
    assert rendered is not None and rendered.body["totalTokens"] > 0


# --- the error shapes -----------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", [OPENAI_RESPONSES, OPENAI_CHAT, ANTHROPIC, GEMINI])
def test_error_bodies_carry_the_message(dialect: Dialect) -> None:
    assert "boom" in json.dumps(dialect.error_body(400, "boom"))
