"""The report and its gate, and the run orchestrator's resume and retries (with a stand-in cell runner)."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import anyio
import pytest

from runner.harnesses.profile import find_profile
from runner.matrix.artifact import read_cell, write_cell
from runner.matrix.cells import cells
from runner.matrix.plan import CellOptions, CellPlan, plan_cells
from runner.matrix.report import Expected, ReportError, gate, junit, load_cells, load_expected, manifest, markdown
from runner.matrix.result import CellResult
from runner.matrix.run import run_matrix

PINS = {"caseSetHash": "c" * 64, "worldSetHash": "w" * 64, "judgeVersion": 5, "runnerVersion": "0.1.0",
        "promptHash": "p" * 64, "catalogHash": "sha256:" + "k" * 64, "imageId": "sha256:i", "cliVersion": "1",
        "modelMode": "scripted", "behaviour": "cooperative"}


def result(cell_id: str, status: str, attempts: list[dict[str, str]] | None = None, **pins: Any) -> CellResult:
    return CellResult.from_json(result_json(cell_id, status, attempts, **pins))


def result_json(cell_id: str, status: str, attempts: list[dict[str, str]] | None = None, **pins: Any
                ) -> dict[str, Any]:
    case, condition, column = cell_id.split(".")
    return {
        "version": 1, "cell": {"id": cell_id, "case": case, "condition": condition, "column": column},
        "row": {"kind": "k", "invariant": f"inv {case}", "expectedOutcome": "exp"},
        "grade": {"status": status, "evidence": f"{status}; 1 of 1 attempts issued", "attempts": attempts or []},
        "pins": {**PINS, **pins}, "repro": f"runner exec --harness {column} --case {case} --condition {condition}",
    }


def test_gate_passes_known_failures_fails_new_ones_and_stale_entries() -> None:
    cells_ = [result("a.base.x", "fail"), result("b.base.x", "pass"), result("c.base.x", "not_exercised")]
    g = gate(cells_, [Expected("a.base.x"), Expected("b.base.x")])
    assert g.known == ["a.base.x"] and g.new == ["c.base.x"] and g.stale == ["b.base.x"] and not g.passed
    assert gate(cells_, [Expected("a.base.x"), Expected("c.base.x")]).passed


def test_gate_per_attempt_entries_cover_only_the_failing_attempts_they_name() -> None:
    cell = result("a.base.x", "fail", [{"id": "one", "status": "fail"}, {"id": "two", "status": "pass"}])
    assert gate([cell], [Expected("a.base.x", "one")]).passed
    assert gate([cell], [Expected("a.base.x", "two")]).new == ["a.base.x"]


def test_expected_failures_file_errors_name_the_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "expected.yml"
    bad.write_text("- attempt: x\n")
    with pytest.raises(ReportError, match="entry 0: field 'cell'"):
        load_expected(bad)
    bad.write_text("- cell: a.b.c\n  colour: red\n")
    with pytest.raises(ReportError, match="unknown field"):
        load_expected(bad)


def test_report_outputs_merge_cells_say_when_pins_differ_and_print_repro_commands(tmp_path: Path) -> None:
    for cell in [result("a.base.x", "pass"), result("a.base.y", "fail", catalogHash="sha256:other")]:
        write_cell(tmp_path / cell.id, cell)
    loaded = load_cells([tmp_path])
    data = manifest(loaded)
    assert [c["id"] for c in data["columns"]] == ["x", "y"]
    assert any("different catalogues" in p for p in data["comparability"])
    text = markdown(loaded, gate(loaded, []))
    assert "| inv a | exp | `a.base` | pass | fail |" in text
    assert "runner exec --harness y --case a --condition base" in text and "FAILED" in text
    suites = ET.fromstring(junit(loaded))
    assert suites.find("testsuite[@name='y']").get("failures") == "1"  # type: ignore[union-attr]
    assert (tmp_path / "a.base.x" / "repro.sh").read_text().rstrip().endswith("--condition base")


def test_run_resumes_finished_cells_and_retries_infrastructure_errors(tmp_path: Path) -> None:
    chosen = plan_cells(cells("reference", "escalation"), CellOptions(), {})
    assert [c.id for c in chosen] == ["escalation.baseline.reference"]
    calls: list[str] = []

    async def flaky(cell: CellPlan, directory: Path) -> CellResult:
        calls.append(cell.id)
        if len(calls) == 1:
            return CellResult.from_json(
                {**result_json(cell.id, "pass"), "infrastructureError": {"kind": "engine", "detail": "503"}}
            )
        outcome = result(cell.id, "pass")
        write_cell(directory, outcome)
        return outcome

    def planned(cell: CellPlan) -> dict[str, Any]:
        return PINS

    summary = anyio.run(lambda: run_matrix(chosen, tmp_path, flaky, planned, retries=2))
    assert calls == [chosen[0].id] * 2 and summary.ran == [chosen[0].id]
    again = anyio.run(lambda: run_matrix(chosen, tmp_path, flaky, planned))
    assert again.reused == [chosen[0].id] and len(calls) == 2  # nothing ran the second time
    changed = anyio.run(lambda: run_matrix(chosen, tmp_path, flaky, lambda c: {**PINS, "imageId": "sha256:new"}))
    assert changed.ran == [chosen[0].id]  # a different image: the cell runs again


def test_load_cells_names_a_bad_file(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "result.json").write_text(json.dumps({"nope": 1}))
    with pytest.raises(ReportError, match="not a cell result"):
        load_cells([tmp_path])
    assert read_cell(tmp_path / "missing") is None
    assert find_profile("reference").id == "reference"
