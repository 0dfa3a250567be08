"""dsh's outcome from its zstd session log (runner/harnesses/deepseek/session.py), no Docker.

The logs are written the way dsh 0.1.0-rc.8 writes them (event shapes copied from a measured turn):
``$DSH_HOME/sessions/<cwd-slug>/session-<uuid>/session.jsonl.zstd``.
"""

from __future__ import annotations

import json
import os
import tracemalloc
from pathlib import Path
from typing import Any

import zstandard

from runner.core.outcomes import Complete, Fail
from runner.harnesses.deepseek.session import NO_TURN_END, read_log, read_session, session_logs
from runner.harnesses.interpreters import INTERPRETERS, get_interpreter, get_session_reader
from runner.harnesses.stream import Completed, Failed, Message, StreamReader, harness_outcome

ESCALATE = "mcp__sharedos__sharedos_escalate_72e183f8c537"
HEADER = {"type": "session", "version": 0, "id": "session-1", "createdAt": 1, "cwd": "/run/runner/home/work"}


def event(kind: str, data: dict[str, Any], seq: int = 0) -> dict[str, Any]:
    return {"type": kind, "seq": seq, "time": 1796157154000 + seq, "data": data}


def completed_turn() -> list[dict[str, Any]]:
    return [
        HEADER,
        event("approval/policy", {"policy": "ask"}, 2),
        event("turn/start", {"turn": 1}, 4),
        event("session/title", {"title": "OK.", "messageSeqs": [7]}, 13),
        event("tool/call", {"turn": 1, "step": 2, "callId": "call_runner_1", "name": ESCALATE,
                            "arguments": '{"reason":"outside this agent\'s authority"}'}, 32),
        event("assistant/message", {"turn": 1, "step": 3, "message": {"role": "assistant", "content": [
            {"type": "reasoning", "text": "The scripted model follows the case's script."},
            {"type": "text", "text": "Done: handed to a human."}]}}, 41),
        event("turn/end", {"turn": 1, "reason": {"kind": "completed"}}, 43),
    ]


def write_log(home: Path, events: list[dict[str, Any]], *, session: str = "session-1", cut: int = 0) -> Path:
    path = home / "sessions" / "--run-runner-home-work--" / session / "session.jsonl.zstd"
    path.parent.mkdir(parents=True, exist_ok=True)
    # dsh flushes as it goes: one zstd frame per few events (measured: 11 frames for one short turn)
    compressor = zstandard.ZstdCompressor()
    data = b"".join(
        compressor.compress(b"".join(json.dumps(e).encode() + b"\n" for e in events[i : i + 5]))
        for i in range(0, len(events), 5)
    )
    path.write_bytes(data[: len(data) - cut] if cut else data)
    return path


def outcome(home: Path, exit_code: int | None) -> Any:
    reader = StreamReader(get_interpreter("deepseek"))
    reader.line(b"Done: handed to a human.")  # stdout: the last assistant text, plain
    reader.line(b"")
    reader_of = get_session_reader("deepseek")
    assert reader_of is not None
    reader.steps(reader_of(home, exit_code))
    return harness_outcome(reader, exit_code, "deepseek")


def test_a_completed_turn_completes_with_its_text(tmp_path: Path) -> None:
    write_log(tmp_path, completed_turn())
    assert outcome(tmp_path, 0) == Complete({"text": "Done: handed to a human."})
    steps = read_session(tmp_path, 0)
    assert steps == [Message("Done: handed to a human."), Completed()]  # the reasoning block is not prose


def test_an_error_turn_end_fails_with_the_vendor_code_and_message(tmp_path: Path) -> None:
    failed = [*completed_turn()[:3], event("turn/end", {"turn": 1, "reason": {"kind": "error", "error": {
        "message": "runner scripted model, injected fault error@1", "code": "SERVER", "status": 500}}}, 9)]
    write_log(tmp_path, failed)
    result = outcome(tmp_path, 1)
    assert isinstance(result, Fail)
    assert (result.error.code, result.error.message, result.error.retryable) == (
        "SERVER", "runner scripted model, injected fault error@1", True)


def test_sigterm_exit_0_without_turn_end_is_not_a_completed_turn(tmp_path: Path) -> None:
    # measured: SIGTERM -> exit 0, stdout a bare newline, and the log stops before any turn/end
    write_log(tmp_path, completed_turn()[:5])
    result = outcome(tmp_path, 0)
    assert isinstance(result, Fail)
    assert (result.error.code, result.error.message, result.error.retryable) == (
        "harness_exited_without_outcome", NO_TURN_END, False)


