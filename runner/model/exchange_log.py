"""The exchange log: one JSON line per model request, scrubbed, with a bounded copy of the answer.

Each record holds ``at`` and ``t``, when the request arrived (the wall clock, ISO-8601 UTC with milliseconds,
and seconds since the turn's start, both from the turn's one clock: :class:`runner.core.timeline.TurnClock`),
``ts`` (the wall clock on that same clock when the line was written, that is when the exchange ended),
``request_seq`` (the request's number in arrival order, 1-based; ``seq`` is the line's number in write
order, which is completion order), the request (method, path, query, headers with credentials redacted,
the JSON body, decoded first when the client gzip- or deflate-compressed it), the dialect, the scripted
model's ``step`` and decision (or, live, the upstream URL; replay, the recorded exchange it served or the
divergence), the response, how the exchange ended, and its duration. A generation request (a model call, not a
model list or a token count) also says ``side_request`` (whether its tools lacked the MCP server's: a title, a
summary, a sub-agent of its own) and, once answered 2xx, ``usage``: the tokens the answer reported
(:class:`runner.core.usage.Usage` as JSON, read from the bytes sent by :mod:`runner.model.usage_meter`), or null when
it reported none; ``usage_unread`` (live) says why part of an answer was not read for usage.

The response is ``status``, ``content_type`` and, where the endpoint passes on more than that,
``headers`` (credential headers redacted); then for a stream ``stream: true`` and the SSE
``events`` (the shape in :mod:`runner.model.sse`: parsed JSON plus, only where re-encoding would
not give the same text back, the exact ``raw`` text), otherwise ``body`` (the parsed JSON, with
``raw`` likewise when its compact encoding is not the text sent) or ``chunks`` (the text, when it is
not JSON), and ``bytes`` (the size as sent). A compressed upstream answer is logged decoded
(gzip, deflate; ``content_encoding`` says so); another encoding is not copied (``not_captured``
says why). So a complete record holds everything replay mode needs to send the answer again.

The copy of a response (and of a request body) stops at :data:`MAX_CAPTURE_BYTES` with a
``truncated`` note; the client still gets everything, but such an exchange cannot be replayed.

A request body is the CLI's, so it is read through the intake (:func:`read_body`): at most
:data:`MAX_REQUEST_BYTES` as received and again once inflated (the inflating stops at the bound), JSON of at
most :data:`~runner.intake.payload.MAX_DEPTH` levels and :data:`MAX_REQUEST_VALUES` values, every string
valid Unicode. A body over a bound is refused by runner itself (its record says why in ``refused``), in every
mode: it never reaches a handler, a vendor or the scripted model.

Every string in a record passes through the turn's :class:`~runner.core.scrub.Scrubber` (and the
live credential itself is replaced, whatever its length), and so does the finished line; headers
that carry credentials are redacted by name regardless of their value. Three places where a secret
would otherwise slip through whole-string scrubbing are handled on purpose: a body that is not JSON
is kept as one text, not as the chunks it arrived in (a secret may straddle two chunks); a copy cut
at the bound loses a dangling start of a secret; and a secret a model streamed in pieces (one
token per SSE event, as vendors do) is found in the joined text of the events' same field and
removed from every piece (an event changed so loses its ``raw`` text).
"""

from __future__ import annotations

import codecs
import json
import time
import zlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, overload

from runner.core.outcomes import JsonValue
from runner.core.scrub import Scrubber
from runner.core.timeline import TurnClock
from runner.intake.payload import Malformed, TooDeep, TooLarge, TooMany, Undecodable, decode_text, inflate, loads
from runner.model.sse import SseEvent, SseParser, compact_json

MAX_CAPTURE_BYTES = 4 * 1024 * 1024
# A model request runner reads: as received, and again once inflated. Far over what a CLI sends in a turn (a
# long conversation with its tools is a few MiB), and small enough that its parsed JSON, at most the values
# below (CPython spends some 60 bytes on each), stays a bounded share of runner's memory.
MAX_REQUEST_BYTES = 16 * 1024 * 1024
MAX_REQUEST_VALUES = 1_000_000
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


def decode_body(raw: bytes, encoding: str, limit: int = MAX_REQUEST_BYTES) -> bytes | None:
    """A request body with its ``content-encoding`` (gzip, deflate, zstd) undone, at most ``limit`` bytes; None if
    that fails or the encoding is another one. Raises :class:`~runner.intake.payload.TooLarge` as soon as it
    inflates past ``limit``."""
    try:
        return inflate(raw, encoding, limit)
    except Undecodable:
        return None


@dataclass(frozen=True)
class RequestBody:
    """A request body as the endpoint reads it: as received (``raw``), inflated (``decoded``; None when it
    could not be), its JSON (None when it is empty or not JSON), and, when runner answers it itself, the
    status and the cause (``refused``)."""

    raw: bytes
    decoded: bytes | None = None
    json: JsonValue = None
    refused: str | None = None
    status: int = 200

    @classmethod
    def over(cls, limit: int) -> RequestBody:
        """A body whose reading stopped at ``limit`` bytes (what was read is not kept)."""
        return cls(b"", refused=f"the request body is over runner's bound of {limit} bytes", status=413)


