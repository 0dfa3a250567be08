"""From stdout bytes to the CLI's own outcome (§3.2, §8 item 8), and scrubbing."""

from __future__ import annotations

import json

from runner.core.outcomes import Complete, Fail
from runner.core.scrub import Scrubber
from runner.harnesses.interpreters import get_interpreter
from runner.harnesses.stream import LineSplitter, StreamReader, Tail, harness_outcome


def frames(*objs: object) -> bytes:
    return b"".join(json.dumps(o).encode() + b"\n" for o in objs)


def read(data: bytes) -> StreamReader:
    reader = StreamReader(get_interpreter("jsonl"))
    splitter = LineSplitter()
    for line, oversized in splitter.feed(data):
        reader.line(line, oversized)
    for line, oversized in splitter.close():
        reader.line(line, oversized)
    return reader


def test_lines_split_across_chunks_and_oversized_lines_are_cut_not_kept() -> None:
    splitter = LineSplitter(limit=8)
    out = list(splitter.feed(b"abc")) + list(splitter.feed(b"def\n12345678901234"))
    out += list(splitter.feed(b"5\nxy")) + list(splitter.close())
    assert out == [(b"abcdef", False), (b"", True), (b"xy", False)]


def test_the_first_terminal_wins_and_beats_the_exit_code() -> None:
    reader = read(frames(
        {"type": "message", "text": "one"},
        {"type": "turn.failed", "error": {"code": "boom", "message": "it broke"}},
        {"type": "turn.completed", "text": "late"},
    ))
    outcome = harness_outcome(reader, 0, "x")
    assert isinstance(outcome, Fail) and outcome.error.code == "boom" and outcome.error.retryable is True


def test_complete_without_text_takes_the_messages_joined_at_that_moment() -> None:
    reader = read(frames({"type": "message", "text": "a"}, {"type": "message", "text": "b"},
                         {"type": "turn.completed"}, {"type": "message", "text": "after"}))
    assert harness_outcome(reader, 1, "x") == Complete({"text": "a\nb"})


def test_exit_zero_without_a_terminal_completes_with_the_prose_and_nonzero_fails() -> None:
    reader = read(b"banner, not json\n" + frames({"type": "message", "text": "hi"}) + b"[1,2]\n")
    assert harness_outcome(reader, 0, "x") == Complete({"text": "hi"})
    failed = harness_outcome(reader, 3, "codex")
    assert isinstance(failed, Fail) and failed.error.code == "harness_exited_without_outcome"
    assert failed.error.message == "The codex CLI exited with code 3 without completing the turn."
    assert reader.non_json_lines == 2  # the banner and the array: lines that are not frames


def test_mcp_startup_report_is_read() -> None:
    reader = read(frames({"type": "session.started", "mcp_servers": [
        {"name": "sharedos", "status": "failed", "error": "connect: no such file"}]}))
    (startup,) = reader.startup
    assert (startup.server, startup.connected, startup.detail) == ("sharedos", False, "connect: no such file")


def test_tool_call_frames_on_stdout_are_never_calls() -> None:
    reader = read(frames({"type": "tool.call", "name": "files.read", "arguments": {}}))
    assert reader.frames == 1 and reader.terminal is None and reader.messages == []


def test_exit_code_interpreter_reads_no_frames() -> None:
    reader = StreamReader(get_interpreter("exit-code"))
    reader.line(frames({"type": "turn.failed", "error": {"code": "x"}}).strip())
    assert reader.terminal is None


def test_tail_is_bounded_in_lines_and_bytes() -> None:
    tail = Tail(max_lines=3, max_bytes=20, max_line=8)
    for n in range(10):
        tail.add(f"line-{n}")
    assert tail.lines() == ["line-7", "line-8", "line-9"]
    tail = Tail(max_lines=3, max_bytes=40, max_line=8)
    tail.add("x" * 100)
    assert tail.lines() == ["xxxxxxxx… [92 more characters]"]
    tail.add("y" * 100)
    assert len(tail.lines()) == 1 and tail.dropped == 1


