"""Server-sent events: encoding what the scripted model sends, and parsing what an upstream sends.

In the exchange log an event is ``{"event"?, "id"?, "retry"?, "data", "raw"?}``: ``data`` is the
parsed JSON when the event's data is a JSON object or array, otherwise the text itself; ``raw`` is
the exact data text, present only when re-encoding the parsed ``data`` compactly
(:func:`compact_json`) would not give the same characters back (an upstream that puts spaces after
its colons, escapes non-ASCII, writes ``1e5``, ...). So :meth:`SseEvent.from_log` rebuilds every
logged event's data character for character, which is what replay mode sends. SSE comments
(``: ping``) are not events and are not logged.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from runner.core.outcomes import JsonValue
from runner.intake.payload import Malformed, loads

SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}  # sent with every stream the endpoint makes


def compact_json(value: object) -> str:
    """The JSON encoding the scripted model and the log use: no spaces, UTF-8 kept as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def parse_container(text: str) -> dict[str, JsonValue] | list[JsonValue] | None:
    """``text`` parsed, when it is a JSON object or array; otherwise None."""
    if not text or text.lstrip()[:1] not in ("{", "["):
        return None
    try:
        value = loads(text)
    except Malformed:
        return None
    return value if isinstance(value, dict | list) else None


@dataclass(frozen=True)
class SseEvent:
    data: str
    event: str | None = None
    id: str | None = None
    retry: int | None = None

    @classmethod
    def json(cls, payload: object, event: str | None = None) -> SseEvent:
        return cls(compact_json(payload), event)

    def encode(self) -> bytes:
        lines = [f"event: {self.event}"] if self.event else []
        if self.id is not None:
            lines.append(f"id: {self.id}")
        if self.retry is not None:
            lines.append(f"retry: {self.retry}")
        lines += [f"data: {line}" for line in self.data.split("\n")]
        return ("\n".join(lines) + "\n\n").encode()

    def to_log(self) -> dict[str, JsonValue]:
        """The event for the exchange log (the shape in the module docstring)."""
        parsed = parse_container(self.data)
        body: dict[str, JsonValue] = {"data": self.data if parsed is None else parsed}
        if parsed is not None and compact_json(parsed) != self.data:
            body["raw"] = self.data
        if self.event:
            body["event"] = self.event
        if self.id is not None:
            body["id"] = self.id
        if self.retry is not None:
            body["retry"] = self.retry
        return body

    @classmethod
    def from_log(cls, logged: Mapping[str, JsonValue]) -> SseEvent:
        """The event a logged one was: ``raw`` if present, else ``data`` (text as is, JSON compact)."""
        raw, data = logged.get("raw"), logged.get("data")
        text = raw if isinstance(raw, str) else data if isinstance(data, str) else compact_json(data)
        event, ident, retry = logged.get("event"), logged.get("id"), logged.get("retry")
        return cls(
            text, event if isinstance(event, str) else None, ident if isinstance(ident, str) else None,
            retry if isinstance(retry, int) and not isinstance(retry, bool) else None,
        )


class SseParser:
    """Incremental SSE parser (the WHATWG event-stream rules; ``id`` and ``retry`` are kept on the
    event that carried them, for the log, rather than tracked as stream state)."""

    def __init__(self) -> None:
        self._buffer = ""
        self._event: str | None = None
        self._id: str | None = None
        self._retry: int | None = None
        self._data: list[str] = []

    def feed(self, text: str) -> list[SseEvent]:
        self._buffer += text.replace("\r\n", "\n").replace("\r", "\n")
        out: list[SseEvent] = []
        while "\n" in self._buffer:
            line, self._buffer = self._buffer.split("\n", 1)
            event = self._line(line)
            if event is not None:
                out.append(event)
        return out

    def flush(self) -> list[SseEvent]:
        out = self.feed("\n") if self._buffer else []
        event = self._line("")
        return [*out, event] if event is not None else out

    def _line(self, line: str) -> SseEvent | None:
        if not line:
            if not self._data and self._event is None:
                return None  # a pending id/retry travels with the next event
            event = SseEvent("\n".join(self._data), self._event, self._id, self._retry)
            self._event, self._id, self._retry, self._data = None, None, None, []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        elif name == "id" and "\0" not in value:
            self._id = value
        elif name == "retry" and value.isascii() and value.isdigit():
            self._retry = int(value)
        return None
