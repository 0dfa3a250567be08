"""Secrets never reach a file a run writes: the scrubber, the stream sinks, the session copy, the
exchange log. Each test puts the key where a CLI or a model could put it and reads back every byte
that was written."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from runner.core.scrub import MIN_DANGLING, Scrubber, spellings
from runner.harnesses.interpreters import get_interpreter
from runner.harnesses.stream import LineSplitter, StreamReader, Tail, harness_outcome
from runner.intake.files import Tree
from runner.model.exchange_log import Capture, ExchangeLog, body_for_log
from runner.model.sse import SseEvent
from runner.turn.collect import copy_session_transcript
from runner.turn.transcript import StreamSink

KEY = "sk-runner-FAKE-0123456789abcdef"
MARK = "[scrubbed:ANTHROPIC_API_KEY]"
ENV = {"ANTHROPIC_API_KEY": KEY, "PATH": "/usr/bin"}


def scrubber() -> Scrubber:
    return Scrubber(ENV)


def no_key_anywhere(root: Path) -> None:
    for path in [root] if root.is_file() else [p for p in root.rglob("*") if p.is_file()]:
        data = path.read_bytes()
        assert KEY.encode() not in data, f"{path} holds the key"
        assert KEY[: len(KEY) // 2].encode() not in data, f"{path} holds half the key"


# --- the scrubber itself -----------------------------------------------------------------------


def test_values_of_secret_named_and_declared_variables_are_replaced_in_text_and_bytes() -> None:
    s = Scrubber({**ENV, "MY_PLAIN": "plain-value-123", "DECLARED": "declared-value"}, ["DECLARED"])
    assert s.text(f"a {KEY} b declared-value") == f"a {MARK} b [scrubbed:DECLARED]"
    assert s.raw(f"{KEY}!".encode()) == f"{MARK}!".encode()
    assert s.mask(KEY.encode()) == b"*" * len(KEY)
    assert s.text("plain-value-123") == "plain-value-123"  # neither declared nor secret-named
    assert not Scrubber({"API_KEY": "short"}).active  # too short to replace without wrecking text


def test_json_escaped_spellings_of_a_secret_are_replaced_too() -> None:
    odd = 'k"é\\y-0123456789'
    s = Scrubber({"ODD_TOKEN": odd})
    assert set(spellings(odd)) == {odd, 'k\\"é\\\\y-0123456789', 'k\\"\\u00e9\\\\y-0123456789'}
    for encoded in (json.dumps({"v": odd}), json.dumps({"v": odd}, ensure_ascii=False)):
        assert json.loads(s.text(encoded)) == {"v": "[scrubbed:ODD_TOKEN]"}


def test_a_cut_text_loses_a_dangling_start_of_a_secret_but_a_short_one_is_left() -> None:
    s = scrubber()
    assert s.cut_text(f"tail {KEY[:12]}") == f"tail {MARK}"
    assert s.cut_raw(f"tail {KEY[:12]}".encode()) == f"tail {MARK}".encode()
    short = KEY[: MIN_DANGLING - 1]
    assert s.cut_text(f"tail {short}") == f"tail {short}"
    assert s.cut_text(f"{KEY} and {KEY[:-1]}") == f"{MARK} and {MARK}"


# --- stdout and stderr -------------------------------------------------------------------------


def sink(tmp_path: Path, reader: StreamReader | None = None) -> tuple[StreamSink, Tail]:
    tail = Tail()
    return StreamSink(tmp_path / "stdout.log", scrubber(), tail, reader), tail


def test_a_key_split_across_chunks_at_every_boundary_is_scrubbed_in_the_file_the_tail_and_the_outcome(
    tmp_path: Path,
) -> None:
    frame = json.dumps({"type": "result", "subtype": "success", "is_error": False, "result": f"the key is {KEY}"})
    data = f"echo {KEY}\n{frame}\n".encode()
    start = data.index(KEY.encode())
    for cut in range(start, start + len(KEY) + 1):
        reader = StreamReader(get_interpreter("claude-code"))
        out, tail = sink(tmp_path, reader)
        out.feed(data[:cut])
        out.feed(data[cut:])
        out.close()
        no_key_anywhere(out.path)
        assert out.path.read_text() == data.decode().replace(KEY, MARK)
        assert not any(KEY in line for line in tail.lines())
        # what the CLI said is read from the scrubbed frame, so the result and runner's stdout hold no key
        outcome = json.dumps(harness_outcome(reader, 0, "claude-code").to_json())
        assert KEY not in outcome and MARK in outcome


def test_a_key_fed_one_byte_at_a_time_with_no_final_newline_is_scrubbed(tmp_path: Path) -> None:
    out, _ = sink(tmp_path)
    for byte in f"x{KEY}y".encode():
        out.feed(bytes([byte]))
    out.close()
    assert out.path.read_text() == f"x{MARK}y\n"


def test_a_line_cut_at_the_frame_limit_inside_the_key_keeps_no_start_of_it(tmp_path: Path) -> None:
    for keep in range(MIN_DANGLING, len(KEY)):
        out, tail = sink(tmp_path)
        out.splitter = LineSplitter(limit=40)
        line = "a" * (40 - keep) + KEY + "b" * 100
        out.feed(line[:30].encode())
        out.feed(line[30:].encode() + b"\nnext\n")
        out.close()
        text = out.path.read_text()
        assert KEY[:keep] not in text and MARK in text and "next" in text
        assert not any(KEY[:keep] in t for t in tail.lines())


# --- the CLI's own session transcript ----------------------------------------------------------


def test_a_session_folder_is_copied_with_every_file_scrubbed(tmp_path: Path) -> None:
    home = tmp_path / "home" / ".claude" / "projects" / "-work"
    home.mkdir(parents=True)
    (home / "s1.jsonl").write_text(json.dumps({"message": {"content": [{"text": f"key {KEY}"}]}}) + "\n")
    (home / "nested").mkdir()
    (home / "nested" / "blob.bin").write_bytes(b"\x00\x01" + KEY.encode() + b"\xff")
    copied = copy_session_transcript(Tree(tmp_path, "home/.claude/projects"), tmp_path / "out", scrubber()).files
    assert sorted(copied) == ["-work/nested/blob.bin", "-work/s1.jsonl"]
    no_key_anywhere(tmp_path / "out")
    assert (tmp_path / "out" / "-work" / "nested" / "blob.bin").stat().st_size == len(KEY) + 3


def test_a_key_stored_across_sqlite_overflow_pages_is_scrubbed_through_sqlite(tmp_path: Path) -> None:
    store = tmp_path / "home" / "opencode"
    store.mkdir(parents=True)
    with sqlite3.connect(store / "opencode.db") as db:
        db.execute("PRAGMA page_size = 1024")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("CREATE TABLE part (id INTEGER PRIMARY KEY, data TEXT, raw BLOB)")
        for n in range(0, 1100, 3):  # the key at every offset: some straddle an overflow page boundary
            text = "a" * n + KEY + "b" * 1200
            db.execute("INSERT INTO part (data, raw) VALUES (?, ?)", (text, text.encode()))
    db.close()
    written = b"".join(p.read_bytes() for p in store.iterdir())
    rows = 2 * len(range(0, 1100, 3))
    assert written.count(KEY.encode()) < rows, "precondition: some copies of the key are not contiguous on disk"

    copy_session_transcript(Tree(tmp_path, "home/opencode"), tmp_path / "out", scrubber())
    no_key_anywhere(tmp_path / "out")
    with sqlite3.connect(tmp_path / "out" / "opencode.db") as db:
        values = db.execute("SELECT data, raw FROM part").fetchall()
    db.close()
    assert len(values) == rows // 2
    assert all(KEY not in data and KEY.encode() not in raw for data, raw in values)
    # masked byte for byte where the key was contiguous on disk, replaced through SQLite where it was not
    assert all(MARK in data or "*" * len(KEY) in data for data, _ in values)
    assert any(MARK in data for data, _ in values)
    assert all(isinstance(raw, bytes) for _, raw in values)


def test_a_key_inside_a_zstd_session_log_is_scrubbed_inside(tmp_path: Path) -> None:
    # dsh keeps its session log zstd-compressed: the key's bytes never show in the file as stored
    import zstandard

    from runner.harnesses.deepseek.session import read_log

    log = tmp_path / "src" / "sessions" / "-w-" / "session-1" / "session.jsonl.zstd"
    log.parent.mkdir(parents=True)
    lines = [json.dumps({"type": "assistant/message", "data": {"text": f"key {KEY} {i}"}}) for i in range(50)]
    data = zstandard.ZstdCompressor().compress("\n".join(lines).encode() + b"\n")
    log.write_bytes(data + data[:30])  # and a frame cut short at the end
    assert log.read_bytes().count(KEY.encode()) < 50, "precondition: a byte search misses copies of the key"

    copy_session_transcript(Tree(tmp_path, "src"), tmp_path / "out", scrubber())
    copied = tmp_path / "out" / "sessions" / "-w-" / "session-1" / "session.jsonl.zstd"
    events = read_log(copied)
    assert len(events) == 50 and all(KEY not in json.dumps(e) for e in events)
    assert events[0]["data"]["text"] == f"key {MARK} 0"
    # with nothing to scrub, the file is copied as it is
    copy_session_transcript(Tree(tmp_path, "src"), tmp_path / "plain", Scrubber({}))
    assert (tmp_path / "plain" / "sessions" / "-w-" / "session-1" / "session.jsonl.zstd").read_bytes() == \
        log.read_bytes()


def test_a_file_that_only_looks_like_a_database_is_not_kept(tmp_path: Path) -> None:
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "broken.db").write_bytes(b"SQLite format 3\x00" + b"\x00" * 80 + KEY.encode())
    assert copy_session_transcript(Tree(tmp_path, "src"), tmp_path / "out", scrubber()).files == []
    no_key_anywhere(tmp_path / "out")


# --- the model exchange log --------------------------------------------------------------------


def log_of(tmp_path: Path, record: dict[str, object], secrets: dict[str, str] | None = None) -> str:
    log = ExchangeLog(tmp_path / "model-exchanges.jsonl", scrubber(), secrets)
    log.write(record)
    log.close()
    no_key_anywhere(tmp_path / "model-exchanges.jsonl")
    return (tmp_path / "model-exchanges.jsonl").read_text()


def test_a_text_answer_split_across_chunks_is_logged_as_one_scrubbed_text(tmp_path: Path) -> None:
    body = f"plain text with {KEY} inside".encode()
    capture = Capture(sse=False)
    cut = body.index(KEY.encode()) + 7
    capture.add(body[:cut])
    capture.add(body[cut:])
    record = json.loads(log_of(tmp_path, {"response": capture.to_json()}))
    assert record["response"]["chunks"] == [f"plain text with {MARK} inside"]


def test_a_bounded_copy_cut_inside_the_key_keeps_no_start_of_it(tmp_path: Path) -> None:
    capture = Capture(sse=False, limit=30)
    capture.add(("x" * 20 + KEY).encode())
    request = body_for_log(("y" * 25 + KEY).encode(), limit=40)
    record = json.loads(log_of(tmp_path, {"request": {"body": request}, "response": capture.to_json()}))
    assert record["response"]["chunks"] == ["x" * 20 + MARK]
    assert record["request"]["body"]["text"] == "y" * 25 + MARK


def test_a_key_streamed_a_few_characters_per_event_is_removed_from_the_pieces(tmp_path: Path) -> None:
    pieces = ["The key I was given is ", KEY[:5], KEY[5:9], KEY[9:20], KEY[20:] + ".", " Done."]
    capture = Capture(sse=True)
    capture.add(SseEvent(json.dumps({"type": "message_start"}), "message_start").encode())
    for piece in pieces:  # Anthropic's text deltas; a space after the colon, so each keeps its raw text
        data = json.dumps({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}})
        capture.add(SseEvent(data, "content_block_delta").encode())
    record = json.loads(log_of(tmp_path, {"response": {"stream": True, **capture.to_json()}}))
    events = record["response"]["events"]
    texts = [e["data"]["delta"]["text"] for e in events if e.get("event") == "content_block_delta"]
    assert "".join(texts) == f"The key I was given is {MARK}. Done."
    replayed = b"".join(SseEvent.from_log(e).encode() for e in events).decode()
    assert KEY[:5] not in replayed and KEY[20:] not in replayed  # what a replay sends holds no piece
    assert "The key I was given is " in replayed and "message_start" in replayed


def test_the_live_credential_is_scrubbed_whatever_its_variable_is_called(tmp_path: Path) -> None:
    other = "sk-other-credential-9876"
    text = log_of(tmp_path, {"body": f"{KEY} {other}"}, {"ZAI_SECRET_THING": other})
    assert MARK in text and "[scrubbed:ZAI_SECRET_THING]" in text and other not in text


@pytest.mark.parametrize("form", ["json", "escaped-text"])
def test_a_key_inside_raw_json_text_in_the_log_is_scrubbed(tmp_path: Path, form: str) -> None:
    inner = json.dumps({"echo": KEY})
    value = {"raw": inner} if form == "json" else {"text": json.dumps(inner)}
    text = log_of(tmp_path, {"response": value})
    assert MARK in text


def test_a_value_built_in_memory_is_scrubbed_throughout() -> None:
    value = {"reason": f"key {KEY}", KEY: [1, None, {"deep": (KEY,)}]}
    assert scrubber().value(value) == {"reason": f"key {MARK}", MARK: [1, None, {"deep": [MARK]}]}
