"""dsh's own outcome, read from its session log after it exits (stdout is plain text; SIGTERM exits 0).

Where: ``$DSH_HOME/sessions/<cwd-slug>/session-<uuid>/session.jsonl.zstd`` (``$DSH_HOME`` defaults to
``~/.dsh``, the profile's ``session_transcript``), zstd-compressed JSONL, one session event per line
(``{"type": "tool/call" | "assistant/message" | "turn/end" | ..., "data": {...}}``), the same events
:mod:`runner.harnesses.deepseek.interpreter` reads. Every log under the directory is read, oldest first.

Rules, on top of the interpreter's:

- A log is read as far as it goes: a frame cut short by a kill (a truncated zstd stream), a line that
  is not JSON (or over the frame bound, or nested deeper than the intake reads), a log over
  :data:`MAX_LOG_BYTES` decompressed or :data:`MAX_LOG_EVENTS` events ends the reading there, never the
  turn. It is inflated and read a piece at a time (:func:`runner.intake.payload.zstd_pieces`), each event
  handed on as its line ends: a small file that inflates to the bound costs runner a piece and a line, not
  the whole log.
- **No ``turn/end`` and exit 0 is not a completed turn.** dsh 0.1.0-rc.8 exits 0 on SIGTERM, prints a
  bare newline and writes no ``turn/end`` (measured), so "exit 0" alone cannot tell a stopped turn
  from a finished one. Such a turn fails ``harness_exited_without_outcome``. With any other exit code
  and no ``turn/end`` nothing is added: the exit code decides as for every CLI.
"""

from __future__ import annotations

import contextlib
import os
import re
from collections.abc import Iterator
from pathlib import Path

from runner.core.outcomes import JsonValue, ProtocolError
from runner.core.vocabulary import Code
from runner.harnesses.deepseek.interpreter import interpret, read_event
from runner.harnesses.stream import MAX_FRAME_BYTES, Completed, Failed, LineSplitter, Step
from runner.intake.payload import Malformed, loads, zstd_pieces

LOG_NAME = "session.jsonl.zstd"
MAX_LOG_BYTES = 64 * 1024 * 1024
MAX_LOG_EVENTS = 100_000  # a short turn writes a few tens; a log of millions of "{}" is read this far
_SLICE = 64 * 1024  # what the line splitter is given at a time: its list of lines stays short
_BLANK_LINES = re.compile(rb"\n[\n \t\r]*\n")
NO_TURN_END = (
    "dsh exited 0 but its session log has no turn/end: the turn was stopped (dsh exits 0 on SIGTERM), "
    "not completed."
)


def session_logs(root: Path) -> list[Path]:
    """Every session log under ``root`` (``$DSH_HOME``), oldest first."""
    sessions = root / "sessions"
    if not sessions.is_dir():
        return []
    logs = [p for p in sessions.rglob(LOG_NAME) if p.is_file() and not p.is_symlink()]
    return sorted(logs, key=lambda p: (p.stat().st_mtime_ns, str(p)))


def log_events(path: Path, limit: int = MAX_LOG_BYTES) -> Iterator[dict[str, JsonValue]]:
    """The events of one log as it inflates, up to the first line that is not a JSON object (or a bound)."""
    with path.open("rb") as fh:
        data = fh.read(min(limit, os.fstat(fh.fileno()).st_size))  # read(limit) would allocate the bound first
    for count, (line, oversized) in enumerate(_lines(data, limit)):
        if oversized or count >= MAX_LOG_EVENTS:
            return
        try:
            frame = loads(line)
        except Malformed:
            return
        if not isinstance(frame, dict):
            return
        yield frame


def _lines(data: bytes, limit: int) -> Iterator[tuple[bytes, bool]]:
    """The lines of a zstd log that are not blank, as it inflates (``oversized`` past the frame bound), the last
    one too when the log stops being readable (a frame cut short, garbage, the bound). Blank lines are dropped
    in C before any line is cut: a log of nothing but newlines is no loop over millions of empty lines."""
    splitter = LineSplitter(MAX_FRAME_BYTES)
    with contextlib.suppress(Malformed):
        for piece in zstd_pieces(data, limit):
            for at in range(0, len(piece), _SLICE):
                lines = splitter.feed(_BLANK_LINES.sub(b"\n", piece[at : at + _SLICE]))
                yield from ((line, oversized) for line, oversized in lines if oversized or line.strip())
    yield from ((line, oversized) for line, oversized in splitter.close() if oversized or line.strip())


def read_log(path: Path) -> list[dict[str, JsonValue]]:
    """The events of one log, up to the first line that is not a JSON object."""
    return list(log_events(path))


def read_session(root: Path, exit_code: int | None) -> list[Step]:
    """The steps dsh's session logs give, and the rule for an exit 0 without ``turn/end``."""
    steps: list[Step] = []
    ended = False
    for path in session_logs(root):
        for frame in log_events(path):
            event = read_event(frame)
            if event is not None and event[0] == "turn/end":
                ended = True
            steps += interpret(frame)
    terminal = any(isinstance(s, Completed | Failed) for s in steps)
    if exit_code == 0 and not (ended and terminal):
        steps.append(Failed(ProtocolError.of(Code.HARNESS_EXITED_WITHOUT_OUTCOME, NO_TURN_END, retryable=False)))
    return steps
