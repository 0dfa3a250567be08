"""Replay mode: serve a recorded exchange log back to the CLI, in order, and stop at the first divergence.

A live (or scripted) turn's ``model-exchanges.jsonl`` is the recording. :func:`load_recording`
reads it into the order the requests *arrived* in (``request_seq``; a log written before that field
existed falls back to its line order, which is completion order) and checks that every exchange can
be sent again; ``HEAD``/``GET .../api/hello`` (Claude Code's preconnect, fired alongside its first
request) is not part of the sequence: the endpoint answers it 200 whenever it comes.

**Rule.** The CLI's N-th request (counted in arrival order, preconnects aside; N is the ``step``
below) is compared with recorded request N
(:func:`runner.model.compare.find_difference`: method, path, query, dialect, normalised body). If
they are the same, recorded response N is sent: its status, content type and headers (minus
hop-by-hop, ``content-length`` and redacted credential headers), then its SSE events exactly as
logged (:meth:`runner.model.sse.SseEvent.from_log`: each event's name, id and data character for
character; the framing, line endings and comment lines are this endpoint's own), or its body; a
recorded stall is a stall again,
and a stream that an upstream broke off is broken off again after the recorded events. If they
differ, or the recording has no exchange N, the replay stops: that request and every later one is
answered ``409`` with the dialect's error body (and ``x-should-retry: false``, so the CLI's SDK
surfaces it instead of retrying) naming the divergence, which the handle also holds as
``{"step": N, "path": <the request's path>, "what": <sentence>, "field": <the differing field>}``
(``field`` is absent past the end of the recording). The replay writes its own exchange log (mode
``replay``; each record names the recorded exchange it served, or the divergence), which is itself
a recording.

**Not replayable** (refused when the config is built, naming the exchange): a response the log
copied only up to its bound (:data:`runner.model.exchange_log.MAX_CAPTURE_BYTES`), or not at all
(an unsupported ``content-encoding``), and a request body over the bound (it cannot be compared).

Limits: requests are numbered in arrival order, so a CLI that sends two requests at once (a title
request alongside the first turn) can reach the endpoint in a different order than it did when
recorded; that is reported as a divergence at the first of them, not reordered. The CLI's own
headers are not compared. A scrubbed secret is replayed as its ``[scrubbed:NAME]`` marker.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from runner.core.outcomes import JsonValue
from runner.model.compare import Difference, find_difference
from runner.model.exchange_log import MAX_CAPTURE_BYTES
from runner.model.sse import SSE_HEADERS, SseEvent, compact_json
from runner.model.types import ModelEndpointError

SSE_CONTENT_TYPE = "text/event-stream; charset=utf-8"
JSON_CONTENT_TYPE = "application/json"
NOT_REPLAYED_HEADERS = frozenset(
    {"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te", "trailer", "trailers",
     "transfer-encoding", "upgrade", "content-length", "content-type", "date", "server", "set-cookie"}
)
REDACTED = "[redacted]"


class RecordingError(ModelEndpointError):
    """A recording that cannot be replayed (unreadable, or an exchange the log did not keep whole)."""


def is_preconnect(method: str, path: str) -> bool:
    return method in ("HEAD", "GET") and path.rstrip("/").endswith("/api/hello")


@dataclass(frozen=True)
class RecordedExchange:
    """One exchange of the recording, as the replay sequence numbers it."""

    number: int  # 1-based position in the replay sequence
    line: int  # line of the recording it came from
    dialect: str | None
    request: dict[str, JsonValue]
    response: dict[str, JsonValue]
    ended: str | None = None
    side: bool = False  # the scripted model answered it as a side request

    @property
    def label(self) -> str:
        return f"exchange {self.number} ({self.request.get('method')} {self.request.get('path')}, line {self.line})"

    @property
    def stalled(self) -> bool:
        return self.response.get("stalled") is True

    @property
    def stream(self) -> bool:
        return self.response.get("stream") is True or "events" in self.response


def _unreplayable(exchange: RecordedExchange) -> str | None:
    """Why ``exchange`` cannot be replayed, or None."""
    request, response = exchange.request, exchange.response
    body = request.get("body")
    if isinstance(body, dict) and "truncated" in body and set(body) <= {"truncated", "text"}:
        return (f"{exchange.label}: its request body is over the exchange log's bound of {MAX_CAPTURE_BYTES} bytes "
                f"({body['truncated']}), so a request cannot be compared with it")
    if "truncated" in response:
        return (f"{exchange.label}: its response is over the exchange log's bound of {MAX_CAPTURE_BYTES} bytes "
                f"({response['truncated']}); the log holds only the start of it, so it cannot be replayed")
    if "not_captured" in response:
        return f"{exchange.label}: its response was not copied into the log ({response['not_captured']})"
    if exchange.stalled:
        return None
    if not isinstance(response.get("status"), int):
        return f"{exchange.label}: the log has no status for its response"
    if exchange.stream and not isinstance(response.get("events"), list):
        return f"{exchange.label}: its streamed response has no events in the log"
    return None


class _Line(NamedTuple):
    """One exchange record of the recording, its parts checked to be objects."""

    number: int
    record: dict[str, JsonValue]
    request: dict[str, JsonValue]
    response: dict[str, JsonValue]
    seq: int | None  # its request_seq


def load_recording(path: Path) -> tuple[RecordedExchange, ...]:
    """The exchanges of the exchange log at ``path`` in replay order; :class:`RecordingError` if it
    cannot be read or an exchange cannot be replayed."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError as err:
        raise RecordingError(f"cannot read the recording {path}: {err.strerror or err}") from None
    records: list[_Line] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as err:
            raise RecordingError(f"{path}, line {number}: not a JSON exchange record ({err})") from None
        request, response = record.get("request") if isinstance(record, dict) else None, None
        if isinstance(record, dict):
            response = record.get("response")
        if not isinstance(request, dict) or not isinstance(response, dict):
            raise RecordingError(f"{path}, line {number}: not an exchange record (no request and response)")
        if is_preconnect(str(request.get("method")), str(request.get("path"))):
            continue
        seq = record.get("request_seq")
        records.append(_Line(number, record, request, response, seq if isinstance(seq, int) else None))
    if all(item.seq is not None for item in records):
        records.sort(key=lambda item: item.seq or 0)
    exchanges = []
    for index, (line_number, record, request, response, _) in enumerate(records, 1):
        decision = record.get("decision")
        side = isinstance(decision, dict) and decision.get("reply") == "side"
        dialect, ended = record.get("dialect"), record.get("ended")
        for key, value in (("dialect", dialect), ("ended", ended)):
            if value is not None and not isinstance(value, str):
                raise RecordingError(f"{path}, line {line_number}: {key} is {value!r}, not a string")
        exchange = RecordedExchange(
            index, line_number, dialect if isinstance(dialect, str) else None, request, response,
            ended if isinstance(ended, str) else None, side,
        )
        problem = _unreplayable(exchange)
        if problem:
            raise RecordingError(f"the recording {path} cannot be replayed: {problem}")
        exchanges.append(exchange)
    return tuple(exchanges)


