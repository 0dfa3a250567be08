"""The expected-failures gate (``runner report --expected-failures``), over every run of every cell.

An entry (``.github/expected-failures.yml``, whose header documents the same rules) names a cell, optionally one
attempt of it, a reason, and optionally ``unstable: true`` (a cell whose grade is known to move between runs; the
reason is then required). Which grades fail is the judge's rule (``CellResult.strict_failure``); infrastructure
errors are never gated. Per cell, over all its runs (one with ``--trials 1``):

- **new**: a run fails and no entry covers it. A cell with no entry is expected to pass every run, so a cell that
  passes stably in the baseline and now fails any trial is a new failure.
- **known**: every failing run is covered: by an entry without ``attempt``, or by entries naming each failing
  attempt. A plain entry and an ``unstable`` one cover failing runs alike.
- **stale**: a plain entry (a known failure) whose cell passed in any run: it is fixed, or it is unstable and the
  entry should say so; an ``unstable`` entry whose cell has become stable: at least two runs, none failing (one
  run cannot show stability, so a single passing run of an unstable cell is neither stale nor new).
- An entry for a cell that was not run (filtered out, unavailable) is neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import yaml
from pydantic import ConfigDict, Field, SerializerFunctionWrapHandler, model_serializer

from runner.conformance.jsonmodel import JsonModel, JsonValue
from runner.matrix.result import CellResult
from runner.matrix.series import ReportError, stability

FIELDS = {"cell", "attempt", "reason", "unstable"}


@dataclass(frozen=True)
class Expected:
    cell: str
    attempt: str | None = None
    reason: str = ""
    unstable: bool = False


def load_expected(path: Path) -> list[Expected]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    except (OSError, yaml.YAMLError) as err:
        raise ReportError(f"{path}: cannot read the expected failures: {err}") from None
    if not isinstance(data, list):
        raise ReportError(f"{path}: expected a list of entries with 'cell' (and optionally 'attempt', 'reason', "
                          "'unstable')")
    out = []
    for n, entry in enumerate(data):
        if not isinstance(entry, dict) or not isinstance(entry.get("cell"), str):
            raise ReportError(f"{path}: entry {n}: field 'cell': expected a cell id such as escalation.baseline.codex")
        unknown = set(entry) - FIELDS
        if unknown:
            raise ReportError(f"{path}: entry {n}: unknown field(s) {sorted(unknown)}")
        unstable = entry.get("unstable", False)
        if not isinstance(unstable, bool):
            raise ReportError(f"{path}: entry {n}: field 'unstable': expected true or false")
        reason = str(entry.get("reason") or "").strip()
        if unstable and not reason:
            raise ReportError(f"{path}: entry {n}: field 'reason': an unstable cell must say why its grade moves")
        out.append(Expected(entry["cell"], entry.get("attempt"), reason, unstable))
    return out


class Gate(JsonModel):
    """The verdict, as the manifest's ``gate`` writes it: ``passed`` first, then the cells by kind."""

    # filled in as the cells are read; read back from an earlier manifest, its written ``passed`` is recomputed
    model_config = ConfigDict(frozen=False, extra="ignore")

    new: list[str] = Field(default_factory=list)
    known: list[str] = Field(default_factory=list)
    stale: list[str] = Field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.new and not self.stale

    @model_serializer(mode="wrap")
    def _verdict_first(self, handler: SerializerFunctionWrapHandler) -> dict[str, JsonValue]:
        return {"passed": self.passed, **handler(self)}


def _covered(run: CellResult, entries: list[Expected]) -> bool:
    return any(e.attempt is None for e in entries) or (
        bool(entries) and run.failing_attempts() <= {e.attempt for e in entries}
    )


def _still_fails(run: CellResult, entry: Expected) -> bool:
    return run.strict_failure and (entry.attempt is None or entry.attempt in run.failing_attempts())


def gate(cells: list[CellResult], expected: list[Expected]) -> Gate:
    """The verdict over every run given (several runs of one cell are read together, whatever their group)."""
    result = Gate()
    by_id: dict[str, list[CellResult]] = {}
    for run in cells:
        by_id.setdefault(run.id, []).append(run)
    for cell_id, runs in by_id.items():
        failing = [r for r in runs if r.strict_failure]
        if not failing:
            continue
        entries = [e for e in expected if e.cell == cell_id]
        shown = cell_id + (f" ({stability(runs)})" if len(runs) > 1 else "")
        (result.known if all(_covered(r, entries) for r in failing) else result.new).append(shown)
    for entry in expected:
        graded = [r for r in by_id.get(entry.cell, []) if r.infrastructure_error is None and not r.interrupted]
        if not graded:
            continue  # not part of this run: neither known nor stale
        still = [r for r in graded if _still_fails(r, entry)]
        name = entry.cell + (f" (attempt {entry.attempt})" if entry.attempt else "")
        if entry.unstable:
            if len(graded) > 1 and not still:
                result.stale.append(f"{name} (unstable, now stable: {stability(graded)})")
        elif len(still) < len(graded):
            result.stale.append(name + (f" ({stability(graded)}: fixed, or mark it unstable)" if len(graded) > 1
                                        else ""))
    return result
