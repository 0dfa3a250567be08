"""One cell's directory: ``result.json`` (the grade, the turn, every pin), ``repro.sh`` (the exact
command that reruns this cell), and the turn's own files (record, transcripts, exchange log).

``result.json`` is what ``runner report`` merges and what ``runner run`` checks before running a cell
again: a cell whose result holds the same plannable pins is not run twice.
"""

from __future__ import annotations

import json
import os
import shlex
from pathlib import Path
from typing import Any

RESULT = "result.json"
REPRO = "repro.sh"
# the pins known before a cell runs: equal pins mean an existing result can be reused
PLANNED_PINS = (
    "caseSetHash", "worldSetHash", "judgeVersion", "runnerVersion", "imageId", "cliVersion",
    "modelMode", "behaviour", "profileHash",
)
# pins compared even when the planned cell lacks them: a faulted result never stands in for a plain one
ALWAYS_COMPARED = ("modelFault",)


def repro_command(cell_id: str, argv: list[str]) -> str:
    return " ".join(shlex.quote(a) for a in ["runner", *argv])


def write_cell(directory: Path, result: dict[str, Any]) -> Path:
    """Write ``result.json`` atomically (a half-written result is never left) and ``repro.sh``."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{RESULT}.tmp"
    tmp.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, directory / RESULT)
    script = directory / REPRO
    script.write_text(
        "#!/bin/sh\n"
        f"# Reruns the cell {result['cell']['id']} alone, with the pins recorded in result.json.\n"
        "# From the runner checkout: .venv/bin/runner … (or `runner repro <this directory>`).\n"
        f"exec {result['repro']}\n",
        encoding="utf-8",
    )
    script.chmod(0o755)
    return directory / RESULT


def read_cell(directory: Path) -> dict[str, Any] | None:
    try:
        data: dict[str, Any] = json.loads((directory / RESULT).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data


def reusable(existing: dict[str, Any] | None, planned: dict[str, Any]) -> bool:
    """An existing graded result with the same plannable pins: resume skips the cell."""
    if not existing or existing.get("infrastructureError") or existing.get("interrupted"):
        return False
    pins = existing.get("pins", {})
    return all(pins.get(k) == planned.get(k) for k in PLANNED_PINS if k in planned) and all(
        pins.get(k) == planned.get(k) for k in ALWAYS_COMPARED
    )
