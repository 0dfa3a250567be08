"""Each vendor CLI's stdout interpreter, fed the frames shared/reference/vendor-clis.md measured.

For every CLI: a finished turn, a failed one, a stream cut by SIGTERM (no terminal frame), and for
the CLIs that report it, an MCP server that did not start. Steps are checked directly, and the
outcome through :class:`StreamReader` + :func:`harness_outcome`, the way the turn runtime reads them.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from runner.core.outcomes import Complete, Fail, RuntimeOutcome
from runner.harnesses.interpreters import INTERPRETERS, PACKAGES, get_interpreter
from runner.harnesses.stream import Completed, Failed, LineSplitter, McpStartup, Message, StreamReader, harness_outcome

Frame = dict[str, Any]


def read(interpreter: str, frames: list[Frame], trailer: bytes = b"") -> StreamReader:
    reader = StreamReader(get_interpreter(interpreter))
    splitter = LineSplitter()
    data = b"".join(json.dumps(f).encode() + b"\n" for f in frames) + trailer
    for line, oversized in splitter.feed(data):
        reader.line(line, oversized)
    for line, oversized in splitter.close():
        reader.line(line, oversized)
    return reader


def outcome(interpreter: str, frames: list[Frame], exit_code: int | None) -> RuntimeOutcome:
    return harness_outcome(read(interpreter, frames), exit_code, interpreter)


def failure(result: RuntimeOutcome) -> tuple[str, str, bool | None]:
    assert isinstance(result, Fail), result
    return result.error.code, result.error.message, result.error.retryable


def test_every_packages_interpreter_is_registered_next_to_the_generic_ones() -> None:
    provided = {name for package in PACKAGES.values() for name in package.interpreters}
    assert provided and set(INTERPRETERS) == {"jsonl", "exit-code", *provided}


@pytest.mark.parametrize("name", sorted(INTERPRETERS))
def test_junk_frames_yield_nothing_and_never_raise(name: str) -> None:
    interpret = get_interpreter(name)
    junk: list[Frame] = [
        {}, {"type": None}, {"type": 3}, {"type": "result", "is_error": "yes", "subtype": 7},
        {"type": "message_end", "message": "x"}, {"type": "item.completed", "item": []},
        {"type": "text", "part": None}, {"type": "step_finish", "part": {"reason": None}},
        {"type": "system", "subtype": "init", "mcp_servers": [None, {"status": "connected"}]},
        {"method": "session.event", "params": {"event": {"type": "turn/end", "data": {"reason": 1}}}},
        {"type": "function_call", "call_id": "", "name": "x", "arguments": "{"},
        {"type": "tool/call", "data": {"callId": "c", "name": "n", "arguments": {}}},
    ]
    for frame in junk:
        steps = interpret(frame)
        assert all(isinstance(s, Message | Completed | Failed | McpStartup) for s in steps)


# --- Codex (`codex exec --json`, 0.169.0) -------------------------------------------------------

CODEX_TURN: list[Frame] = [
    {"type": "thread.started", "thread_id": "01a2"},
    {"type": "item.completed", "item": {"id": "item_0", "type": "error",
                                        "message": "Model metadata for `runner-scripted` not found."}},
    {"type": "turn.started"},
    {"type": "item.started", "item": {"id": "item_1", "type": "mcp_tool_call", "server": "sharedos", "tool": "echo",
                                      "arguments": {"text": "hello"}, "result": None, "error": None,
                                      "status": "in_progress"}},
    {"type": "item.completed", "item": {"id": "item_2", "type": "mcp_tool_call", "server": "sharedos",
                                        "tool": "sharedos_escalate", "arguments": {"reason": "need a human"},
                                        "result": {"content": [{"type": "text", "text": "denied: escalation_pending"}]},
                                        "error": None, "status": "failed"}},
    {"type": "item.completed", "item": {"id": "item_4", "type": "agent_message", "text": "FINAL: done"}},
]


def test_codex_completed_turn_takes_the_agent_message() -> None:
    frames = [*CODEX_TURN, {"type": "turn.completed", "usage": {"input_tokens": 400, "output_tokens": 40}}]
    reader = read("codex", frames)
    assert reader.messages == ["FINAL: done"]
    assert harness_outcome(reader, 0, "codex") == Complete({"text": "FINAL: done"})


def test_codex_failed_turn_and_retry_notices_that_are_not_terminal() -> None:
    frames: list[Frame] = [
        {"type": "thread.started", "thread_id": "01a2"},
        {"type": "turn.started"},
        {"type": "error", "message": "Reconnecting... waiting for network 1/5"},
        {"type": "error", "message": "Reconnecting... waiting for network 2/5"},
        {"type": "turn.failed", "error": {"message": "Connection failed: error sending request"}},
    ]
    assert get_interpreter("codex")(frames[2]) == []  # measured: a retry notice, the turn goes on
    assert failure(outcome("codex", frames, 1)) == ("harness_failed", "Connection failed: error sending request", True)
    blank = outcome("codex", [{"type": "turn.failed", "error": {"message": "  "}}], 1)
    assert failure(blank)[1] == "The Codex CLI reported a failed turn."


def test_codex_recovers_after_a_retry_notice() -> None:
    frames = [*CODEX_TURN[:3], {"type": "error", "message": "Reconnecting... 1/5"}, *CODEX_TURN[3:],
              {"type": "turn.completed"}]
    assert outcome("codex", frames, 0) == Complete({"text": "FINAL: done"})


def test_codex_sigterm_leaves_no_terminal_and_the_exit_status_decides() -> None:
    reader = read("codex", CODEX_TURN[:5])
    assert reader.terminal is None
    code, message, retryable = failure(harness_outcome(reader, 143, "codex"))
    assert code == "harness_exited_without_outcome" and retryable is False and "143" in message


def test_codex_function_call_arguments_rule_and_responses_frames() -> None:
    interpret = get_interpreter("codex")
    call = {"type": "function_call", "call_id": "call_1", "name": "echo"}
    assert interpret({**call, "arguments": '{"text": "hi"}'}) == []  # calls travel over MCP
    assert interpret({**call, "arguments": ""}) == []  # empty counts as {}
    for bad in ("[1, 2]", "not json", '"a string"'):
        (step,) = interpret({**call, "arguments": bad})
        assert isinstance(step, Failed)
        assert step.error.code == "harness_arguments_unparseable" and step.error.retryable is None
    (failed,) = interpret({"type": "response.failed", "error": {"code": "rate_limit", "message": "slow down"}})
    assert isinstance(failed, Failed) and (failed.error.code, failed.error.message) == ("rate_limit", "slow down")
    assert interpret({"type": "response.completed", "response": {"output_text": "hi"}}) == [Completed({"text": "hi"})]
    assert interpret({"type": "message", "content": [{"type": "output_text", "text": "a"}, {"type": "refusal"}]}) == [
        Message("a")]
    assert interpret({"type": "item.completed", "item": {"type": "agent_message", "text": "   "}}) == []


# --- Claude Code (`claude -p --output-format stream-json --verbose`, 2.1.328) -------------------

CLAUDE_INIT: Frame = {
    "type": "system", "subtype": "init", "session_id": "s1",
    "tools": ["mcp__sharedos__echo", "mcp__sharedos__sharedos_escalate"],
    "mcp_servers": [{"name": "sharedos", "status": "connected", "source": "dynamic"}],
    "model": "claude-opus-5-5", "permissionMode": "dontAsk", "apiKeySource": "ANTHROPIC_API_KEY",
}
CLAUDE_TURN: list[Frame] = [
    CLAUDE_INIT,
    {"type": "assistant", "message": {"id": "msg_1", "content": [
        {"type": "tool_use", "id": "toolu_1", "name": "mcp__sharedos__echo", "input": {"text": "hello"}}],
        "stop_reason": None}, "session_id": "s1"},
    {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "content": "denied: escalation_pending", "is_error": True, "tool_use_id": "toolu_2"}]}},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "FINAL: done"}]}},
]


def test_claude_success_reports_mcp_startup_and_the_result_text() -> None:
    frames = [*CLAUDE_TURN, {"type": "result", "subtype": "success", "is_error": False, "terminal_reason": "completed",
                             "result": "FINAL: done", "num_turns": 4, "stop_reason": "end_turn"}]
    reader = read("claude-code", frames)
    assert reader.startup == [McpStartup("sharedos", True, "connected")]
    assert reader.messages == ["FINAL: done"]
    assert harness_outcome(reader, 0, "claude-code") == Complete({"text": "FINAL: done"})


def test_claude_api_error_is_a_failure_coded_by_terminal_reason_not_success() -> None:
    frames = [CLAUDE_INIT, {"type": "result", "subtype": "success", "is_error": True, "terminal_reason": "api_error",
                            "result": "API Error: Connection refused"}]
    assert failure(outcome("claude-code", frames, 1)) == ("api_error", "API Error: Connection refused", True)


def test_claude_sigint_result_fails_even_though_the_exit_status_is_zero() -> None:
    frames = [*CLAUDE_TURN[:2], {"type": "result", "subtype": "error_during_execution", "is_error": True,
                                 "terminal_reason": "aborted_streaming"}]
    code, message, _ = failure(outcome("claude-code", frames, 0))
    assert (code, message) == ("error_during_execution", "The Claude Code harness reported a failure.")
    no_reason = outcome("claude-code", [{"type": "result", "is_error": True}], 1)
    assert failure(no_reason)[0] == "harness_failed"
    max_turns = outcome("claude-code", [{"type": "result", "subtype": "error_max_turns", "is_error": True}], 1)
    assert failure(max_turns)[0] == "error_max_turns"


def test_claude_sigterm_without_result() -> None:
    reader = read("claude-code", CLAUDE_TURN[:3])
    assert reader.terminal is None
    assert failure(harness_outcome(reader, 143, "claude-code"))[0] == "harness_exited_without_outcome"


def test_claude_mcp_server_that_failed_to_start_is_reported_not_connected() -> None:
    init = {**CLAUDE_INIT, "mcp_servers": [{"name": "sharedos", "status": "failed", "source": "dynamic"}]}
    frames = [init, {"type": "assistant", "message": {"content": [{"type": "text", "text": "side-answer: ok"}]}},
              {"type": "result", "subtype": "success", "is_error": False, "result": "side-answer: ok"}]
    reader = read("claude-code", frames)
    assert reader.startup == [McpStartup("sharedos", False, "failed")]
    assert harness_outcome(reader, 0, "claude-code") == Complete({"text": "side-answer: ok"})  # the CLI's view


# --- Qwen Code (`qwen -p ... -o stream-json`, 0.24.4) --------------------------------------------

QWEN_TURN: list[Frame] = [
    {"type": "system", "subtype": "init", "session_id": "q1", "cwd": "/run/runner/home/work",
     "tools": ["tool_search", "tool_call", "mcp__sharedos__echo"],
     "mcp_servers": [{"name": "sharedos", "status": "connected"}], "model": "runner-scripted",
     "permission_mode": "yolo"},
    {"type": "stream_event", "event": {"type": "goal_state"}},
    {"type": "assistant", "message": {"role": "assistant", "content": [
        {"type": "tool_use", "id": "call_1", "name": "mcp__sharedos__echo", "input": {"text": "hi"}}],
        "stop_reason": "tool_use"}},
    {"type": "user", "message": {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "call_1", "is_error": False, "content": "echo: hi"}]}},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "FINAL: all scripted steps done."}]}},
]


def test_qwen_success() -> None:
    frames = [*QWEN_TURN, {"type": "result", "subtype": "success", "is_error": False, "duration_ms": 859,
                           "num_turns": 4, "result": "FINAL: all scripted steps done.", "permission_denials": []}]
    reader = read("qwen", frames)
    assert reader.startup == [McpStartup("sharedos", True, "connected")]
    assert harness_outcome(reader, 0, "qwen") == Complete({"text": "FINAL: all scripted steps done."})


def test_qwen_failure_and_sigterm() -> None:
    frames = [*QWEN_TURN[:2], {"type": "result", "subtype": "error_max_turns", "is_error": True}]
    expected = ("error_max_turns", "The Qwen Code harness reported a failure.", True)
    assert failure(outcome("qwen", frames, 55)) == expected
    # process-group SIGTERM: "Operation cancelled." on stderr, no result event
    assert failure(outcome("qwen", QWEN_TURN[:4], 143))[0] == "harness_exited_without_outcome"


def test_qwen_mcp_server_not_connected() -> None:
    init = {**QWEN_TURN[0], "mcp_servers": [{"name": "sharedos", "status": "disconnected"}]}
    assert read("qwen", [init]).startup == [McpStartup("sharedos", False, "disconnected")]


# --- Pi (`pi --mode json`, 0.73.1 + pi-mcp-adapter 2.36.0) ---------------------------------------

def pi_assistant(content: list[Frame], stop: str, **extra: object) -> Frame:
    return {"type": "message_end", "message": {"role": "assistant", "content": content, "stopReason": stop, **extra}}


PI_TURN: list[Frame] = [
    {"type": "session", "version": 3, "id": "01a2", "timestamp": "t", "cwd": "/run/runner/home/work"},
    {"type": "agent_start"},
    {"type": "turn_start"},
    {"type": "message_start", "message": {"role": "user", "content": [{"type": "text", "text": "prompt"}]}},
    {"type": "message_end", "message": {"role": "user", "content": [{"type": "text", "text": "prompt"}]}},
    {"type": "message_update", "assistantMessageEvent": {"type": "text_delta", "delta": "FIN"}},
    pi_assistant([{"type": "toolCall", "id": "call_1", "name": "mcp",
                   "arguments": {"tool": "sharedos_echo", "args": {"text": "hi"}}}], "toolUse"),
    {"type": "tool_execution_start", "toolCallId": "call_1", "toolName": "mcp", "args": {}},
    {"type": "tool_execution_end", "toolCallId": "call_1", "toolName": "mcp", "isError": True,
     "result": {"content": [{"type": "text", "text": "Error: denied: escalation_pending"}]}},
    {"type": "message_end", "message": {"role": "toolResult", "isError": True, "content": []}},
    {"type": "turn_end", "message": {}, "toolResults": []},
    {"type": "turn_start"},
]


def test_pi_success_ends_at_agent_end() -> None:
    frames = [*PI_TURN, pi_assistant([{"type": "text", "text": "FINAL: all scripted steps done."}], "stop"),
              {"type": "turn_end", "toolResults": []}, {"type": "agent_end", "messages": []}]
    reader = read("pi", frames)
    assert reader.messages == ["FINAL: all scripted steps done."]  # deltas and the user message ignored
    assert harness_outcome(reader, 0, "pi") == Complete({"text": "FINAL: all scripted steps done."})


def test_pi_model_error_fails_although_json_mode_exits_zero() -> None:
    frames = [*PI_TURN, pi_assistant([], "error", errorMessage="Connection error."), {"type": "agent_end"}]
    assert failure(outcome("pi", frames, 0)) == ("harness_failed", "Connection error.", True)
    aborted = outcome("pi", [pi_assistant([{"type": "text", "text": "partial"}], "aborted")], 0)
    assert failure(aborted)[0] == "harness_failed"


def test_pi_sigterm_stops_after_turn_start() -> None:
    reader = read("pi", PI_TURN)
    assert reader.terminal is None and reader.messages == []
    assert failure(harness_outcome(reader, 143, "pi"))[0] == "harness_exited_without_outcome"


# Pi 1.6.0 (built-in MCP, codemode), as measured here: a system message first, the script's own MCP call
# nested under the codemode call, agent_end with willRetry false, then agent_settled
PI_CODEMODE_TURN: list[Frame] = [
    {"type": "session", "version": 3, "id": "01a2", "timestamp": "t", "cwd": "/run/runner/home/work"},
    {"type": "agent_start"},
    {"type": "turn_start"},
    {"type": "message_end", "message": {"role": "system", "content": "", "sections": {"tools": "<tools>"}}},
    {"type": "message_end", "message": {"role": "user", "content": [{"type": "text", "text": "prompt"}]}},
    pi_assistant([{"type": "toolCall", "id": "call_0", "name": "codemode",
                   "arguments": {"code": 'return await tools.mcp__sharedos__echo({"text": "hi"});'}}], "toolUse"),
    {"type": "tool_execution_start", "toolCallId": "call_0", "toolName": "codemode", "args": {}},
    {"type": "tool_execution_start", "toolCallId": "call_0/1", "toolName": "mcp__sharedos__echo",
     "args": {"text": "hi"}, "parentToolCallId": "call_0"},
    {"type": "tool_execution_end", "toolCallId": "call_0/1", "toolName": "mcp__sharedos__echo", "isError": False,
     "result": {"content": [{"type": "text", "text": "echo: hi"}]}, "parentToolCallId": "call_0"},
    {"type": "tool_execution_end", "toolCallId": "call_0", "toolName": "codemode", "isError": False,
     "result": {"content": [{"type": "text", "text": "Script completed\nWall time 0.4 seconds\nOutput:\n"}]}},
    {"type": "message_end", "message": {"role": "toolResult", "toolCallId": "call_0", "content": []}},
    {"type": "turn_end", "message": {}, "toolResults": []},
    {"type": "turn_start"},
    pi_assistant([{"type": "text", "text": "FINAL: done"}], "stop"),
    {"type": "turn_end", "message": {}, "toolResults": []},
    {"type": "agent_end", "messages": [], "willRetry": False},
    {"type": "agent_settled", "aborted": False},
]


def test_pi_codemode_turn_reads_like_any_other() -> None:
    reader = read("pi", PI_CODEMODE_TURN)
    assert reader.messages == ["FINAL: done"]  # the system message, the script and its nested call yield nothing
    assert harness_outcome(reader, 0, "pi") == Complete({"text": "FINAL: done"})


def test_pi_rpc_frames_kept_from_upstream() -> None:
    interpret = get_interpreter("pi")
    assert interpret({"type": "agent_end", "willRetry": True}) == []
    assert interpret({"type": "response", "command": "prompt", "success": True}) == []
    (rejected,) = interpret({"type": "response", "command": "prompt", "success": False})
    assert isinstance(rejected, Failed)
    expected = ("harness_command_rejected", "Pi rejected the prompt command.")
    assert (rejected.error.code, rejected.error.message) == expected
    (error,) = interpret({"type": "error", "message": "boom"})
    assert isinstance(error, Failed) and (error.error.code, error.error.message) == ("harness_failed", "boom")


# --- Gemini CLI (`gemini -p ... -o stream-json`, 0.61.0) -----------------------------------------

GEMINI_TURN: list[Frame] = [
    {"type": "init", "timestamp": "t", "session_id": "6d20", "model": "runner-scripted"},
    {"type": "message", "role": "user", "content": "Use the tools."},
    {"type": "tool_use", "tool_name": "mcp_sharedos_echo", "tool_id": "t1", "parameters": {"text": "hi"}},
    {"type": "tool_result", "tool_id": "t1", "status": "success", "output": "echo: hi"},
    {"type": "tool_use", "tool_name": "mcp_sharedos_sharedos_escalate", "tool_id": "t2", "parameters": {}},
    {"type": "tool_result", "tool_id": "t2", "status": "error", "output": "Error: MCP tool reported an error.",
     "error": {"type": "mcp_tool_error", "message": "denied"}},
]


def test_gemini_success_with_a_delta_message() -> None:
    frames = [*GEMINI_TURN,
              {"type": "message", "role": "assistant", "content": "FINAL: all scripted steps done.", "delta": True},
              {"type": "result", "status": "success", "stats": {"total_tokens": 60, "tool_calls": 3}}]
    reader = read("gemini", frames)
    assert reader.messages == ["FINAL: all scripted steps done."]
    assert harness_outcome(reader, 0, "gemini") == Complete({"text": "FINAL: all scripted steps done."})


def test_gemini_delta_chunks_are_messages_in_order() -> None:
    chunks = [{"type": "message", "role": "assistant", "content": part, "delta": True} for part in ("FIN", "AL")]
    assert read("gemini", chunks).messages == ["FIN", "AL"]


def test_gemini_error_result_and_non_terminal_error_events() -> None:
    frames = [GEMINI_TURN[0], {"type": "error", "severity": "warning", "message": "Loop detected"},
              {"type": "result", "status": "error", "error": {"type": "FatalTurnLimitedError",
                                                              "message": "Reached max session turns"},
               "stats": {}}]
    assert failure(outcome("gemini", frames, 53)) == ("harness_failed", "Reached max session turns", True)
    bare = outcome("gemini", [{"type": "result", "status": "error", "stats": {}}], 1)
    assert failure(bare)[1] == "The Gemini CLI reported a failed turn."


def test_gemini_sigterm_exits_zero_without_result() -> None:
    # measured: rc 0 and no result event; only the missing result (and the runtime's deadline) tells
    reader = read("gemini", GEMINI_TURN)
    assert reader.terminal is None
    assert harness_outcome(reader, 0, "gemini") == Complete({"text": ""})


# --- opencode (`opencode run --format json`, 1.18.33) --------------------------------------------

OPENCODE_TURN: list[Frame] = [
    {"type": "step_start", "timestamp": 1, "sessionID": "ses_1", "part": {"type": "step-start"}},
    {"type": "tool_use", "sessionID": "ses_1", "part": {"type": "tool", "tool": "sharedos_echo", "callID": "call_1",
                                                         "state": {"status": "completed", "output": "echo: hi"}}},
    {"type": "step_finish", "part": {"type": "step-finish", "reason": "tool-calls", "cost": 0}},
    {"type": "step_start", "part": {"type": "step-start"}},
    {"type": "tool_use", "part": {"type": "tool", "tool": "sharedos_sharedos_escalate",
                                  "state": {"status": "error", "error": "denied: escalation_pending"}}},
    {"type": "step_finish", "part": {"type": "step-finish", "reason": "tool-calls"}},
    {"type": "step_start", "part": {"type": "step-start"}},
]


def test_opencode_success_ends_at_the_stop_step() -> None:
    frames = [*OPENCODE_TURN, {"type": "text", "part": {"type": "text", "text": "FINAL: all scripted steps done."}},
              {"type": "step_finish", "part": {"type": "step-finish", "reason": "stop"}}]
    reader = read("opencode", frames)
    assert harness_outcome(reader, 0, "opencode") == Complete({"text": "FINAL: all scripted steps done."})


def test_opencode_error_event_fails() -> None:
    frames = [OPENCODE_TURN[0], {"type": "error", "sessionID": "ses_1",
                                 "error": {"name": "APIError", "data": {"message": "Connection refused"}}},
              {"type": "done", "reason": "idle", "rejected": []}]
    assert failure(outcome("opencode", frames, 1)) == ("harness_failed", "Connection refused", True)
    assert failure(outcome("opencode", [{"type": "error", "error": {"name": "UnknownError"}}], 1))[1] == "UnknownError"


def test_opencode_sigterm_stops_after_a_step_start() -> None:
    assert failure(outcome("opencode", OPENCODE_TURN, 143))[0] == "harness_exited_without_outcome"


def test_opencode_newer_done_event_completes() -> None:
    frames: list[Frame] = [{"type": "text", "part": {"text": "hi"}}, {"type": "done", "reason": "idle", "rejected": []}]
    assert outcome("opencode", frames, 0) == Complete({"text": "hi"})


# --- DeepSeek Harness (session events, upstream deepseek/protocol.ts) ------------------------------

def dsh(event_type: str, data: Frame, wrapped: bool = False) -> Frame:
    event = {"type": event_type, "data": data}
    return {"jsonrpc": "2.0", "method": "session.event", "params": {"event": event}} if wrapped else event


def test_deepseek_completed_turn_bare_and_wrapped() -> None:
    frames = [
        dsh("tool/call", {"callId": "c1", "name": "mcp__sharedos__echo", "arguments": '{"text": "hi"}'}),
        dsh("assistant/message", {"message": {"content": [
            {"type": "tool-call", "id": "c1", "name": "mcp__sharedos__echo", "arguments": "{}"},
            {"type": "text", "text": "FINAL: done"}]}}, wrapped=True),
        dsh("turn/end", {"reason": {"kind": "completed"}}, wrapped=True),
    ]
    assert outcome("deepseek", frames, 0) == Complete({"text": "FINAL: done"})


def test_deepseek_turn_end_failures() -> None:
    cut = outcome("deepseek", [dsh("turn/end", {"reason": {"kind": "max-tokens"}})], 1)
    ceiling = "The DeepSeek Harness turn reached its output-token ceiling."
    assert failure(cut) == ("harness_turn_max_tokens", ceiling, True)
    coded = dsh("turn/end", {"reason": {"kind": "error", "error": {"code": "AUTH", "message": "401"}}})
    assert failure(outcome("deepseek", [coded], 1)) == ("AUTH", "401", True)


def test_deepseek_unparseable_arguments_fail_even_on_the_mcp_path() -> None:
    frames = [dsh("tool/call", {"callId": "c1", "name": "x", "arguments": "{not json"}),
              dsh("turn/end", {"reason": {"kind": "completed"}})]
    code, _, retryable = failure(outcome("deepseek", frames, 0))
    assert (code, retryable) == ("harness_arguments_unparseable", None)
    assert get_interpreter("deepseek")(dsh("tool/call", {"callId": "c1", "name": "x", "arguments": ""})) == []


def test_deepseek_headless_plain_text_stdout_is_decided_by_the_exit_status() -> None:
    # stdout is the last assistant text, not JSON: no frames there (the session log decides the turn:
    # tests/unit/test_deepseek_session.py)
    reader = read("deepseek", [], trailer=b"FINAL: done\n")
    assert reader.non_json_lines == 1 and reader.terminal is None
    assert harness_outcome(reader, 0, "deepseek") == Complete({"text": ""})
    assert failure(harness_outcome(reader, 1, "deepseek"))[0] == "harness_exited_without_outcome"


# --- Kilo Code: opencode's stream (runner/harnesses/kilo) ----------------------------------------------------


def test_kilo_reads_opencodes_stream() -> None:
    frames = [*OPENCODE_TURN, {"type": "text", "part": {"type": "text", "text": "Done."}},
              {"type": "step_finish", "part": {"type": "step-finish", "reason": "stop"}}]
    assert harness_outcome(read("kilo", frames), 0, "kilo") == Complete({"text": "Done."})
    api_error = {"type": "error", "error": {"name": "APIError", "data": {"message": "injected fault error@1"}}}
    assert failure(outcome("kilo", [OPENCODE_TURN[0], api_error], 1)) == (
        "harness_failed", "injected fault error@1", True)
    assert failure(outcome("kilo", [{"type": "error", "error": {}}], 1))[1] == "The Kilo Code CLI reported a failure."
    # SIGTERM: the stream stops after a step_start; the exit status decides
    assert failure(outcome("kilo", OPENCODE_TURN, 143))[0] == "harness_exited_without_outcome"


# --- Kimi Code (runner/harnesses/kimi) -------------------------------------------------------------------------

KIMI_TURN: list[Frame] = [
    {"role": "meta", "type": "system.version", "version": "2.1.0"},
    {"role": "assistant", "tool_calls": [{"type": "function", "id": "call_runner_0", "function": {
        "name": "mcp__sharedos__files_read", "arguments": "{\"path\":[\"Workspace\",\"policy.md\"]}"}}]},
    {"role": "tool", "tool_call_id": "call_runner_0", "content": "{\"content\":\"Only the owner changes policy.\"}"},
    {"role": "assistant", "tool_calls": [{"type": "function", "id": "call_runner_1", "function": {
        "name": "mcp__sharedos__sharedos_escalate", "arguments": "{\"reason\":\"outside my authority\"}"}}]},
    {"role": "tool", "tool_call_id": "call_runner_1", "content": "{\"escalated\":true}"},
]


def test_kimi_completes_on_exit_zero_with_its_last_assistant_text() -> None:
    frames = [*KIMI_TURN, {"role": "assistant", "content": "Done: handed to a human."},
              {"role": "meta", "type": "session.resume_hint", "session_id": "s_1", "content": "kimi -r s_1"}]
    reader = read("kimi", frames)
    assert reader.terminal is None  # 2.1.0 prints no terminal frame
    assert harness_outcome(reader, 0, "kimi") == Complete({"text": "Done: handed to a human."})


def test_kimi_failing_model_exits_one_without_a_frame() -> None:
    retrying = {"role": "meta", "type": "turn.step.retrying", "failed_attempt": 1, "next_attempt": 2,
                "error_name": "APIConnectionError", "error_message": "Connection error."}
    frames = [KIMI_TURN[0], retrying]
    assert failure(outcome("kimi", frames, 1))[0] == "harness_exited_without_outcome"
    assert failure(outcome("kimi", [*KIMI_TURN, {"role": "meta", "type": "error", "message": "boom"}], 1)) == (
        "harness_failed", "boom", True)


def test_kimi_junk_never_raises() -> None:
    for frame in [{}, {"role": None}, {"role": "assistant", "content": 3}, {"role": "assistant", "content": "  "},
                  {"role": "meta", "type": 5}, {"role": "meta", "type": "x.failed"}, {"role": "tool"}]:
        assert all(isinstance(s, Message | Completed | Failed) for s in get_interpreter("kimi")(frame))


# --- Factory Droid (runner/harnesses/droid) ---------------------------------------------------------------------


def test_droid_completes_at_its_completion_frame_and_fails_at_an_error_frame() -> None:
    init = {"type": "system", "subtype": "init", "session_id": "s", "tools": ["ToolSearch"], "model": "custom:r-0"}
    search = [{"type": "tool_call", "id": "call_runner_0", "toolName": "ToolSearch",
               "parameters": {"query": "select:sharedos___files_read"}},
              {"type": "tool_result", "id": "call_runner_0", "isError": False, "value": "Loaded 1 tool(s)"}]
    done = [{"type": "message", "role": "assistant", "text": "Done."},
            {"type": "completion", "finalText": "Done.", "numTurns": 3, "durationMs": 911}]
    assert outcome("droid", [init, *search, *done], 0) == Complete({"text": "Done."})
    refused = {"type": "error", "source": "cli", "message": "Exec ended early: insufficient permission to proceed."}
    assert failure(outcome("droid", [init, *search, refused], 1)) == (
        "harness_failed", "Exec ended early: insufficient permission to proceed.", True)
    assert failure(outcome("droid", [init, *search], 143))[0] == "harness_exited_without_outcome"
    assert outcome("droid", [{"type": "message", "role": "user", "text": "the prompt"}], 0) == Complete({"text": ""})
