"""The exchange log: one JSON line per model request, scrubbed, with a bounded copy of the answer.

Each record holds the request (method, path, query, headers with credentials redacted, JSON body),
the dialect, the scripted model's ``step`` and decision (or, live, the upstream URL), the response
(status; for a stream the SSE events, each ``{"event"?, "data"}`` with ``data`` parsed as JSON when
it is JSON; otherwise the body), how the exchange ended, and its duration. The copy of a response
(and of a request body) stops at :data:`MAX_CAPTURE_BYTES` with a truncation note; the client still
gets everything.

Every string in a record passes through the turn's :class:`~runner.turn.scrub.Scrubber` (and the
live credential itself is replaced, whatever its length), and so does the finished line; headers
that carry credentials are redacted by name regardless of their value.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from runner.model.sse import SseEvent, SseParser
from runner.turn.scrub import Scrubber

MAX_CAPTURE_BYTES = 4 * 1024 * 1024
REDACTED = "[redacted]"
CREDENTIAL_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie", "set-cookie"}
)
MIN_EXTRA_SECRET = 4


def redact_headers(headers: Iterable[tuple[str, str]]) -> dict[str, str]:
    """Headers for the log: lower-cased names, credential-bearing ones redacted, repeats joined."""
    out: dict[str, str] = {}
    for name, value in headers:
        key = name.lower()
        value = REDACTED if key in CREDENTIAL_HEADERS else value
        out[key] = f"{out[key]}, {value}" if key in out else value
    return out


def classify_auth(headers: Iterable[tuple[str, str]], placeholder: str) -> str:
    """What credential the client presented: ``placeholder``, ``none`` or ``other`` (never the value)."""
    values = [v for n, v in headers if n.lower() in ("authorization", "x-api-key", "x-goog-api-key", "api-key")]
    if not values:
        return "none"
    stripped = [v.removeprefix("Bearer ").removeprefix("bearer ").strip() for v in values]
    return "placeholder" if all(v == placeholder for v in stripped) else "other"


def body_for_log(raw: bytes, limit: int = MAX_CAPTURE_BYTES) -> Any:
    """A request body for the log: the parsed JSON, else text; bounded."""
    if len(raw) > limit:
        return {"truncated": f"request body of {len(raw)} bytes; first {limit} bytes kept",
                "text": raw[:limit].decode("utf-8", "replace")}
    if not raw:
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return {"text": raw.decode("utf-8", "replace")}


class Capture:
    """A bounded copy of one response as it is sent: SSE events, or the raw body."""

    def __init__(self, *, sse: bool, limit: int = MAX_CAPTURE_BYTES) -> None:
        self.sse = sse
        self.limit = limit
        self.total = 0
        self.kept = 0
        self.events: list[dict[str, Any]] = []
        self._chunks: list[bytes] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._parser = SseParser()

    @property
    def truncated(self) -> bool:
        return self.total > self.kept

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self.limit - self.kept
        if room <= 0:
            return
        piece = chunk[:room]
        self.kept += len(piece)
        if self.sse:
            self.events += [e.to_log() for e in self._parser.feed(self._decoder.decode(piece))]
        else:
            self._chunks.append(piece)

    def add_events(self, events: Iterable[SseEvent]) -> None:
        for event in events:
            self.add(event.encode())

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"bytes": self.total}
        if self.sse:
            if not self.truncated:
                self.events += [e.to_log() for e in self._parser.feed(self._decoder.decode(b"", final=True))]
                self.events += [e.to_log() for e in self._parser.flush()]
            body["events"] = self.events
        else:
            raw = b"".join(self._chunks)
            text = raw.decode("utf-8", "replace")
            try:
                body["body"] = json.loads(text) if text and not self.truncated else None
            except ValueError:
                body["body"] = None
            if body["body"] is None:
                body["chunks"] = [c.decode("utf-8", "replace") for c in self._chunks]
                del body["body"]
        if self.truncated:
            body["truncated"] = f"response of {self.total} bytes; the copy stops after {self.kept} bytes"
        return body


class ExchangeLog:
    """Appends scrubbed exchange records to a JSONL file."""

    def __init__(self, path: Path, scrubber: Scrubber, secrets: Mapping[str, str] | None = None) -> None:
        self.path = path
        self.scrubber = scrubber
        self._secrets = sorted(
            ((v, n) for n, v in (secrets or {}).items() if len(v) >= MIN_EXTRA_SECRET), key=lambda p: -len(p[0])
        )
        self.count = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = path.open("a", encoding="utf-8")

    def scrub(self, text: str) -> str:
        text = self.scrubber.text(text)
        for secret, name in self._secrets:
            text = text.replace(secret, f"[scrubbed:{name}]")
        return text

    def _scrub_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            return {self.scrub(str(k)): self._scrub_value(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self._scrub_value(v) for v in value]
        return value

    def write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            return
        self.count += 1
        full = {"ts": datetime.now(UTC).isoformat(timespec="milliseconds"), "seq": self.count, **record}
        line = self.scrub(json.dumps(self._scrub_value(full), ensure_ascii=False, separators=(",", ":")))
        self._file.write(line + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
