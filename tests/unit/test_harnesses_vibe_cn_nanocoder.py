"""The harnesses of issue 32: Continue's ``cn`` (1.5.47), Nanocoder (1.30.0) and Mistral Vibe on its 3.x unified
harness (3.0.2). Their interpreters fed the output measured on those versions (each harness's README.md), their
profiles' traps, and Nanocoder's one pretty-printed report read as a document once the CLI exited
(runner.harnesses.stream)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from runner.core.outcomes import Complete, Fail, RuntimeOutcome
from runner.core.scrub import Scrubber
from runner.harnesses.interpreters import INTERPRETERS
from runner.harnesses.stream import MAX_FRAME_BYTES, StreamReader, Tail, harness_outcome
from runner.turn.transcript import StreamSink
from tests.unit.test_vendor_profiles import PROMPT, SOCAT, VALUES, parsed, profile

Frame = dict[str, Any]


def read_bytes(interpreter: str, data: bytes, chunk: int | None = None) -> StreamReader:
    """``data`` as the CLI's stdout, through the sink a turn reads it with (in chunks of ``chunk`` bytes)."""
    reader = StreamReader(INTERPRETERS[interpreter])
    with tempfile.TemporaryDirectory() as tmp:
        sink = StreamSink(Path(tmp) / "stdout.log", Scrubber({}), Tail(), reader)
        for at in range(0, len(data), chunk or max(len(data), 1)):
            sink.feed(data[at:at + (chunk or len(data))])
        sink.close()
    return reader


def lines(frames: list[Frame]) -> bytes:
    return b"".join(json.dumps(f).encode() + b"\n" for f in frames)


def failure(result: RuntimeOutcome) -> tuple[str, str, bool | None]:
    assert isinstance(result, Fail), result
    return result.error.code, result.error.message, result.error.retryable


# --- Mistral Vibe 3.0.2 (`vibe -p ... --output streaming`, unified harness) ------------------------------------

def _entry(kind: str, **fields: Any) -> Frame:
    return {"id": f"{kind}-1", "sessionId": "s", "turnId": "turn-1", "generationStatus": "completed", "type": kind,
            **fields}


VIBE_TURN: list[Frame] = [
    _entry("message", role="user", content=[{"type": "text", "text": "the prompt"}], source="turn_start",
           outcome=None),
    _entry("effect", title="Searching for relevant tools", detail={"toolName": "search_tool_functions"},
           state={"status": "completed", "output": {"mode": "details", "toolCount": 2}}),
    _entry("message", role="assistant", content=[{"type": "text", "text": "Let me read it."}], source="harness",
           outcome={"type": "committed"}),
    _entry("effect", title="mcp_sharedos.files_read", detail={"toolName": "mcp_sharedos.files_read"},
           state={"status": "completed", "outputText": "{\"content\": \"x\"}",
                  "output": {"type": "success", "content": [{"type": "text", "text": "{\"content\": \"x\"}"}]}}),
    _entry("effect", title="mcp_sharedos.files_fail", detail={"toolName": "mcp_sharedos.files_fail"},
           state={"status": "failed", "outputText": "denied: escalation_pending",
                  "error": {"code": "mcp_tool_error", "message": "denied: escalation_pending"}}),
    _entry("message", role="assistant", content=[{"type": "text", "text": "Done."}], source="harness",
           outcome={"type": "committed"}),
]


def test_vibe_3_entries_give_the_assistant_texts_and_no_terminal_the_exit_status_decides() -> None:
    reader = read_bytes("vibe", lines(VIBE_TURN))
    assert reader.messages == ["Let me read it.", "Done."] and reader.terminal is None
    assert harness_outcome(reader, 0, "vibe") == Complete({"text": "Let me read it.\nDone."})
    # a model API error exits 2 with the error on stderr only; --max-turns, --time-limit and SIGTERM exit 3
    assert failure(harness_outcome(read_bytes("vibe", lines(VIBE_TURN[:1])), 2, "vibe"))[0] == (
        "harness_exited_without_outcome")
    assert failure(harness_outcome(read_bytes("vibe", lines(VIBE_TURN[:4])), 3, "vibe"))[0] == (
        "harness_exited_without_outcome")


def test_vibe_3_profile_runs_the_unified_harness() -> None:
    loaded = profile("vibe")
    argv = loaded.render_argv(VALUES)
    assert "--legacy-harness" not in argv  # 3.x: "error: unexpected argument '--legacy-harness' found", exit 1
    assert argv[argv.index("--output") + 1] == "streaming" and "--auto-approve" in argv
    assert argv[-2:] == ["-p", PROMPT]
    server = parsed("vibe", ".vibe/config.toml")["mcp_servers"][0]
    assert (server["name"], server["command"], server["args"]) == ("sharedos", "socat", SOCAT)


# --- Continue's cn 1.5.47 (`cn -p ... --format json`) ----------------------------------------------------------

def test_cn_reads_its_one_response_line_and_the_exit_status_decides() -> None:
    wrapped = {"response": "Done: handed to a human.", "status": "success",
               "note": "Response was not valid JSON, so it was wrapped in a JSON object"}
    reader = read_bytes("cn", lines([wrapped]))
    assert reader.terminal is None
    assert harness_outcome(reader, 0, "cn") == Complete({"text": "Done: handed to a human."})
    # a model answer that is itself JSON is printed as it is: whatever its shape, it is no outcome
    own = read_bytes("cn", lines([{"status": "error", "message": "the model wrote this"}]))
    assert own.messages == [] and harness_outcome(own, 0, "cn") == Complete({"text": ""})
    # a failed model request: {"status": "error", ...} on stderr, nothing on stdout, exit 1
    assert failure(harness_outcome(read_bytes("cn", b""), 1, "cn"))[0] == "harness_exited_without_outcome"
    for junk in [{}, {"response": 3}, {"response": "  "}, {"status": "info", "message": "Auto-compacting"}]:
        assert INTERPRETERS["cn"](junk) == []


