"""``runner profiles calibrate RUN_DIR``: each column's ``cell_seconds`` set to what its cells took in a finished run.

A profile's ``cell_seconds`` sizes the CI plan's shards (:mod:`runner.matrix.shards`) and the cost figures
(docs/ci.md, docs/measurements.md). It is a measured figure, not a guess: the median ``elapsedSeconds`` of the
column's cells that ran a turn in the run given (every trial counts; a cell that hit an infrastructure error, or ran
no turn, does not), rounded up to the next tenth of a second. Nothing rewrites a tracked file behind a user's back:
only this command writes, only the ``cell_seconds:`` line of each profile whose figure changed (the rest of the
file, comments included, is left as it is), and ``--dry-run`` writes nothing.

The figure is a cell's wall time as the run measured it, at the run's own ``-j``: the weekly bump workflow runs the
whole matrix at ``-j 2`` and calibrates from it, which is also how a CI job runs its shard.
"""

from __future__ import annotations

import math
import os
import re
import statistics
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import yaml

from runner.errors import UsageError
from runner.harnesses.profile import ProfileError, UnknownHarness, find_profile
from runner.matrix.result import CellResult
from runner.matrix.series import load_runs

FIELD = "cell_seconds"
LINE = re.compile(rf"^{FIELD}\s*:.*$", re.MULTILINE)


class CalibrationError(UsageError, ValueError):
    """A run directory that holds no cell which ran a turn, or a profile file that cannot take the figure."""


@dataclass(frozen=True)
class Calibration:
    """One column's figure: what the profile said, what its cells took (median, rounded up), from how many."""

    harness: str
    file: str | None  # the profile file rewritten (None: no profile of that id is found here)
    before: float | None
    after: float
    cells: int
    changed: bool

    def to_json(self) -> dict[str, object]:
        return {"harness": self.harness, "file": self.file, "before": self.before, "after": self.after,
                "cells": self.cells, "changed": self.changed}


def measured(runs: Sequence[CellResult]) -> dict[str, list[float]]:
    """Per column, the wall seconds of its runs that ran a turn and hit no infrastructure error."""
    found: dict[str, list[float]] = defaultdict(list)
    for run in runs:
        if run.turn is None or run.infrastructure_error is not None or run.elapsed_seconds is None:
            continue
        found[run.cell.harness].append(run.elapsed_seconds)
    return dict(found)


def figure(walls: Sequence[float]) -> float:
    """The median, rounded up to the next tenth of a second (at least 0.1: the profile's field is positive)."""
    return max(0.1, math.ceil(round(statistics.median(walls) * 10, 6)) / 10)


def rewritten(text: str, seconds: float, note: str) -> str:
    """``text`` (a profile file) with its ``cell_seconds`` line set to ``seconds``, or the line appended."""
    value = f"{seconds:g}" if seconds != int(seconds) else str(int(seconds))
    line = f"{FIELD}: {value}  # {note}"
    if len(LINE.findall(text)) > 1:
        raise CalibrationError(f"the profile has {FIELD} more than once")
    if LINE.search(text):
        return LINE.sub(lambda _: line, text, count=1)
    return text + ("" if not text or text.endswith("\n") else "\n") + line + "\n"


def calibrate(run_dirs: Sequence[Path], search: Sequence[Path] = (), *, write: bool = True,
              today: str | None = None) -> list[Calibration]:
    """Measure every column of the runs under ``run_dirs`` and (``write``) set each changed profile's figure."""
    walls = measured(load_runs(list(run_dirs)))
    if not walls:
        raise CalibrationError(
            f"{', '.join(map(str, run_dirs))}: no cell that ran a turn without an infrastructure error (give the "
            "directory of a finished `runner run`)"
        )
    date = today or datetime.now(UTC).strftime("%Y-%m-%d")
    out = []
    for harness in sorted(walls):
        after = figure(walls[harness])
        try:
            profile = find_profile(harness, search)
        except (UnknownHarness, ProfileError):
            out.append(Calibration(harness, None, None, after, len(walls[harness]), False))
            continue
        before = profile.cell_seconds
        changed = after != before
        path = Path(profile.source)
        if changed and write:
            _write(path, after, f"median of {len(walls[harness])} cells, runner profiles calibrate, {date}")
        out.append(Calibration(harness, str(path), before, after, len(walls[harness]), changed))
    return out


def _write(path: Path, seconds: float, note: str) -> None:
    """Rewrite ``path``'s figure atomically, once the new text is checked to say it."""
    try:
        text = rewritten(path.read_text(encoding="utf-8"), seconds, note)
    except CalibrationError as err:
        raise CalibrationError(f"{path}: {err}") from None
    data = yaml.safe_load(text)
    if not isinstance(data, dict) or data.get(FIELD) != seconds:
        raise CalibrationError(f"{path}: field {FIELD!r}: the rewritten file would not say {seconds}")
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
