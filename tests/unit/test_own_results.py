"""Verdicts come only from runner's own files: ``runner report`` (and its gate, and CI's report job) reads a cell
directory's ``result.json`` and its trials' and reruns', never one below ``session/`` (where the CLI's own files are
copied), a turn's ``turn-<n>/`` or an earlier attempt's ``attempt-<n>/``, never through a link; and every id read
back from a result is a plain id before it names a path (``runner repro`` loads ``<harness>.yaml``)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runner.cli import Exit, app
from runner.harnesses.profile import UnknownHarness, find_profile
from runner.matrix.artifact import load_result, result_files, write_cell
from runner.matrix.report import gate, load_cells
from runner.matrix.result import ResultError
from tests.unit.test_matrix_report import result, result_json

REAL = "escalation.baseline.reference"
FORGED = result("escalation.baseline.codex", "fail")  # a failing cell of another column, as a CLI would forge it


def layout(root: Path) -> Path:
    """A run directory as CI's report job downloads it (cells/column-<job>/<cell>/...), with a forged failing result
    everywhere a CLI's files (or a link) could put one."""
    harness = root / "cells" / "column-reference"
    cell = harness / REAL
    write_cell(cell, result(REAL, "pass"))
    write_cell(cell / "trial-2", result(REAL, "pass", trial=2))
    write_cell(cell / "repro-20261201T000000Z-abcdef", result(REAL, "pass"))
    for below in ("session", "session/deeper", "turn-1/session", "turn-2", "attempt-1"):
        write_cell(cell / below, FORGED)
    write_cell(harness / "hidden-tool.baseline.reference" / "session", FORGED)  # a cell whose own result is missing
    elsewhere = root / "elsewhere"
    write_cell(elsewhere / "escalation.baseline.codex", FORGED)
    os.symlink(elsewhere, harness / "linked")  # a directory reached through a link
    (harness / "linked-cell").mkdir()
    os.symlink(elsewhere / "escalation.baseline.codex" / "result.json", harness / "linked-cell" / "result.json")
    return root / "cells"


def test_only_runners_own_results_are_read_and_a_forged_one_never_flips_the_gate(tmp_path: Path) -> None:
    cells = layout(tmp_path)
    found = sorted(str(p.relative_to(cells)) for p in result_files(cells))
    assert found == sorted(f"column-reference/{REAL}/{where}result.json"
                           for where in ("", "repro-20261201T000000Z-abcdef/", "trial-2/"))
    runs = load_cells([cells])
    assert {r.id for r in runs} == {REAL} and all(r.status == "pass" for r in runs)
    assert gate(runs, []).passed
    # the gate of `runner report`, as CI's report job runs it: passes, the forged column never appears
    manifest = tmp_path / "manifest.json"
    ran = CliRunner().invoke(app, ["report", str(cells), "--manifest", str(manifest),
                                   "--markdown", str(tmp_path / "r.md")])
    assert ran.exit_code == 0, ran.stderr
    assert [c["id"] for c in json.loads(manifest.read_text())["harnesses"]] == ["reference"]


def test_a_result_file_that_is_a_link_a_fifo_or_too_large_is_refused_by_name(tmp_path: Path) -> None:
    write_cell(tmp_path / "real", result(REAL, "pass"))
    os.symlink(tmp_path / "real" / "result.json", tmp_path / "link.json")
    os.mkfifo(tmp_path / "fifo.json")
    (tmp_path / "huge.json").write_bytes(b" " * (16 * 1024 * 1024 + 1))
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    for name, why in [("link.json", "a symbolic link, not runner's own file"), ("fifo.json", "not a regular file"),
                      ("huge.json", "larger than"), ("deep.json", "RecursionError")]:
        with pytest.raises(ResultError, match=f"{name}: not a cell result \\(.*{why}"):
            load_result(tmp_path / name)


@pytest.mark.parametrize(("cell", "field", "words"), [
    ({"id": "a.b.../x", "case": "a", "condition": "b", "column": "../x"}, "cell.column", "'../x' is not a harness id"),
    ({"id": "../a.b.x", "case": "../a", "condition": "b", "column": "x"}, "cell.case", "'../a' is not an id"),
    ({"id": "a.b/c.x", "case": "a", "condition": "b/c", "column": "x"}, "cell.condition", "'b/c' is not an id"),
    ({"id": "../../etc", "case": "a", "condition": "b", "column": "x"}, "cell",
     "cell id '../../etc' is not <case>.<condition>.<harness> of this cell"),
])
def test_an_id_that_is_not_plain_is_refused_naming_the_field(tmp_path: Path, cell: dict[str, str], field: str,
                                                               words: str) -> None:
    body = {**result_json("a.b.x", "pass"), "cell": cell}
    (tmp_path / "result.json").write_text(json.dumps(body))
    with pytest.raises(ResultError) as raised:
        load_result(tmp_path / "result.json")
    assert f"result.json: not a cell result: field '{field}': Value error, {words}" in str(raised.value)


def test_a_harness_id_never_names_a_path(tmp_path: Path) -> None:
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    reference = find_profile("reference").source
    (tmp_path / "x.yaml").write_text(Path(reference).read_text().replace("id: reference", "id: x"))
    with pytest.raises(UnknownHarness, match=r"no such harness: '\.\./x'"):
        find_profile("../x", [profiles])


def test_repro_refuses_a_result_whose_column_is_a_path_before_anything_runs(tmp_path: Path,
                                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """`runner repro` loads the column's profile by the id the result names: ``../x`` would reach any ``x.yaml``."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    (tmp_path / "x.yaml").write_text("id: x\nlabel: x\nimage: reference\nargv: [/bin/true]\nunavailable: planted\n")
    monkeypatch.setenv("RUNNER_PROFILES_DIR", str(profiles))
    cell = tmp_path / "cell"
    cell.mkdir()
    forged = result_json("escalation.baseline.x", "pass")
    forged["cell"] = {"id": "escalation.baseline.../x", "case": "escalation", "condition": "baseline",
                      "column": "../x"}
    (cell / "result.json").write_text(json.dumps(forged))
    ran = CliRunner().invoke(app, ["repro", str(cell)])
    assert ran.exit_code == Exit.USAGE
    assert "result.json: not a cell result: field 'cell.column': Value error, '../x' is not a harness id" in ran.stderr
    assert [p.name for p in cell.iterdir()] == ["result.json"]  # no rerun directory: nothing ran