def test_cn_profile_gives_its_config_file_and_allows_every_tool() -> None:
    loaded = profile("cn")
    argv = loaded.render_argv(VALUES)
    config_path = argv[argv.index("--config") + 1]
    assert config_path == VALUES["home"] + "/.continue/runner.yaml"
    assert "--auto" in argv and argv[argv.index("--format") + 1] == "json" and argv[-2:] == ["-p", PROMPT]
    config = parsed("cn", ".continue/runner.yaml")
    (model,) = config["models"]
    assert (model["provider"], model["apiBase"], model["apiKey"]) == (
        "openai", "http://127.0.0.1:8787/v1", VALUES["api_key"])
    assert config["mcpServers"] == [{"name": "sharedos", "command": "socat", "args": SOCAT}]
    assert loaded.model is not None and loaded.model.dialect == "openai-chat"


# --- Nanocoder 1.30.0 (`nanocoder ... --json run <prompt>`) ----------------------------------------------------

NANO_REPORT: Frame = {
    "kind": "success", "exitCode": 0, "finalText": "Let me read it.Done.", "reasoning": None,
    "toolCalls": [{"name": "files.read", "arguments": {"path": ["Workspace", "policy.md"]},
                   "result": "{\"content\": \"x\"}", "error": None}],
    "filesChanged": [], "usage": {"inputTokens": 40, "outputTokens": 20, "totalTokens": 60},
}


def pretty(report: Frame) -> bytes:
    """As Nanocoder writes it: ``JSON.stringify(report, null, 2)`` and a newline."""
    return json.dumps(report, indent=2).encode() + b"\n"


def test_nanocoder_report_is_read_as_one_document_after_the_exit() -> None:
    reader = read_bytes("nanocoder", pretty(NANO_REPORT))
    # no line of it is a frame, and its "{" lines (the report's and each tool call's) start like malformed ones
    assert (reader.frames, reader.terminal, reader.malformed) == (0, None, 2)
    assert harness_outcome(reader, 0, "nanocoder") == Complete({"text": "Let me read it.Done."})
    assert (reader.frames, reader.malformed, reader.messages) == (1, 0, ["Let me read it.Done."])
    # however the report arrives in chunks (split inside lines), it is the same document
    chunked = read_bytes("nanocoder", pretty(NANO_REPORT), chunk=7)
    assert harness_outcome(chunked, 0, "nanocoder") == Complete({"text": "Let me read it.Done."})
    # the exit status does not overrule the report: a "success" report with exit 1 still completes
    assert harness_outcome(read_bytes("nanocoder", pretty(NANO_REPORT)), 1, "nanocoder") == Complete(
        {"text": "Let me read it.Done."})


def test_nanocoder_error_and_approval_reports_fail_the_turn() -> None:
    error = {**NANO_REPORT, "kind": "error", "exitCode": 1, "finalText": "", "message": "Server error: boom"}
    assert failure(harness_outcome(read_bytes("nanocoder", pretty(error)), 1, "nanocoder")) == (
        "harness_failed", "Server error: boom", True)
    ask = {**NANO_REPORT, "kind": "tool-approval-required", "exitCode": 2, "toolNames": ["execute_bash"]}
    code, text, retryable = failure(harness_outcome(read_bytes("nanocoder", pretty(ask)), 2, "nanocoder"))
    assert (code, retryable) == ("harness_failed", False) and "execute_bash" in text


def test_a_document_that_is_cut_short_too_big_or_follows_frames_is_not_read() -> None:
    """A report cut short is malformed output whatever the exit code (its ``{`` lines start like frames and none
    could be read): the part that was lost may have been the one that said how the turn ended."""
    cut = pretty(NANO_REPORT)[:-40]
    for code in (0, 1):
        outcome = failure(harness_outcome(read_bytes("nanocoder", cut), code, "nanocoder"))
        assert outcome[0] == "harness_malformed_output" and outcome[2] is False
    huge = pretty({**NANO_REPORT, "finalText": "x" * MAX_FRAME_BYTES})
    reader = read_bytes("nanocoder", huge)
    assert reader.document_overflow and not reader.end() and reader.messages == []
    framed = read_bytes("nanocoder", lines([{"kind": "noise"}]) + pretty(NANO_REPORT))
    assert not framed.end() and framed.messages == []  # a stream of frames is never re-read as a document


def test_nanocoder_profile_trusts_the_turn_dir_and_registers_sharedos_in_home() -> None:
    loaded = profile("nanocoder")
    argv = loaded.render_argv(VALUES)
    assert "--trust-directory" in argv and argv[argv.index("--mode") + 1] == "yolo" and "--json" in argv
    assert argv[argv.index("--provider") + 1] == "runner" and argv[-2:] == ["run", PROMPT]
    (provider,) = parsed("nanocoder", ".config/nanocoder/agents.config.json")["nanocoder"]["providers"]
    assert provider == {"name": "runner", "baseUrl": "http://127.0.0.1:8787/v1", "apiKey": VALUES["api_key"],
                        "models": [VALUES["model"]]}
    assert parsed("nanocoder", ".config/nanocoder/.mcp.json") == {
        "mcpServers": {"sharedos": {"command": "socat", "args": SOCAT}}}
