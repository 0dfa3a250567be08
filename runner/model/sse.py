"""Server-sent events: encoding what the scripted model sends, and parsing what an upstream sends."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class SseEvent:
    data: str
    event: str | None = None

    @classmethod
    def json(cls, payload: Any, event: str | None = None) -> SseEvent:
        return cls(json.dumps(payload, separators=(",", ":"), ensure_ascii=False), event)

    def encode(self) -> bytes:
        lines = [f"event: {self.event}"] if self.event else []
        lines += [f"data: {line}" for line in self.data.split("\n")]
        return ("\n".join(lines) + "\n\n").encode()

    def to_log(self) -> dict[str, Any]:
        """``{"event": ..., "data": <parsed JSON, or the raw text>}`` for the exchange log."""
        try:
            data: Any = json.loads(self.data)
        except ValueError:
            data = self.data
        body: dict[str, Any] = {"data": data}
        if self.event:
            body["event"] = self.event
        return body


class SseParser:
    """Incremental SSE parser (the WHATWG event-stream rules minus ``id``/``retry`` bookkeeping)."""

    def __init__(self) -> None:
        self._buffer = ""
        self._event: str | None = None
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
                return None
            event = SseEvent("\n".join(self._data), self._event)
            self._event, self._data = None, []
            return event
        if line.startswith(":"):
            return None
        name, _, value = line.partition(":")
        value = value[1:] if value.startswith(" ") else value
        if name == "event":
            self._event = value
        elif name == "data":
            self._data.append(value)
        return None