def test_exit_0_with_no_session_log_at_all_is_not_completed_either(tmp_path: Path) -> None:
    assert isinstance(outcome(tmp_path, 0), Fail)
    assert isinstance(outcome(tmp_path / "missing", 0), Fail)


def test_a_non_zero_exit_without_turn_end_is_left_to_the_exit_code(tmp_path: Path) -> None:
    # e.g. the MCP server failed to start: dsh exits 1 before any turn
    write_log(tmp_path, completed_turn()[:2])
    assert read_session(tmp_path, 1) == []
    result = outcome(tmp_path, 1)
    assert isinstance(result, Fail) and result.error.code == "harness_exited_without_outcome"
    assert "code 1" in result.error.message


def test_a_log_cut_short_is_read_as_far_as_it_goes(tmp_path: Path) -> None:
    path = write_log(tmp_path, completed_turn() * 3, cut=20)  # the last zstd frame without its end
    events = read_log(path)
    assert len(events) == 20 and events[0] == HEADER  # the last frame's one event is lost
    steps = read_session(tmp_path, 0)
    assert Completed() in steps  # the turn/ends before the cut were read
    junk = tmp_path / "junk"
    path = write_log(junk, completed_turn()[:4])
    path.write_bytes(path.read_bytes() + b"not zstd at all")
    assert [e["type"] for e in read_log(path)] == ["session", "approval/policy", "turn/start", "session/title"]


def test_a_line_that_is_not_json_ends_the_reading(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "x" / "session-2" / "session.jsonl.zstd"
    path.parent.mkdir(parents=True)
    lines = [json.dumps(HEADER), "{broken", json.dumps(completed_turn()[-1])]
    path.write_bytes(zstandard.ZstdCompressor().compress("\n".join(lines).encode()))
    assert read_log(path) == [HEADER]
    assert isinstance(read_session(tmp_path, 0)[-1], Failed)


def test_logs_are_read_oldest_first_and_the_first_terminal_wins(tmp_path: Path) -> None:
    first = write_log(tmp_path, completed_turn(), session="session-a")
    error = event("turn/end", {"turn": 1, "reason": {"kind": "aborted"}})
    second = write_log(tmp_path, [HEADER, error], session="session-b")
    os.utime(first, ns=(1, 1))
    os.utime(second, ns=(2, 2))
    assert session_logs(tmp_path) == [first, second]
    assert outcome(tmp_path, 0) == Complete({"text": "Done: handed to a human."})


def test_unparseable_tool_arguments_in_the_log_fail_the_turn(tmp_path: Path) -> None:
    bad = event("tool/call", {"callId": "c1", "name": ESCALATE, "arguments": "{not json"})
    write_log(tmp_path, [HEADER, bad, completed_turn()[-1]])
    result = outcome(tmp_path, 0)
    assert isinstance(result, Fail) and result.error.code == "harness_arguments_unparseable"


def test_only_deepseek_has_a_session_reader() -> None:
    assert get_session_reader("deepseek") is read_session
    assert all(get_session_reader(name) is None for name in INTERPRETERS if name != "deepseek")


def test_a_small_log_that_inflates_past_the_bound_costs_a_piece_not_the_bound(tmp_path: Path) -> None:
    """A few KB of zstd that would inflate to 1 GiB after the turn's events: the events are read, the inflating
    stops at the bound, and what runner holds meanwhile is a piece and a line (measured with tracemalloc, which
    counts every bytes object), not the 64 MiB bound, let alone the GiB."""
    path = write_log(tmp_path, completed_turn())
    bomb_line = zstandard.ZstdCompressor(level=3).compress(b"\n" + b" " * (256 * 1024 * 1024))
    path.write_bytes(path.read_bytes() + bomb_line * 4)
    tracemalloc.start()
    try:
        steps = read_session(tmp_path, 0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert Completed() in steps and len(read_log(path)) == len(completed_turn())
    assert peak < 16 * 1024 * 1024, f"reading the log held {peak / 2**20:.0f} MiB"


def test_a_line_nested_past_the_bound_ends_the_reading_there(tmp_path: Path) -> None:
    path = tmp_path / "sessions" / "x" / "session-3" / "session.jsonl.zstd"
    path.parent.mkdir(parents=True)
    deep = '{"type": "turn/end", "data": ' + "[" * 100_000 + "]" * 100_000 + "}"
    lines = [json.dumps(HEADER), deep, json.dumps(completed_turn()[-1])]
    path.write_bytes(zstandard.ZstdCompressor().compress("\n".join(lines).encode()))
    assert read_log(path) == [HEADER]