def read_body(raw: bytes, encoding: str) -> RequestBody:
    """``raw`` (already within :data:`MAX_REQUEST_BYTES`) inflated and parsed through the intake, never raising:
    too large once inflated, or too many values, is refused 413; nested too deep, 400; not JSON is no JSON."""
    try:
        decoded = decode_body(raw, encoding)
    except TooLarge as err:
        return RequestBody(raw, refused=str(err), status=413)
    if not decoded:
        return RequestBody(raw, decoded)
    try:
        return RequestBody(raw, decoded, loads(decoded, max_values=MAX_REQUEST_VALUES))
    except TooMany as err:
        return RequestBody(raw, decoded, refused=str(err), status=413)
    except TooDeep as err:
        return RequestBody(raw, decoded, refused=str(err), status=400)
    except Malformed:
        return RequestBody(raw, decoded)


def body_for_log(raw: bytes, limit: int = MAX_CAPTURE_BYTES, parsed: JsonValue = None) -> JsonValue:
    """A request body for the log: the parsed JSON (``parsed``, when the caller has it already), else text;
    bounded."""
    if len(raw) > limit:
        return {"truncated": f"request body of {len(raw)} bytes; first {limit} bytes kept",
                "text": decode_text(raw[:limit])}
    if not raw:
        return None
    if parsed is not None:
        return parsed
    try:
        return loads(raw, max_values=MAX_REQUEST_VALUES)
    except Malformed:
        return {"text": decode_text(raw)}


class Capture:
    """A bounded copy of one response as it is sent: SSE events, or the body.

    ``encoding`` is the response's ``content-encoding``: gzip and deflate are decoded for the copy
    (the bound applies to the decoded bytes), any other encoding is not copied at all."""

    def __init__(self, *, sse: bool, limit: int = MAX_CAPTURE_BYTES, encoding: str = "") -> None:
        self.sse = sse
        self.limit = limit
        self.total = 0  # bytes as sent
        self.kept = 0  # (decoded) bytes copied
        self.over = False
        self.events: list[dict[str, JsonValue]] = []
        self._chunks: list[bytes] = []
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._parser = SseParser()
        self.encoding = encoding.strip().lower()
        self.not_captured: str | None = None
        self._inflater: zlib._Decompress | None = None  # typeshed names the type only privately
        if self.encoding == "gzip":
            self._inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif self.encoding == "deflate":
            self._inflater = zlib.decompressobj()
        elif self.encoding not in ("", "identity"):
            self.not_captured = f"the response's content-encoding {self.encoding!r} is not decoded for the log"

    @property
    def truncated(self) -> bool:
        return self.over

    def add(self, chunk: bytes) -> None:
        self.total += len(chunk)
        if self.over or self.not_captured:
            return
        room = self.limit - self.kept
        piece = chunk
        if self._inflater is not None:
            try:
                piece = self._inflater.decompress(chunk, room + 1)
            except zlib.error as err:
                self.not_captured = f"the response's {self.encoding} body could not be decoded: {err}"
                return
        if len(piece) > room:
            piece, self.over = piece[:room], True
        self.kept += len(piece)
        if self.sse:
            self.events += [e.to_log() for e in self._parser.feed(self._decoder.decode(piece))]
        else:
            self._chunks.append(piece)

    def add_events(self, events: Iterable[SseEvent]) -> None:
        for event in events:
            self.add(event.encode())

    def to_json(self) -> dict[str, JsonValue]:
        body: dict[str, JsonValue] = {"bytes": self.total}
        if self.not_captured:
            body["not_captured"] = self.not_captured
            return body
        if self._inflater is not None:
            body["content_encoding"] = self.encoding
        if self.sse:
            if not self.truncated:
                self.events += [e.to_log() for e in self._parser.feed(self._decoder.decode(b"", final=True))]
                self.events += [e.to_log() for e in self._parser.flush()]
            body["events"] = [*self.events]
        else:
            text = b"".join(self._chunks).decode("utf-8", "replace")
            try:
                parsed = loads(text) if text and not self.truncated else None
            except Malformed:
                parsed = None
            if parsed is None:
                body["chunks"] = [text] if text else []
            else:
                body["body"] = parsed
                if compact_json(parsed) != text:
                    body["raw"] = text
        if self.truncated:
            body["truncated"] = f"response of {self.total} bytes; the copy stops after {self.kept} bytes"
        return body