@dataclass(frozen=True)
class Divergence:
    step: int
    path: str
    what: str
    difference: Difference | None = None

    def to_json(self) -> dict[str, JsonValue]:
        body: dict[str, JsonValue] = {"step": self.step, "path": self.path, "what": self.what}
        if self.difference is not None:
            body["field"] = self.difference.field
        return body


@dataclass
class Replayer:
    """The replay sequence's state: how many requests came, and the divergence once there is one."""

    exchanges: tuple[RecordedExchange, ...]
    seen: int = 0
    divergence: Divergence | None = None
    served: list[int] = field(default_factory=list)

    def take(self, received: Mapping[str, JsonValue], dialect: str | None) -> RecordedExchange | Divergence:
        """The recorded exchange to answer ``received`` (a request object as the log holds it) with,
        or the divergence (the first one, for every request after it too)."""
        self.seen += 1
        if self.divergence is not None:
            return self.divergence
        number, path = self.seen, str(received.get("path"))
        if number > len(self.exchanges):
            what = f"the recording has {len(self.exchanges)} exchanges; the CLI made a request {number}"
            self.divergence = Divergence(number, path, what)
            return self.divergence
        recorded = self.exchanges[number - 1]
        difference = find_difference(recorded.request, received, dialect)
        if difference is None and recorded.dialect != dialect:
            difference = Difference("dialect", recorded.dialect, dialect)
        if difference is not None:
            self.divergence = Divergence(number, path, difference.what, difference)
            return self.divergence
        self.served.append(number)
        return recorded


@dataclass(frozen=True)
class ReplayAnswer:
    """What to send for a recorded exchange."""

    status: int
    content_type: str | None
    headers: list[tuple[str, str]]
    events: list[SseEvent] | None = None
    body: bytes = b""
    broken: bool = False  # the recorded stream was broken off by the upstream: break it off again


def _body_bytes(response: Mapping[str, JsonValue]) -> bytes:
    if isinstance(response.get("raw"), str):
        return str(response["raw"]).encode()
    if "body" in response:
        return compact_json(response["body"]).encode()
    chunks = response.get("chunks")
    return "".join(c for c in chunks if isinstance(c, str)).encode() if isinstance(chunks, list) else b""


def answer_for(exchange: RecordedExchange) -> ReplayAnswer:
    """The recorded response of ``exchange`` (not for a stall), ready to send."""
    response = exchange.response
    recorded_status = response.get("status")
    if not isinstance(recorded_status, int):  # never: load_recording refused a response without one
        raise RecordingError(f"{exchange.label}: the log has no status for its response")
    status = int(recorded_status)
    recorded_headers = response.get("headers")
    content_type = response.get("content_type")
    headers: list[tuple[str, str]] = []
    if isinstance(recorded_headers, dict):
        for name, value in recorded_headers.items():
            key = str(name).lower()
            if key == "content-type" and not isinstance(content_type, str):
                content_type = str(value)
            if key in NOT_REPLAYED_HEADERS or value == REDACTED:
                continue
            if key == "content-encoding" and response.get("content_encoding"):
                continue  # the log holds the decoded body
            headers.append((key, str(value)))
    if exchange.stream:
        if not isinstance(recorded_headers, dict):
            headers = list(SSE_HEADERS.items())
        logged = response.get("events")
        events = [SseEvent.from_log(e) for e in (logged if isinstance(logged, list) else []) if isinstance(e, dict)]
        return ReplayAnswer(status, content_type if isinstance(content_type, str) else SSE_CONTENT_TYPE, headers,
                            events=events, broken=exchange.ended == "upstream_error")
    body = _body_bytes(response)
    if not isinstance(content_type, str):
        content_type = JSON_CONTENT_TYPE if "body" in response else None
    return ReplayAnswer(status, content_type, headers, body=body)
