"""`runner report --compare`: the grade diff against an earlier report's manifest (the bump workflow's pull
request body)."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from runner.cli import app
from runner.matrix.artifact import write_cell
from runner.matrix.compare import compare, diff_markdown
from runner.matrix.report import load_cells, manifest
from runner.matrix.result import CellResult
from tests.unit.test_matrix_report import grade_json, result_json


def cell(cell_id: str, status: str, outcome: str | None = None, code: str | None = None, cli: str = "1"
         ) -> CellResult:
    data = result_json(cell_id, status, cliVersion=cli)
    if outcome:
        data["turn"] = {"status": "escalated", "harnessOutcome": outcome, "harnessErrorCode": code}
    return CellResult.read(data)


def test_the_manifest_carries_each_cells_cli_outcome_and_version() -> None:
    data = manifest([cell("a.base.x", "pass", "fail", "api_error", cli="2.1.332")]).to_dict()
    graded = {k: v for k, v in grade_json("a.base.x", "pass").items() if k not in ("status", "attempts", "columnId")}
    assert data["rows"][0]["cells"][0] == {
        "harnessId": "x", "status": "pass", **graded, "cliVersion": "2.1.332", "harnessOutcome": "fail",
        "harnessErrorCode": "api_error"}


def test_compare_lists_changed_grades_new_and_gone_cells_new_outcomes_and_cli_versions() -> None:
    old = manifest([cell("a.base.x", "pass", "complete"), cell("b.base.x", "pass", "complete"),
                    cell("c.base.y", "fail")])
    new = manifest([cell("a.base.x", "fail", "fail", "harness_failed", cli="2"), cell("b.base.x", "pass", "complete",
                    cli="2"), cell("d.base.y", "pass")])
    diff = compare(old, new)
    assert [(c.cell, c.old, c.new) for c in diff.changed] == [("a.base.x", "pass", "fail")]
    assert [c.cell for c in diff.added] == ["d.base.y"] and [c.cell for c in diff.removed] == ["c.base.y"]
    assert diff.new_outcomes == [("x", "harnessOutcome", "fail", "a.base.x"),
                                 ("x", "harnessErrorCode", "harness_failed", "a.base.x")]
    assert diff.versions == {"x": ("1", "2")} and diff.pins == []
    text = diff_markdown(old, new, old_name="main's report")
    assert "| `a.base.x` | pass | **fail** |" in text and "| `x` | `harnessErrorCode` | `harness_failed` |" in text
    assert "| `x` | 1 | 2 |" in text and "- gone: `c.base.y` (was fail)" in text
    same = diff_markdown(old, old)
    assert "No cell changed grade" in same and "Cells that changed" not in same


def test_a_missing_earlier_report_is_said_so_and_an_old_one_without_outcomes_too() -> None:
    new = manifest([cell("a.base.x", "pass", "complete")])
    assert "No earlier report to compare with" in diff_markdown(None, new) and "1 pass" in diff_markdown(None, new)
    old = manifest([cell("a.base.x", "pass")])
    old = old.model_copy(update={"judge_version": 4})
    text = diff_markdown(old, new)
    assert "records no CLI outcomes" in text and "**Not comparable:** judgeVersion: 4 → 5" in text


def test_report_compare_prints_the_diff_and_still_applies_the_gate(tmp_path: Path) -> None:
    write_cell(tmp_path / "cells" / "a.base.x", cell("a.base.x", "fail", "fail", "api_error"))
    old = tmp_path / "old.json"
    old.write_text(json.dumps(manifest([cell("a.base.x", "pass", "complete")]).to_dict()))
    done = CliRunner().invoke(app, ["report", str(tmp_path / "cells"), "--compare", str(old),
                                    "--markdown", str(tmp_path / "report.md")])
    assert done.exit_code == 1  # the gate: a new failure
    assert "| `a.base.x` | pass | **fail** |" in done.stdout and "# Conformance report" not in done.stdout
    missing = CliRunner().invoke(app, ["report", str(tmp_path / "cells"), "--compare", str(tmp_path / "none.json"),
                                       "--diff", str(tmp_path / "diff.md")])
    assert "No earlier report" in (tmp_path / "diff.md").read_text() and missing.exit_code == 1
    assert CliRunner().invoke(app, ["report", str(tmp_path / "cells"), "--diff", "x.md"]).exit_code == 2
    assert load_cells([tmp_path / "cells"])[0].turn is not None