def scrub_streamed_pieces(events: list[JsonValue], scrubber: Scrubber) -> list[JsonValue]:
    """SSE events (as logged) with a secret that was streamed in pieces removed.

    A model streams its text a few characters per event, so a secret it repeats is never whole in
    one string. The string values at the same place in each event (``delta.text``, say; list
    positions ignored) are joined in order; where the joined text holds a secret, its characters are
    cut out of every piece, and the piece where it began gets the marker instead."""
    if not scrubber.active:
        return events
    events = [dict(e) if isinstance(e, dict) else e for e in events]
    places: dict[tuple[str, ...], list[tuple[int, list[Any], Any]]] = {}
    for index, event in enumerate(events):
        if isinstance(event, dict) and "data" in event:
            _strings(event, "data", (), index, places)
    for pieces in places.values():
        if len(pieces) < 2:
            continue
        joined = "".join(holder[key] for _, holder, key in pieces)
        if scrubber.text(joined) == joined:
            continue
        changed = _cut_pieces(pieces, joined, scrubber)
        for index in changed:
            if isinstance(event := events[index], dict):  # always: only an object's strings were collected
                event.pop("raw", None)  # the event is re-encoded from its (scrubbed) data
    return events


def _strings(
    holder: Any, key: Any, path: tuple[str, ...], index: int, out: dict[tuple[str, ...], list[tuple[int, Any, Any]]]
) -> None:
    """Collect every string under ``holder[key]`` by its path (dict keys only), copying containers on
    the way so the caller's events are not changed in place."""
    value = holder[key]
    if isinstance(value, str):
        out.setdefault(path, []).append((index, holder, key))
    elif isinstance(value, dict):
        holder[key] = value = dict(value)
        for k in value:
            _strings(value, k, (*path, str(k)), index, out)
    elif isinstance(value, list):
        holder[key] = value = list(value)
        for i in range(len(value)):
            _strings(value, i, path, index, out)


def _cut_pieces(pieces: list[tuple[int, Any, Any]], joined: str, scrubber: Scrubber) -> set[int]:
    """Remove every secret found in ``joined`` from the pieces it was made of; the events changed."""
    spans: list[tuple[int, int, str]] = []
    for secret, marker in scrubber.markers():
        start = joined.find(secret)
        while start >= 0:
            if not any(s < start + len(secret) and start < e for s, e, _ in spans):
                spans.append((start, start + len(secret), marker))
            start = joined.find(secret, start + len(secret))
    changed: set[int] = set()
    offset = 0
    for index, holder, key in pieces:
        text: str = holder[key]
        kept = []
        for i, char in enumerate(text):
            at = offset + i
            span = next((s for s in spans if s[0] <= at < s[1]), None)
            if span is None:
                kept.append(char)
            elif at == span[0]:
                kept.append(span[2])
        if len(kept) != len(text) or "".join(kept) != text:
            holder[key] = "".join(kept)
            changed.add(index)
        offset += len(text)
    return changed


class ExchangeLog:
    """Writes scrubbed exchange records to a JSONL file of its own: a file an earlier turn or attempt left at the path
    is replaced, never appended to (a retried cell's log holds its last attempt's exchanges, which a replay of it
    serves). Text that cannot be encoded (a lone surrogate a client sent) is written as its JSON escape."""

    def __init__(
        self, path: Path, scrubber: Scrubber, secrets: Mapping[str, str] | None = None, *,
        clock: TurnClock | None = None,
    ) -> None:
        self.path = path
        self.clock = clock or TurnClock(time.monotonic, time.time)  # the turn's, or one started with the log
        self.scrubber = scrubber.with_secrets(secrets or {}, MIN_EXTRA_SECRET)
        self.count = 0
        path.parent.mkdir(parents=True, exist_ok=True)
        self._file: IO[str] | None = path.open("w", encoding="utf-8", errors="backslashreplace")

    def scrub(self, text: str) -> str:
        return self.scrubber.text(text)

    @overload
    def scrub_value(self, value: dict[str, JsonValue]) -> dict[str, JsonValue]: ...
    @overload
    def scrub_value(self, value: JsonValue) -> JsonValue: ...
    def scrub_value(self, value: JsonValue) -> JsonValue:
        """``value`` with every string in it (keys too) scrubbed, as a record is before it is written.

        A part marked ``truncated`` was cut at the capture bound: its text (``text``, the last of
        ``chunks``) may end in the start of a secret, which goes too."""
        if isinstance(value, str):
            return self.scrub(value)
        if isinstance(value, dict):
            out = {self.scrub(str(k)): self.scrub_value(v) for k, v in value.items()}
            if "truncated" in value:
                if isinstance(text := out.get("text"), str):
                    out["text"] = self.scrubber.cut_text(text)
                chunks = out.get("chunks")
                if isinstance(chunks, list) and chunks and isinstance(chunks[-1], str):
                    chunks[-1] = self.scrubber.cut_text(chunks[-1])
            if isinstance(events := out.get("events"), list):
                out["events"] = scrub_streamed_pieces(events, self.scrubber)
            return out
        if isinstance(value, list | tuple):
            return [self.scrub_value(v) for v in value]
        return value

    def write(self, record: dict[str, JsonValue]) -> None:
        if self._file is None:
            return
        self.count += 1
        full = {"ts": self.clock.now().at, "seq": self.count, **record}
        line = self.scrub(json.dumps(self.scrub_value(full), ensure_ascii=False, separators=(",", ":")))
        self._file.write(line + "\n")
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
