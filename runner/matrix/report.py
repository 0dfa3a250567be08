"""Merge cell directories into one report: the manifest (JSON), a Markdown table like upstream's, JUnit
XML for CI, and the expected-failures gate.

A cell directory holds ``result.json`` (a :class:`~runner.matrix.result.CellResult`, written by
:mod:`runner.matrix.artifact`). The gate passes on known failures, fails on new ones, and fails on stale entries
(an expected failure that now passes). Which grades fail is the judge's rule (``CellResult.strict_failure``).
Cells are comparable only when their pins match; the report says which pins differ when they do not.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from runner.errors import UsageError
from runner.matrix.artifact import RESULT, load_result
from runner.matrix.result import INFRASTRUCTURE_ERROR, CellResult, ResultError

SHARED_PINS = ("caseSetHash", "worldSetHash", "judgeVersion")


class ReportError(UsageError, ValueError):
    """A cell directory or an expected-failures file that cannot be read; names the file."""


def load_cells(paths: list[Path]) -> list[CellResult]:
    """Every ``result.json`` under the given directories (or the files themselves), sorted by cell id."""
    found: dict[str, CellResult] = {}
    for path in paths:
        if not path.exists():
            raise ReportError(f"{path}: no such file or directory")
        files = [path] if path.is_file() else sorted(path.rglob(RESULT))
        for file in files:
            try:
                cell = load_result(file)
            except ResultError as err:
                raise ReportError(str(err)) from None
            found[cell.id] = cell  # a later directory wins for the same cell
    return [found[k] for k in sorted(found)]


@dataclass(frozen=True)
class Expected:
    cell: str
    attempt: str | None = None
    reason: str = ""


def load_expected(path: Path) -> list[Expected]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or []
    except (OSError, yaml.YAMLError) as err:
        raise ReportError(f"{path}: cannot read the expected failures: {err}") from None
    if not isinstance(data, list):
        raise ReportError(f"{path}: expected a list of entries with 'cell' (and optionally 'attempt', 'reason')")
    out = []
    for n, entry in enumerate(data):
        if not isinstance(entry, dict) or not isinstance(entry.get("cell"), str):
            raise ReportError(f"{path}: entry {n}: field 'cell': expected a cell id such as escalation.baseline.codex")
        unknown = set(entry) - {"cell", "attempt", "reason"}
        if unknown:
            raise ReportError(f"{path}: entry {n}: unknown field(s) {sorted(unknown)}")
        out.append(Expected(entry["cell"], entry.get("attempt"), str(entry.get("reason", ""))))
    return out


@dataclass
class Gate:
    new: list[str] = field(default_factory=list)
    known: list[str] = field(default_factory=list)
    stale: list[str] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return not self.new and not self.stale

    def to_json(self) -> dict[str, Any]:
        return {"passed": self.passed, "new": self.new, "known": self.known, "stale": self.stale}


def gate(cells: list[CellResult], expected: list[Expected]) -> Gate:
    result = Gate()
    by_id = {c.id: c for c in cells}
    for cell_id, cell in by_id.items():
        if not cell.strict_failure:
            continue
        entries = [e for e in expected if e.cell == cell_id]
        covered = any(e.attempt is None for e in entries) or (
            bool(entries) and cell.failing_attempts() <= {e.attempt for e in entries}
        )
        (result.known if covered else result.new).append(cell_id)
    for entry in expected:
        graded = by_id.get(entry.cell)
        if graded is None:
            continue  # not part of this run: neither known nor stale
        still = graded.strict_failure and (entry.attempt is None or entry.attempt in graded.failing_attempts())
        if not still:
            result.stale.append(entry.cell + (f" (attempt {entry.attempt})" if entry.attempt else ""))
    return result


def write_reports(out: Path, cell_dirs: list[Path]) -> None:
    """The run's own report files beside its cells: manifest.json, report.md, junit.xml (no gate)."""
    loaded = load_cells([d for d in cell_dirs if (d / RESULT).exists()])
    (out / "manifest.json").write_text(json.dumps(manifest(loaded), indent=2) + "\n")
    (out / "report.md").write_text(markdown(loaded))
    (out / "junit.xml").write_text(junit(loaded))


def comparability(cells: list[CellResult]) -> list[str]:
    """Problems that make cells not comparable: differing shared pins, differing per-case catalogues."""
    problems = []
    for pin in SHARED_PINS:
        values = sorted({str(c.pins.get(pin)) for c in cells})
        if len(values) > 1:
            problems.append(f"{pin} differs between cells: {', '.join(values)}")
    by_case: dict[str, set[str]] = {}
    for cell in cells:
        if cell.pins.get("catalogHash"):
            by_case.setdefault(cell.cell.case + "." + cell.cell.condition, set()).add(cell.pins["catalogHash"])
    problems += [
        f"{row}: the columns were served different catalogues ({', '.join(sorted(h))})"
        for row, h in sorted(by_case.items())
        if len(h) > 1
    ]
    return problems


def manifest(cells: list[CellResult], gate_result: Gate | None = None) -> dict[str, Any]:
    columns = sorted({c.cell.column for c in cells})
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for cell in cells:
        key = (cell.cell.case, cell.cell.condition)
        described = cell.row or {}
        row = rows.setdefault(
            key,
            {
                "caseId": key[0],
                "conditionId": key[1],
                "kind": described.get("kind"),
                "invariant": described.get("invariant"),
                "expectedOutcome": described.get("expectedOutcome"),
                "cells": [],
            },
        )
        row["cells"].append(
            {
                "columnId": cell.cell.column,
                "status": cell.status,
                **{k: v for k, v in (cell.grade or {}).items() if k not in ("status", "attempts")},
                **_outcome(cell),
            }
        )
    first = cells[0].pins if cells else {}
    return {
        "version": "1",
        "judgeVersion": first.get("judgeVersion"),
        "caseSetHash": first.get("caseSetHash"),
        "worldSetHash": first.get("worldSetHash"),
        "columns": [{"id": col, "promptSetHash": _prompt_set(cells, col)} for col in columns],
        "rows": [rows[k] for k in sorted(rows, key=_suite_order)],
        "comparability": comparability(cells),
        "gate": gate_result.to_json() if gate_result else None,
    }


