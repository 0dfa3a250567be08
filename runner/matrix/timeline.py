"""A cell's timeline, read back: ``timeline.jsonl`` merged with the MCP events and the model exchanges by ``t``.

Three files of a cell directory carry times on the turn's one clock (``t``: seconds since the turn's start; ``at``:
the wall clock of that instant, ISO-8601 UTC with milliseconds):

- ``timeline.jsonl``: the turn's own moments, ``{"t", "at", "event", ...}`` (the vocabulary and each event's fields:
  :mod:`runner.core.timeline`);
- ``mcp-events.jsonl``: every MCP server event (``connection.opened``, ``session.initialized``, ``tools.listed``,
  ``tool.called``, ``connection.closed``, ``message.rejected``), stamped when it happened;
- ``model-exchanges.jsonl``: every model request, stamped when it arrived.

:func:`read_cell_timeline` merges them into one list sorted by ``t`` (never by file order: the files are written by
different parts of the turn), each moment tagged with its ``source`` (``turn``, ``mcp``, ``model``). What two files
both say is said once: a ``tool.called`` event is the timeline's ``mcp_call`` of the same instant, and an exchange
is folded into the timeline's ``model_request`` of the same number (its dialect, status, ending and duration).
A file written by a runner that stamped nothing is left off the timeline and counted in :attr:`CellTimeline.untimed`;
a line that is not a JSON object, or carries a ``t`` or ``at`` of the wrong type, is a :class:`CellReadError`
naming the file and the line.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from runner.core.outcomes import JsonValue
from runner.core.timeline import TimelineEvent
from runner.errors import UsageError

TIMELINE = "timeline.jsonl"
MCP_EVENTS = "mcp-events.jsonl"
MODEL_EXCHANGES = "model-exchanges.jsonl"
SOURCES = {TIMELINE: "turn", MCP_EVENTS: "mcp", MODEL_EXCHANGES: "model"}
EXCHANGE = "exchange"  # a model exchange with no model_request on the timeline (a cell written before timelines)
# what an exchange adds to its model_request: the exchange log's key, and the name it is shown by (and the answer's
# status, from its response)
EXCHANGE_FIELDS = (("dialect", "dialect"), ("step", "step"), ("ended", "ended"), ("duration_s", "durationSeconds"))


class CellReadError(UsageError, ValueError):
    """A file of a cell directory that cannot be read; the message names the file (and the line)."""


@dataclass(frozen=True)
class Moment:
    """One line of a cell's merged timeline."""

    t: float
    at: str
    source: str  # turn | mcp | model
    event: str
    fields: dict[str, JsonValue] = field(default_factory=dict)

    def to_json(self) -> dict[str, JsonValue]:
        return {"t": self.t, "at": self.at, "source": self.source, "event": self.event, **self.fields}


@dataclass(frozen=True)
class CellTimeline:
    moments: list[Moment]
    untimed: dict[str, int]  # file name -> its lines that carry no time (written by an older runner)


def read_jsonl(path: Path) -> list[tuple[int, dict[str, JsonValue]]]:
    """Every line of a JSON Lines file as (line number, object); blank lines skipped."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise CellReadError(f"{path}: cannot be read ({err})") from None
    lines: list[tuple[int, dict[str, JsonValue]]] = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError as err:
            raise CellReadError(f"{path}: line {number}: not JSON ({err})") from None
        if not isinstance(value, dict):
            raise CellReadError(f"{path}: line {number}: expected a JSON object, got {type(value).__name__}")
        lines.append((number, value))
    return lines


def _stamp(path: Path, number: int, line: dict[str, JsonValue]) -> tuple[float, str]:
    t, at = line.get("t"), line.get("at")
    if not isinstance(t, int | float) or isinstance(t, bool):
        raise CellReadError(f"{path}: line {number}: field 't': expected seconds since the turn's start, got {t!r}")
    if not isinstance(at, str):
        raise CellReadError(f"{path}: line {number}: field 'at': expected an ISO-8601 time, got {at!r}")
    return float(t), at


def _timed(path: Path, lines: list[tuple[int, dict[str, JsonValue]]]) -> bool:
    """Whether a file's lines carry times: all do (True) or none does (False: an older runner's file)."""
    stamped = [("t" in line or "at" in line) for _, line in lines]
    if stamped and not any(stamped):
        return False
    for (number, _line), has in zip(lines, stamped, strict=True):
        if not has:
            raise CellReadError(f"{path}: line {number}: carries no 't' and 'at', unlike the file's other lines")
    return True


def read_cell_timeline(directory: Path) -> CellTimeline:
    """The cell's moments from its three files (each optional), sorted by ``t``."""
    moments: list[Moment] = []
    untimed: dict[str, int] = {}
    read: dict[str, list[tuple[int, dict[str, JsonValue]]]] = {}
    for name in SOURCES:
        path = directory / name
        if not path.is_file():
            continue
        lines = read_jsonl(path)
        if _timed(path, lines):
            read[name] = lines
        else:
            untimed[name] = len(lines)
    requests: dict[int, int] = {}  # model_request n -> its index in moments
    calls: set[tuple[float, JsonValue]] = set()  # (t, tool) of each mcp_call
    for number, line in read.get(TIMELINE, []):
        t, at = _stamp(directory / TIMELINE, number, line)
        event = line.get("event")
        if not isinstance(event, str):
            raise CellReadError(f"{directory / TIMELINE}: line {number}: field 'event': expected a name, got {event!r}")
        fields = {k: v for k, v in line.items() if k not in ("t", "at", "event")}
        if event == TimelineEvent.MODEL_REQUEST and isinstance(n := fields.get("n"), int):
            requests[n] = len(moments)
        if event == TimelineEvent.MCP_CALL:
            calls.add((t, fields.get("tool")))
        moments.append(Moment(t, at, "turn", event, fields))
    for number, line in read.get(MCP_EVENTS, []):
        t, at = _stamp(directory / MCP_EVENTS, number, line)
        event = str(line.get("event"))
        fields = {k: v for k, v in line.items() if k not in ("t", "at", "event")}
        if event == "tool.called" and (t, fields.get("tool")) in calls:
            continue  # the timeline's mcp_call of the same instant says it
        moments.append(Moment(t, at, "mcp", event, fields))
    for number, line in read.get(MODEL_EXCHANGES, []):
        t, at = _stamp(directory / MODEL_EXCHANGES, number, line)
        seq = line.get("request_seq")
        summary = _exchange(line)
        index = requests.get(seq) if isinstance(seq, int) else None
        if index is not None:
            folded = moments[index]
            moments[index] = Moment(folded.t, folded.at, folded.source, folded.event, {**folded.fields, **summary})
        else:
            moments.append(Moment(t, at, "model", EXCHANGE, {"n": seq, **summary}))
    moments.sort(key=lambda m: m.t)  # stable: one instant keeps the order its file gave it
    return CellTimeline(moments, untimed)


def _exchange(line: dict[str, JsonValue]) -> dict[str, JsonValue]:
    """What a model exchange says beside its time: dialect, step, the answer's status, how it ended, its duration."""
    response = line.get("response")
    status = response.get("status") if isinstance(response, dict) else None
    present = {**{shown: line.get(key) for key, shown in EXCHANGE_FIELDS}, "status": status}
    order = ("dialect", "step", "status", "ended", "durationSeconds")
    return {key: present[key] for key in order if present[key] is not None}