def test_scrubber_replaces_host_secrets_by_name() -> None:
    env = {"OPENAI_API_KEY": "sk-test-1234567890", "HOME": "/root", "MY_TOKEN": "short", "PLAIN": "sk-test-1234567890x"}
    scrub = Scrubber(env, declared=["PLAIN"])
    assert scrub.text("key=sk-test-1234567890x!") == "key=[scrubbed:PLAIN]!"
    assert scrub.raw(b"k sk-test-1234567890") == b"k [scrubbed:OPENAI_API_KEY]"
    assert scrub.text("short /root") == "short /root"  # too short to be a secret; not a secret name


def test_a_frame_nested_past_the_bound_is_malformed_output_not_a_recursion_error() -> None:
    deep = b'{"type": "message", "text": ' + b"[" * 100_000 + b"]" * 100_000 + b"}\n"
    reader = read(frames({"type": "message", "text": "hi"}) + deep + b'{"type": "message"\n')
    assert (reader.frames, reader.malformed, reader.messages) == (1, 2, ["hi"])
    for exit_code in (0, 3, None):
        failed = harness_outcome(reader, exit_code, "x")
        assert isinstance(failed, Fail) and failed.error.code == "harness_malformed_output"
        assert failed.error.retryable is False
        assert failed.error.message == (
            f"The x CLI printed 2 frame(s) runner could not read and none that ended the turn (exit code {exit_code}); "
            "the first: JSON nested deeper than 128 levels.")


def test_a_terminal_frame_still_decides_beside_malformed_ones() -> None:
    reader = read(b"{" * 200 + b"\n" + frames({"type": "turn.completed", "text": "done"}))
    assert reader.malformed == 1 and harness_outcome(reader, 0, "x") == Complete({"text": "done"})


def test_lone_surrogates_and_invalid_utf8_in_frames_are_read_as_replacement_characters() -> None:
    reader = read(b'{"type": "message", "text": "\\ud83d \xff"}\n{"type": "turn.failed", "error": '
                  b'{"code": "\\udc00", "message": "\\ud800 gone"}}\n')
    failed = harness_outcome(reader, 0, "x")
    assert reader.messages == ["\ufffd \ufffd"] and isinstance(failed, Fail)
    assert (failed.error.code, failed.error.message) == ("\ufffd", "\ufffd gone")
    json.dumps(failed.to_json(), ensure_ascii=False).encode("utf-8")  # writable as the artifacts are


def _kept(data: bytes) -> StreamReader:
    """``data`` as the stdout of a CLI whose report is one JSON document (Nanocoder's), kept as a turn keeps it."""
    reader = StreamReader(get_interpreter("nanocoder"))
    splitter = LineSplitter()
    for batch in (splitter.feed(data), splitter.close()):
        reader.keep(batch)
        for line, oversized in batch:
            reader.line(line, oversized)
    return reader


def test_a_document_too_deep_or_too_big_to_read_is_malformed_output_naming_why() -> None:
    """A pretty-printed report nested past the intake's depth, or longer than the kept bound, fails the turn as the
    CLI's malformed output whose cause is the document's, not its first ``{`` line's "not JSON"."""
    depth = 100_000
    nested = b'{\n  "kind": "success",\n  "toolCalls": ' + b"[\n" * depth + b"]\n" * depth + b"}\n"
    oversized = b'{\n  "kind": "success",\n  "toolCalls": [\n' + b'    "call",\n' * 120_000 + b'    "end"\n  ]\n}\n'
    for data, cause in ((nested, "one JSON document on stdout: JSON nested deeper than 128 levels"),
                        (oversized, "one JSON document on stdout over the bound of 1048576 bytes")):
        failed = harness_outcome(_kept(data), 0, "nanocoder")
        assert isinstance(failed, Fail) and failed.error.code == "harness_malformed_output"
        assert failed.error.message.endswith(f"the first: {cause}."), failed.error.message
    # a stdout of frames is never a document: its first malformed line stays the cause
    framed = harness_outcome(_kept(b'{"kind": "noise"}\n{"kind": \n'), 0, "nanocoder")
    assert isinstance(framed, Fail) and "one JSON document" not in framed.error.message