def _outcome(cell: CellResult) -> dict[str, Any]:
    """The CLI's own outcome and version, when a turn ran (what ``runner report --compare`` diffs)."""
    found = {"cliVersion": cell.pins.get("cliVersion")}
    if cell.turn is not None:
        found |= {"harnessOutcome": cell.turn.harness_outcome, "harnessErrorCode": cell.turn.harness_error_code}
    return {k: v for k, v in found.items() if v is not None}


def _suite_order(key: tuple[str, str]) -> tuple[int, int, str, str]:
    """Rows in the case set's own order (upstream's suite order), unknown ones last."""
    from runner.conformance.cases import CASES

    order = list(CASES)
    case = CASES.get(key[0])
    conditions = [c.id for c in case.conditions] if case else []
    return (
        order.index(key[0]) if case else len(order),
        conditions.index(key[1]) if key[1] in conditions else 0,
        key[0],
        key[1],
    )


def _prompt_set(cells: list[CellResult], column: str) -> str | None:
    from runner.core.canonical import sha256_hex

    entries = [
        {"case": c.cell.case, "condition": c.cell.condition, "turn": 1, "promptHash": c.pins["promptHash"]}
        for c in cells
        if c.cell.column == column and c.pins.get("promptHash")
    ]
    return sha256_hex(entries) if entries else None


def markdown(cells: list[CellResult], gate_result: Gate | None = None) -> str:
    data = manifest(cells, gate_result)
    columns = [c["id"] for c in data["columns"]]
    out = ["# Conformance report", ""]
    out += [
        f"- Case set: `{data['caseSetHash']}`",
        f"- World set: `{data['worldSetHash']}`",
        f"- Grading rules: version {data['judgeVersion']}",
    ]
    out += [f"- Prompt set, `{c['id']}`: `{c['promptSetHash']}`" for c in data["columns"] if c["promptSetHash"]]
    for problem in data["comparability"]:
        out.append(f"- **Not comparable:** {problem}")
    out += [
        "",
        "| Invariant | Expected outcome | Condition | " + " | ".join(columns) + " |",
        "|---|---|---|" + "---|" * len(columns),
    ]
    for row in data["rows"]:
        by_col = {c["columnId"]: c["status"].replace("_", " ") for c in row["cells"]}
        out.append(
            f"| {row['invariant'] or row['caseId']} | {row['expectedOutcome'] or ''} | "
            f"`{row['caseId']}.{row['conditionId']}` | " + " | ".join(by_col.get(c, "—") for c in columns) + " |"
        )
    out += ["", "## Evidence per row", ""]
    for row in data["rows"]:
        out.append(f"### `{row['caseId']}.{row['conditionId']}`")
        for cell in row["cells"]:
            out.append(f"- **{cell['columnId']}**: {cell.get('evidence', cell['status'])}")
        out.append("")
    failing = [c for c in cells if c.strict_failure or c.status == INFRASTRUCTURE_ERROR]
    if failing:
        out += ["## Failing cells: reproduce one alone", ""]
        out += [f"- `{c.id}` ({c.status}): `{c.repro}`" for c in failing]
        out.append("")
    if gate_result is not None:
        out += [
            "## Gate",
            "",
            f"**{'passed' if gate_result.passed else 'FAILED'}** — "
            f"{len(gate_result.new)} new failure(s), {len(gate_result.known)} known, {len(gate_result.stale)} stale",
        ]
        out += [f"- new: `{c}`" for c in gate_result.new] + [f"- stale (now passes): `{c}`" for c in gate_result.stale]
        out.append("")
    out += ["## Pins", "", "| cell | image | CLI | runner | model | behaviour |", "|---|---|---|---|---|---|"]
    for c in cells:
        p = c.pins
        out.append(
            f"| `{c.id}` | `{str(p.get('imageId', ''))[:19]}` | {p.get('cliVersion', '')} | "
            f"{p.get('runnerVersion', '')} | {p.get('modelMode', '')} | {p.get('behaviour', '')} |"
        )
    return "\n".join(out) + "\n"


def junit(cells: list[CellResult]) -> str:
    suites = ET.Element("testsuites", name="runner conformance")
    for column in sorted({c.cell.column for c in cells}):
        mine = [c for c in cells if c.cell.column == column]
        suite = ET.SubElement(suites, "testsuite", name=column, tests=str(len(mine)))
        failures = skipped = errors = 0
        for cell in mine:
            case = ET.SubElement(suite, "testcase", classname=column, name=f"{cell.cell.case}.{cell.cell.condition}")
            st = cell.status
            evidence = cell.evidence
            if cell.infrastructure_error is not None:
                errors += 1
                ET.SubElement(case, "error", message=cell.infrastructure_error.detail).text = cell.repro
            elif cell.strict_failure:
                failures += 1
                ET.SubElement(case, "failure", message=f"{st}: {evidence}").text = cell.repro
            elif st != "pass":
                skipped += 1
                ET.SubElement(case, "skipped", message=f"{st}: {evidence}")
        suite.set("failures", str(failures))
        suite.set("skipped", str(skipped))
        suite.set("errors", str(errors))
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"
