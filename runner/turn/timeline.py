"""Where a turn's clock starts and its timeline is written: ``timeline.jsonl`` in the cell directory.

The clock is started here, at the turn's edge, from the host's monotonic and wall clocks
(:func:`start_clock`), and handed down to everything that stamps a moment of the turn: the MCP event log,
the model endpoint's exchange log, the drive and the runtime. The file (:class:`TimelineFile`) gets one JSON
object per line, ``{"t": float, "at": str, "event": str, ...}`` (the vocabulary:
:class:`runner.core.timeline.TimelineEvent`), in the order recorded, each line flushed as it is written and
scrubbed like every other file of the turn.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path
from typing import IO

from runner.core.outcomes import JsonValue
from runner.core.scrub import Scrubber
from runner.core.timeline import Timeline, TurnClock

TIMELINE = "timeline.jsonl"


def start_clock() -> TurnClock:
    """A turn's clock, started now."""
    return TurnClock(time.monotonic, time.time)


class TimelineFile:
    """Appends timeline entries to ``<directory>/timeline.jsonl`` (a file left by an earlier turn is replaced)."""

    def __init__(self, directory: Path, scrubber: Scrubber) -> None:
        self.path = directory / TIMELINE
        self.scrubber = scrubber
        self._lock = threading.Lock()
        # a lone surrogate in an entry's text is written as its JSON escape
        self._file: IO[str] | None = self.path.open("w", encoding="utf-8", errors="backslashreplace")

    def __call__(self, entry: dict[str, JsonValue]) -> None:
        line = self.scrubber.text(json.dumps(entry, ensure_ascii=False, separators=(",", ":")))
        with self._lock:
            if self._file is None:
                return  # closed: the turn is over
            self._file.write(line + "\n")
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            if self._file is not None:
                self._file.close()
                self._file = None


def open_timeline(directory: Path, scrubber: Scrubber, clock: TurnClock) -> tuple[Timeline, TimelineFile]:
    """The turn's timeline on ``clock``, written to ``directory``; the file, to close when the turn ends."""
    sink = TimelineFile(directory, scrubber)
    return Timeline(clock, sink), sink
