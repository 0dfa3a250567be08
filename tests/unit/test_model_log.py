"""The exchange log: scrubbing, redaction, bounded capture."""

from __future__ import annotations

import json
from pathlib import Path

from runner.core.scrub import Scrubber
from runner.model.exchange_log import Capture, ExchangeLog, body_for_log, classify_auth, redact_headers
from runner.model.sse import SseEvent, SseParser

SECRET = "sk-live-0123456789abcdef"


def test_headers_are_redacted_by_name() -> None:
    got = redact_headers([("Authorization", "Bearer x"), ("X-Api-Key", "x"), ("x-goog-api-key", "x"),
                          ("Accept", "a"), ("accept", "b")])
    assert got == {"authorization": "[redacted]", "x-api-key": "[redacted]", "x-goog-api-key": "[redacted]",
                   "accept": "a, b"}


def test_classify_auth() -> None:
    assert classify_auth([("authorization", "Bearer pk")], "pk") == "placeholder"
    assert classify_auth([("x-api-key", "pk")], "pk") == "placeholder"
    assert classify_auth([("x-api-key", "other")], "pk") == "other"
    assert classify_auth([("accept", "*/*")], "pk") == "none"


def test_log_scrubs_values_keys_and_escaped_forms(tmp_path: Path) -> None:
    scrubber = Scrubber({"VENDOR_API_KEY": SECRET})
    quoted = 'sk-"quoted"-secret'
    log = ExchangeLog(tmp_path / "x.jsonl", scrubber, {"EXTRA": quoted})
    log.write({"request": {"body": {"text": f"the key is {SECRET}", SECRET: 1, "q": f"<{quoted}>"}}})
    log.write({"n": 2})
    log.close()
    log.write({"after": "close"})  # ignored
    raw = (tmp_path / "x.jsonl").read_text()
    assert SECRET not in raw and "quoted" not in raw
    records = [json.loads(line) for line in raw.splitlines()]
    assert [r["seq"] for r in records] == [1, 2]
    body = records[0]["request"]["body"]
    assert body["text"] == "the key is [scrubbed:VENDOR_API_KEY]" and "[scrubbed:VENDOR_API_KEY]" in body
    assert body["q"] == "<[scrubbed:EXTRA]>"


def test_capture_sse_events() -> None:
    capture = Capture(sse=True)
    stream = SseEvent.json({"a": 1}, "one").encode() + SseEvent("[DONE]").encode()
    for i in range(0, len(stream), 3):  # byte-split, including inside UTF-8 sequences
        capture.add(stream[i:i + 3])
    assert capture.to_json() == {"bytes": len(stream), "events": [{"event": "one", "data": {"a": 1}},
                                                                  {"data": "[DONE]"}]}


def test_capture_is_bounded() -> None:
    capture = Capture(sse=True, limit=50)
    capture.add_events([SseEvent.json({"n": i, "pad": "x" * 10}) for i in range(10)])
    got = capture.to_json()
    assert got["bytes"] > 50 and "truncated" in got and len(got["events"]) < 10
    raw = Capture(sse=False, limit=4)
    raw.add(b'{"a": 1}')
    assert raw.to_json() == {"bytes": 8, "chunks": ['{"a"'], "truncated": raw.to_json()["truncated"]}


def test_capture_raw_json_and_text() -> None:
    capture = Capture(sse=False)
    capture.add(b'{"a":')
    capture.add(b" 1}")
    assert capture.to_json() == {"bytes": 8, "body": {"a": 1}, "raw": '{"a": 1}'}  # raw: spacing kept for replay
    text = Capture(sse=False)
    text.add(b"not json")
    assert text.to_json() == {"bytes": 8, "chunks": ["not json"]}


def test_body_for_log() -> None:
    assert body_for_log(b"") is None
    assert body_for_log(b'{"a":1}') == {"a": 1}
    assert body_for_log(b"x=1") == {"text": "x=1"}
    assert "truncated" in body_for_log(b"x" * 10, limit=4)


def test_sse_parser_multiline_comments_and_crlf() -> None:
    parser = SseParser()
    events = parser.feed(": comment\r\nevent: e\r\ndata: a\r\ndata: b\r\n\r\ndata: tail")
    assert events == [SseEvent("a\nb", "e")]
    assert parser.flush() == [SseEvent("tail")]
    assert SseEvent("a\nb", "e").encode() == b"event: e\ndata: a\ndata: b\n\n"
