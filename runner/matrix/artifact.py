"""One cell's directory: ``result.json`` (the typed :class:`~runner.matrix.result.CellResult`: the grade, the
turn, every pin), ``repro.sh`` (the exact command that reruns this cell), and the turn's own files (record,
transcripts, exchange log).

With ``--trials N``, trial 1 is the cell directory and trial k its ``trial-<k>/`` subdirectory (:func:`trial_dir`),
each a cell directory of its own.

``result.json`` is what ``runner report`` merges and what ``runner run`` checks before running a cell again: a
cell whose result holds the same plannable pins is not run twice.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from runner.matrix.result import CellPins, CellResult, ResultError

RESULT = "result.json"
REPRO = "repro.sh"
# the pins known before a cell runs: equal pins mean an existing result can be reused
PLANNED_PINS = (
    "caseSetHash", "worldSetHash", "judgeVersion", "runnerVersion", "imageId", "cliVersion",
    "modelMode", "behaviour", "profileHash",
)
# pins compared even when the planned cell lacks them: a faulted result never stands in for a plain one, nor a
# result in one model dialect for another, nor one trial for another, nor one under gVisor for one under runc, nor
# one of protocol epoch 2 for one of epoch 1
ALWAYS_COMPARED = ("modelFault", "modelDialect", "trial", "runtime", "protocolVersion")
TRIAL_PREFIX = "trial-"


def trial_dir(cell_directory: Path, trial: int) -> Path:
    """Where trial ``trial`` of a cell is written: trial 1 in the cell directory itself (so a one-trial run is laid
    out as it always was, and a run asked for more trials later reuses it), trial k >= 2 in ``trial-<k>/`` inside
    it. ``runner report`` finds every trial below a directory it is given; ``runner repro`` takes any of them."""
    return cell_directory if trial == 1 else cell_directory / f"{TRIAL_PREFIX}{trial}"


def write_cell(directory: Path, result: CellResult) -> Path:
    """Write ``result.json`` atomically (a half-written result is never left) and ``repro.sh``."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{RESULT}.tmp"
    tmp.write_text(result.dumps(indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, directory / RESULT)
    script = directory / REPRO
    script.write_text(
        "#!/bin/sh\n"
        f"# Reruns the cell {result.id} alone, with the pins recorded in result.json.\n"
        "# From the runner checkout: .venv/bin/runner … (or `runner repro <this directory>`).\n"
        f"exec {result.repro}\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return directory / RESULT


def load_result(file: Path) -> CellResult:
    """Read one ``result.json``; a file that is not one is a :class:`ResultError` naming it."""
    try:
        data = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ResultError(f"{file}: not a cell result ({err})") from None
    return CellResult.read(data, str(file))


def read_cell(directory: Path) -> CellResult | None:
    """The result in a cell directory, or None when there is none that can be read (resume runs it again)."""
    try:
        return load_result(directory / RESULT)
    except ResultError:
        return None


def reusable(existing: CellResult | None, planned: CellPins) -> bool:
    """An existing graded result with the same plannable pins: resume skips the cell."""
    if existing is None or not existing.reusable:
        return False
    pins, wanted = existing.pins.to_dict(), planned.to_dict()
    return all(pins.get(k) == wanted.get(k) for k in PLANNED_PINS if k in wanted) and all(
        pins.get(k) == wanted.get(k) for k in ALWAYS_COMPARED
    )
