"""Two reports side by side: what a change (a pin bump) did to the grades.

:func:`compare` takes the manifest of an earlier report (``manifest.json``, e.g. the default branch's last
``conformance-report`` artifact) and the manifest of this run, and lists the cells whose grade changed, the cells
only one of them has, and each column's CLI outcomes (``harnessOutcome``, ``harnessErrorCode``) this run shows that
the earlier one never did; :func:`diff_markdown` writes it as the body of a pull request. An earlier report that
is missing is said so, and the run's grades are summarised instead.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from pydantic import ValidationError

from runner.conformance.jsonmodel import problems
from runner.matrix.manifest import Manifest, ManifestCell
from runner.matrix.report import ReportError


@dataclass(frozen=True)
class Changed:
    cell: str
    old: str
    new: str


@dataclass
class Diff:
    changed: list[Changed] = field(default_factory=list)
    added: list[Changed] = field(default_factory=list)  # old is ""
    removed: list[Changed] = field(default_factory=list)  # new is ""
    new_outcomes: list[tuple[str, str, str, str]] = field(default_factory=list)  # column, key, value, first cell
    versions: dict[str, tuple[str, str]] = field(default_factory=dict)  # column -> (old, new) CLI version
    pins: list[str] = field(default_factory=list)  # shared pins that differ: the grades are not comparable
    outcomes_recorded: bool = True  # False when the earlier report predates the outcome fields

    @property
    def empty(self) -> bool:
        return not (self.changed or self.added or self.removed or self.new_outcomes)


def load_manifest(path: Path) -> Manifest | None:
    """The manifest at ``path``, or None when there is none; a file that is not a manifest is an error naming the
    file and the field."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise ReportError(f"{path}: cannot read the manifest: {err}") from None
    if not isinstance(data, dict) or not isinstance(data.get("rows"), list):
        raise ReportError(f"{path}: not a runner manifest (no 'rows' list)")
    try:
        return Manifest.model_validate(data)
    except ValidationError as error:
        raise ReportError(f"{path}: not a runner manifest: {problems(error)}") from None


def _outcomes(cell: ManifestCell) -> dict[str, str | None]:
    return {"harnessOutcome": cell.harness_outcome, "harnessErrorCode": cell.harness_error_code}


def compare(old: Manifest, new: Manifest) -> Diff:
    shared = [("judgeVersion", old.judge_version, new.judge_version),
              ("caseSetHash", old.case_set_hash, new.case_set_hash),
              ("worldSetHash", old.world_set_hash, new.world_set_hash)]
    diff = Diff(pins=[f"{pin}: {was} → {now}" for pin, was, now in shared if was != now])
    before, after = old.cells(), new.cells()
    for cell_id in sorted(before.keys() | after.keys()):
        was, now = before.get(cell_id), after.get(cell_id)
        if was is None and now is not None:
            diff.added.append(Changed(cell_id, "", now.status))
        elif now is None and was is not None:
            diff.removed.append(Changed(cell_id, was.status, ""))
        elif was is not None and now is not None and was.status != now.status:
            diff.changed.append(Changed(cell_id, was.status, now.status))
    diff.outcomes_recorded = any(v is not None for c in before.values() for v in _outcomes(c).values())
    seen = {(c.harness_id, k, v) for c in before.values() for k, v in _outcomes(c).items()}
    for cell_id, cell in sorted(after.items()):
        harness = cell.harness_id
        for key, value in _outcomes(cell).items():
            if value is None or (harness, key, value) in seen:
                continue
            seen.add((harness, key, value))
            if diff.outcomes_recorded:
                diff.new_outcomes.append((harness, key, value, cell_id))
    old_versions, new_versions = _versions(before), _versions(after)
    for harness, new_v in sorted(new_versions.items()):
        old_v = old_versions.get(harness, set())
        if old_v != new_v:
            diff.versions[harness] = (", ".join(sorted(old_v)) or "?", ", ".join(sorted(new_v)))
    return diff


def _versions(cells: dict[str, ManifestCell]) -> dict[str, set[str]]:
    """Each column's CLI versions, where its cells record one."""
    found: dict[str, set[str]] = {}
    for cell in cells.values():
        if cell.cli_version:
            found.setdefault(cell.harness_id, set()).add(cell.cli_version)
    return found


def _grades(data: Manifest) -> str:
    counts = Counter(c.status for c in data.cells().values())
    return ", ".join(f"{n} {status}" for status, n in sorted(counts.items())) or "no cells"


def diff_markdown(old: Manifest | None, new: Manifest, *, old_name: str = "the last report") -> str:
    """The grade diff as Markdown (a pull request's body)."""
    out = ["## Grades against the default branch", ""]
    if old is None:
        out += [f"No earlier report to compare with ({old_name} was not found), so nothing can be said to have "
                "changed. This run's grades: " + _grades(new) + ".", ""]
        return "\n".join(out)
    diff = compare(old, new)
    out += [f"Compared with {old_name}: {_grades(old)} → {_grades(new)}.", ""]
    out += [f"- **Not comparable:** {p}" for p in diff.pins]
    if diff.versions:
        out += ["", "| column | CLI before | CLI now |", "|---|---|---|"]
        out += [f"| `{col}` | {a} | {b} |" for col, (a, b) in diff.versions.items()]
    if diff.empty:
        out += ["", "No cell changed grade, and the CLIs report no outcome they did not report before."]
    if diff.changed:
        out += ["", "### Cells that changed grade", "", "| cell | before | now |", "|---|---|---|"]
        out += [f"| `{c.cell}` | {c.old} | **{c.new}** |" for c in diff.changed]
    if diff.added or diff.removed:
        out += ["", "### Cells in only one report", ""]
        out += [f"- new: `{c.cell}` ({c.new})" for c in diff.added]
        out += [f"- gone: `{c.cell}` (was {c.old})" for c in diff.removed]
    if diff.new_outcomes:
        out += ["", "### New outcomes in the CLIs' own words", "", "| column | field | value | first seen in |",
                "|---|---|---|---|"]
        out += [f"| `{col}` | `{key}` | `{value}` | `{cell}` |" for col, key, value, cell in diff.new_outcomes]
    elif not diff.outcomes_recorded:
        out += ["", f"({old_name} records no CLI outcomes, so new ones cannot be told apart.)"]
    return "\n".join(out) + "\n"
