"""A turn's timeline, as data: the one clock a turn is measured on, the moments it records, and what is
computed from them (the wind-down). Pure: the clock reads the two time sources it is given (the edge hands
it ``time.monotonic`` and ``time.time``); the timeline hands each entry to the sink it is given.

**The clock** (:class:`TurnClock`) starts with the turn. Every stamp it gives (:class:`Stamp`) holds ``t``,
seconds since the turn's start on one monotonic clock (3 decimals), and ``at``, the wall clock of that same
instant (ISO-8601 UTC with milliseconds, ``2026-12-02T11:02:03.456Z``): the wall time read once at the start plus
the monotonic offset, so two stamps of one turn never disagree on their order, whatever the host's wall clock does
meanwhile.

**The vocabulary** (:class:`TimelineEvent`): the moments of a turn, each with its own fields
(:data:`EVENT_FIELDS`). One timeline entry is ``{"t": float, "at": str, "event": str, ...fields}``.

**The wind-down** (:func:`wind_down_seconds`): from the ask answered (the latch closed) to the CLI's exit by
itself; None when nobody asked or when the deadline stopped the CLI (ADR 0018's evidence that the CLI was let
wind down).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from runner.core.outcomes import JsonValue


class TimelineEvent(StrEnum):
    """What a turn's timeline records (``timeline.jsonl``), in the order a turn usually meets them."""

    TURN_STARTED = "turn_started"
    CONTAINER_CREATED = "container_created"
    CONTAINER_STARTED = "container_started"
    CLI_FIRST_OUTPUT = "cli_first_output"  # stream: stdout | stderr
    MODEL_REQUEST = "model_request"  # n: the request's number in arrival order, 1-based
    MCP_CALL = "mcp_call"  # tool, answer ("ok" or the refusal code), afterAsk
    ASK_ANSWERED = "ask_answered"  # tool: the escalation latch closed
    REFUSED_AFTER_ASK = "refused_after_ask"  # tool, code
    DEADLINE_SIGNAL = "deadline_signal"  # signal (SIGTERM, SIGKILL), reason: the deadline's, or the disk budget's
    CLI_EXITED = "cli_exited"  # exitCode, by: itself | deadline | budget
    TEARDOWN_DONE = "teardown_done"
    TURN_ENDED = "turn_ended"


# the fields each event carries besides t, at and event (a reader may rely on them)
EVENT_FIELDS: Mapping[TimelineEvent, tuple[str, ...]] = {
    TimelineEvent.TURN_STARTED: (),
    TimelineEvent.CONTAINER_CREATED: (),
    TimelineEvent.CONTAINER_STARTED: (),
    TimelineEvent.CLI_FIRST_OUTPUT: ("stream",),
    TimelineEvent.MODEL_REQUEST: ("n",),
    TimelineEvent.MCP_CALL: ("tool", "answer", "afterAsk"),
    TimelineEvent.ASK_ANSWERED: ("tool",),
    TimelineEvent.REFUSED_AFTER_ASK: ("tool", "code"),
    TimelineEvent.DEADLINE_SIGNAL: ("signal", "reason"),
    TimelineEvent.CLI_EXITED: ("exitCode", "by"),
    TimelineEvent.TEARDOWN_DONE: (),
    TimelineEvent.TURN_ENDED: (),
}

EXITED_BY_ITSELF = "itself"
EXITED_BY_DEADLINE = "deadline"
EXITED_BY_BUDGET = "budget"  # stopped because what it wrote passed the turn's disk budget
ANSWER_OK = "ok"  # an MCP call answered without refusal; otherwise its answer is the refusal code


def iso_utc(epoch_seconds: float) -> str:
    """``epoch_seconds`` as ISO-8601 UTC with milliseconds and a ``Z``: ``2026-12-02T11:02:03.456Z``."""
    return datetime.fromtimestamp(epoch_seconds, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Stamp:
    """One instant of a turn: ``t`` seconds since its start (monotonic, 3 decimals) and ``at``, its wall clock."""

    t: float
    at: str

    def to_json(self) -> dict[str, JsonValue]:
        return {"at": self.at, "t": self.t}


class TurnClock:
    """The one clock of a turn: started on construction, from the two sources the edge hands it."""

    def __init__(self, monotonic: Callable[[], float], wall: Callable[[], float]) -> None:
        self._monotonic = monotonic
        self._start = monotonic()
        self._wall = wall()

    @property
    def started(self) -> Stamp:
        """The turn's start: ``t`` 0."""
        return Stamp(0.0, iso_utc(self._wall))

    def now(self) -> Stamp:
        elapsed = self._monotonic() - self._start
        return Stamp(round(elapsed, 3), iso_utc(self._wall + elapsed))


EntrySink = Callable[[dict[str, JsonValue]], None]


class Timeline:
    """A turn's timeline: each :meth:`record` stamps an entry on the turn's clock, keeps it and hands it to the sink,
    in the order recorded (a lock keeps stamp and hand-over together, so the sink sees ``t`` never going back)."""

    def __init__(self, clock: TurnClock, sink: EntrySink | None = None) -> None:
        self.clock = clock
        self.sink = sink
        self.entries: list[dict[str, JsonValue]] = []
        self._lock = threading.Lock()

    def record(self, event: TimelineEvent, stamp: Stamp | None = None, /, **fields: JsonValue) -> Stamp:
        """Record ``event`` now (or at ``stamp``, a moment already taken on this turn's clock); its stamp."""
        expected = EVENT_FIELDS[event]
        if set(fields) != set(expected):
            raise ValueError(f"timeline event {event.value} carries {sorted(expected)}, not {sorted(fields)}")
        with self._lock:
            stamp = stamp or self.clock.now()
            entry: dict[str, JsonValue] = {"t": stamp.t, "at": stamp.at, "event": event.value, **fields}
            self.entries.append(entry)
            if self.sink is not None:
                self.sink(entry)
        return stamp

    def first(self, event: TimelineEvent) -> dict[str, JsonValue] | None:
        return first_event(self.entries, event)


def first_event(entries: Iterable[Mapping[str, JsonValue]], event: TimelineEvent) -> dict[str, JsonValue] | None:
    """The earliest entry (by ``t``) of ``event``, or None."""
    found = [dict(e) for e in entries if e.get("event") == event.value]
    return min(found, key=_t) if found else None


def _t(entry: Mapping[str, JsonValue]) -> float:
    t = entry.get("t")
    return float(t) if isinstance(t, int | float) else 0.0


def answer_of(status: str, code: str | None) -> str:
    """An MCP call's answer on the timeline: ``ok`` when it succeeded, else its refusal code (``error`` when the
    call could not be answered at all and carries none)."""
    if status == "succeeded":
        return ANSWER_OK
    return code or "error"


def wind_down_seconds(entries: Iterable[Mapping[str, JsonValue]]) -> float | None:
    """Seconds from the ask answered to the CLI's exit by itself; None when nobody asked, the CLI's exit went
    unseen, or the deadline stopped it."""
    entries = list(entries)
    asked = first_event(entries, TimelineEvent.ASK_ANSWERED)
    exited = first_event(entries, TimelineEvent.CLI_EXITED)
    if asked is None or exited is None or exited.get("by") != EXITED_BY_ITSELF:
        return None
    return round(max(0.0, _t(exited) - _t(asked)), 3)
