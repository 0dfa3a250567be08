"""The Copilot CLI and Cline columns: their interpreters fed the frames measured on 1.0.102 and 3.0.65
(runner/harnesses/copilot, runner/harnesses/cline), their profiles' traps, and the two columns that
cannot run here (auggie, amp) saying why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from runner.core.outcomes import Complete, Fail
from runner.harnesses.interpreters import INTERPRETERS
from runner.harnesses.profile import load_profile, shipped_profile
from runner.harnesses.stream import Completed, Failed, LineSplitter, McpStartup, Message, StreamReader, harness_outcome
from runner.images import unavailable_images
from tests.unit.test_vendor_profiles import SOCAT, VALUES

REPO = Path(__file__).resolve().parents[2]
Frame = dict[str, Any]


def read(interpreter: str, frames: list[Frame]) -> StreamReader:
    reader = StreamReader(INTERPRETERS[interpreter])
    splitter = LineSplitter()
    for line, oversized in splitter.feed(b"".join(json.dumps(f).encode() + b"\n" for f in frames)):
        reader.line(line, oversized)
    return reader


# --- Copilot CLI (`copilot -p ... --output-format json`, 1.0.102) ---------------------------------

SERVERS: Frame = {"type": "session.mcp_servers_loaded", "ephemeral": True, "data": {"servers": [
    {"name": "github-mcp-server", "status": "disabled"}, {"name": "githubiq", "status": "disabled"},
    {"name": "sharedos", "status": "connected"}]}}
COPILOT_TURN: list[Frame] = [
    {"type": "session.mcp_server_status_changed", "data": {"serverName": "sharedos", "status": "connected"}},
    SERVERS,
    {"type": "assistant.turn_start", "data": {"turnId": "0"}},
    {"type": "assistant.message", "data": {"content": "", "toolRequests": [{"name": "sharedos-files-read"}]}},
    {"type": "assistant.message_delta", "data": {"deltaContent": "Done."}},
    {"type": "assistant.message", "data": {"content": "Done: every call was made.", "toolRequests": []}},
    {"type": "assistant.idle", "data": {}},
    {"type": "result", "sessionId": "d747", "exitCode": 0, "usage": {"premiumRequests": 0}},
]
COPILOT_ERROR = ("Failed to get response from the AI model; retried 5 times (total retry wait time: 14.09 seconds) "
                 "Last error: 500 runner scripted model, injected fault error@1: the model API failed this request")


def test_copilot_turn_reports_only_the_enabled_mcp_server_and_completes_at_result() -> None:
    reader = read("copilot", COPILOT_TURN)
    assert reader.startup == [McpStartup("sharedos", True, "connected")]  # the disabled built-ins are not ours
    assert reader.messages == ["Done: every call was made."]
    assert harness_outcome(reader, 0, "copilot") == Complete({"text": "Done: every call was made."})


def test_copilot_model_failure_is_the_session_error_in_its_words() -> None:
    frames = [SERVERS, {"type": "session.error", "data": {"errorType": "query", "message": COPILOT_ERROR,
                                                          "statusCode": 500}},
              {"type": "result", "exitCode": 1, "usage": {}}]
    result = harness_outcome(read("copilot", frames), 1, "copilot")
    assert isinstance(result, Fail) and result.error.code == "harness_failed"
    assert result.error.message == COPILOT_ERROR and result.error.retryable is True
    # a result with a non-zero exit code alone fails too
    bare = harness_outcome(read("copilot", [{"type": "result", "exitCode": 1}]), 1, "copilot")
    assert isinstance(bare, Fail) and bare.error.code == "harness_failed"


def test_copilot_mcp_server_not_connected_is_reported() -> None:
    frame = {"type": "session.mcp_servers_loaded", "data": {"servers": [{"name": "sharedos", "status": "failed",
                                                                         "error": "spawn socat ENOENT"}]}}
    assert INTERPRETERS["copilot"](frame) == [McpStartup("sharedos", False, "spawn socat ENOENT")]


# --- Cline (`cline --json`, 3.0.65) ----------------------------------------------------------------

CLINE_DONE = "Done: every call was made, and the decision was handed to a human."
CLINE_TURN: list[Frame] = [
    {"type": "hook_event", "hookEventName": "agent_start"},
    {"type": "agent_event", "event": {"type": "content_end", "contentType": "tool",
                                      "toolName": "sharedos__files_read_5f40265d", "output": {"content": []}}},
    {"type": "agent_event", "event": {"type": "content_end", "contentType": "text", "text": CLINE_DONE}},
    {"type": "agent_event", "event": {"type": "done", "reason": "completed", "text": CLINE_DONE}},
    {"type": "run_result", "finishReason": "completed", "iterations": 3, "text": CLINE_DONE},
]


def test_cline_turn_completes_at_run_result_with_its_text() -> None:
    reader = read("cline", CLINE_TURN)
    assert reader.messages == [CLINE_DONE]
    assert harness_outcome(reader, 0, "cline") == Complete({"text": CLINE_DONE})


def test_cline_error_run_result_fails_and_the_error_line_after_it_changes_nothing() -> None:
    text = "runner scripted model, injected fault error@1: the model API failed this request"
    frames = [{"type": "agent_event", "event": {"type": "error", "error": {"message": text}, "recoverable": False}},
              {"type": "run_result", "finishReason": "error", "iterations": 1, "text": text},
              {"type": "error", "message": "something else"}]
    result = harness_outcome(read("cline", frames), 1, "cline")
    assert isinstance(result, Fail) and (result.error.code, result.error.message) == ("harness_failed", text)


@pytest.mark.parametrize("name", ["copilot", "cline"])
def test_junk_frames_yield_nothing_and_never_raise(name: str) -> None:
    junk: list[Frame] = [{}, {"type": None}, {"type": "result"}, {"type": "session.mcp_servers_loaded", "data": []},
                         {"type": "session.mcp_servers_loaded", "data": {"servers": [None, 3]}},
                         {"type": "assistant.message", "data": {"content": 7}}, {"type": "agent_event", "event": 1},
                         {"type": "run_result", "finishReason": None, "text": None}]
    for frame in junk:
        assert all(isinstance(s, Message | Completed | Failed | McpStartup) for s in INTERPRETERS[name](frame))


# --- the profiles' traps -------------------------------------------------------------------------


def profile(name: str) -> Any:
    return load_profile(shipped_profile(name))


def test_copilot_runs_offline_on_a_byok_provider_with_its_mcp_file() -> None:
    loaded = profile("copilot")
    env = loaded.render_env(VALUES)
    assert env["COPILOT_OFFLINE"] == "true" and env["COPILOT_PROVIDER_BASE_URL"] == "http://127.0.0.1:8787/v1"
    assert env["COPILOT_PROVIDER_TYPE"] == "openai" and env["COPILOT_MODEL"] == "runner-scripted"
    argv = loaded.render_argv(VALUES)
    assert "--allow-all-tools" in argv and argv[argv.index("--output-format") + 1] == "json"
    assert argv[-2:] == ["-p", VALUES["prompt"]]
    mcp_file = argv[argv.index("--additional-mcp-config") + 1]
    assert mcp_file.startswith("@" + VALUES["home"] + "/")
    config = json.loads(loaded.render_config_files(VALUES)[mcp_file.removeprefix("@" + VALUES["home"] + "/")])
    server = config["mcpServers"]["sharedos"]
    assert (server["type"], server["command"], server["args"], server["tools"]) == ("local", "socat", SOCAT, ["*"])
    assert loaded.mcp_startup_required and loaded.interpreter == "copilot"


def test_cline_takes_its_provider_from_the_file_with_updated_at_and_never_from_argv() -> None:
    loaded = profile("cline")
    argv = loaded.render_argv(VALUES)
    assert "-P" not in argv and "-m" not in argv and "--json" in argv and argv[-1] == VALUES["prompt"]
    files = loaded.render_config_files(VALUES)
    providers = json.loads(files[".cline/data/settings/providers.json"])
    entry = providers["providers"][providers["lastUsedProvider"]]
    assert entry["updatedAt"] and entry["settings"]["provider"] == "openai-compatible"
    assert entry["settings"]["baseUrl"] == "http://127.0.0.1:8787/v1"
    server = json.loads(files[".cline/data/settings/cline_mcp_settings.json"])["mcpServers"]["sharedos"]
    assert server["transport"] == {"type": "stdio", "command": "socat", "args": SOCAT}


@pytest.mark.parametrize("name", ["auggie", "amp"])
def test_the_columns_that_talk_only_to_their_vendor_say_why_and_build_nothing(name: str) -> None:
    loaded = profile(name)
    assert loaded.unavailable and "only to" in loaded.unavailable and "network none" in loaded.unavailable
    assert name in unavailable_images(REPO)
    assert loaded.render_argv(VALUES)[0] == "/usr/local/bin/runner-entry" and loaded.credentials
