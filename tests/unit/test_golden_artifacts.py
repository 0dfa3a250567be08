"""The artifacts main wrote before the cell's record became typed models (``tests/golden/``, see its README) are
read and written again by today's code, byte for byte: every ``result.json`` (key order and which fields are
present, null or absent included), every report (``manifest.json``, ``report.md``, ``junit.xml``) merged from those
results, every grade the judge gives the recorded turns, the case list, the JSON ``runner exec`` prints about the
cell, and every hash that pins a run (case set, world set, evaluator, each row's world, spec, catalogue and
prompts)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.conformance.cases import CASES, get_case
from runner.conformance.columns import limits_for
from runner.conformance.hashing import case_set_hash, evaluator_hash, spec_hash, world_hash, world_set_hash
from runner.conformance.judge import grade_cell
from runner.conformance.prompt import instructions_for, prompt_for, prompt_hash
from runner.core.catalogue import resolve_catalogue
from runner.core.world import build_world
from runner.harnesses.profile import find_profile
from runner.matrix.artifact import RESULT, load_result, write_cell
from runner.matrix.compare import load_manifest
from runner.matrix.report import write_reports

GOLDEN = Path(__file__).resolve().parents[1] / "golden"
RUNS = GOLDEN / "runs"
RESULTS = sorted(RUNS.rglob(RESULT))
REPORTED = sorted(p.parent for p in RUNS.rglob("manifest.json"))
RECORDED = sorted(p for p in RESULTS if (p.parent / "record.json").exists())


def _id(path: Path) -> str:
    return str(path.relative_to(RUNS))


def test_the_golden_set_covers_every_shape_of_result() -> None:
    bodies = [json.loads(p.read_text()) for p in RESULTS]
    assert len(bodies) >= 150
    graded = [b for b in bodies if "attempts" in (b.get("grade") or {}) and "turn" in b]
    declared = [b for b in bodies if "attempts" in (b.get("grade") or {}) and "turn" not in b]
    unavailable = [b for b in bodies if (b.get("grade") or {}).get("status") == "unavailable"]
    interrupted = [b for b in bodies if b.get("interrupted")]
    broken = [b for b in bodies if "infrastructureError" in b]
    assert graded and declared and unavailable and interrupted and broken
    assert any("trial" in b["pins"] for b in bodies) and any("modelFault" in b["pins"] for b in bodies)
    assert any(b["pins"].get("protocolVersion") == "2" for b in bodies)  # an epoch-2 cell (issue 19)
    assert any(b["pins"] == {} for b in bodies) and any("deadlineSeconds" in b for b in bodies)
    assert any(b.get("turn", {}).get("harnessErrorCode", 0) is None for b in bodies)  # a null that is written


@pytest.mark.parametrize("path", RESULTS, ids=_id)
def test_a_result_is_written_again_byte_for_byte(path: Path, tmp_path: Path) -> None:
    write_cell(tmp_path, load_result(path))
    assert (tmp_path / RESULT).read_text(encoding="utf-8") == path.read_text(encoding="utf-8")


@pytest.mark.parametrize("run", REPORTED, ids=_id)
def test_the_reports_are_merged_again_byte_for_byte(run: Path, tmp_path: Path) -> None:
    cells = sorted(d for d in run.iterdir() if d.is_dir())
    write_reports(tmp_path, cells)
    for name in ("manifest.json", "report.md", "junit.xml"):
        assert (tmp_path / name).read_text() == (run / name).read_text(), name


@pytest.mark.parametrize("run", REPORTED, ids=_id)
def test_a_manifest_is_read_back_as_it_was_written(run: Path) -> None:
    # what ``runner report --compare`` reads from an earlier run
    read = load_manifest(run / "manifest.json")
    assert read is not None
    assert json.dumps(read.to_dict(), indent=2) + "\n" == (run / "manifest.json").read_text()


@pytest.mark.parametrize("path", RECORDED, ids=_id)
def test_the_judge_grades_each_recorded_turn_as_it_did(path: Path) -> None:
    body = json.loads(path.read_text())
    if "grade" not in body:
        pytest.skip("an infrastructure error: never graded")
    cell = body["cell"]
    case = get_case(cell["case"])
    condition = case.condition_for(cell["condition"])
    profile = find_profile(cell["column"])  # every golden result is of a version before 4: its harness is a column
    record = json.loads((path.parent / "record.json").read_text())
    limits = limits_for(case, condition, profile.issues_uncatalogued)
    graded = grade_cell(case, condition, limits, record, harness_id=profile.id)
    # the grade as the result holds it (read under its version's keys: columnId), written by today's keys
    held = load_result(path).grade
    assert held is not None and json.dumps(graded.record().to_dict()) == json.dumps(held.to_dict())


def test_a_result_before_version_4_keeps_its_keys_and_a_new_one_names_its_harness(tmp_path: Path) -> None:
    old = load_result(RUNS / "exec" / RESULT)
    assert old.version < 4 and old.cell.harness == "model" and old.grade is not None and old.grade.harness_id
    written = json.loads(old.dumps())
    assert written["cell"]["column"] == "model" and "harness" not in written["cell"]
    assert written["grade"]["columnId"] == "model" and "harnessId" not in written["grade"]
    new = json.loads(old.model_copy(update={"version": 4}).dumps())
    assert new["cell"]["harness"] == "model" and "column" not in new["cell"]
    assert new["grade"]["harnessId"] == "model" and "columnId" not in new["grade"]
    assert "turn" in new and "turns" not in new  # one turn is written as version 1 writes it


def test_a_version_1_manifest_is_read_as_version_2_writes_it() -> None:
    """``runner report --compare`` reads the default branch's last manifest, which an earlier runner wrote."""
    old = load_manifest(GOLDEN / "manifest-v1.json")
    new = load_manifest(RUNS / "trials" / "manifest.json")
    assert old is not None and new is not None and old.version == "1" and new.version == "2"
    # issue 31's figures (a cell's and a harness's rate, usage, failures, tool policy) came after version 1 was
    # written: everything version 1 says, version 2 says the same
    figures = {"rate", "usage", "failure", "failures", "tool_policy"}
    assert {k: c.model_dump(exclude=figures) for k, c in old.cells().items()} == {
        k: c.model_dump(exclude=figures) for k, c in new.cells().items()}
    assert [h.model_dump(exclude=figures) for h in old.harnesses] == [
        h.model_dump(exclude=figures) for h in new.harnesses] and old.harnesses


def test_the_cases_are_listed_as_they_were() -> None:
    runner = str(Path(sys.executable).parent / "runner")
    listed = subprocess.run([runner, "cases", "--json"], capture_output=True, text=True, timeout=60, check=True,
                            env={**os.environ})
    assert listed.stdout == (GOLDEN / "cases.json").read_text()


def test_exec_json_says_the_same_about_the_cell() -> None:
    from runner.cli.turn import _exec_body

    printed = json.loads((GOLDEN / "exec.json").read_text())
    result = load_result(RUNS / "exec" / RESULT)
    about_the_cell = _exec_body(result, None)
    # issue 31 added "failure" after the golden output was captured: every key main printed is printed the same, and
    # the cells here (a pass, a graded failure written before version 5) carry no failure record
    assert list(about_the_cell) == ["cell", "grade", "pins", "repro", "transport", "infrastructureError", "failure"]
    said = {k: v for k, v in about_the_cell.items() if k != "failure"}
    assert json.dumps(said) == json.dumps({k: printed[k] for k in said}) and about_the_cell["failure"] is None
    trials = json.loads((GOLDEN / "exec-trials.json").read_text())["trials"]
    for printed, directory in zip(trials, [RUNS / "exec-trials", RUNS / "exec-trials" / "trial-2"], strict=True):
        body = _exec_body(load_result(directory / RESULT), None)
        said = {k: v for k, v in body.items() if k != "failure"}
        assert json.dumps(said) == json.dumps({k: printed[k] for k in said}) and body["failure"] is None


def test_exec_json_names_why_the_cell_failed() -> None:
    """A cell the infrastructure ended (written before version 5: an image build whose engine call failed) is printed
    with the failure its result names: the cause, the kind and the evidence line."""
    from runner.cli.turn import _exec_body

    result = load_result(RUNS / "constructed" / "image-failed" / "escalation.baseline.model" / RESULT)
    assert result.why is not None
    body = _exec_body(result, None)
    assert body["failure"] == result.why.to_dict()
    assert body["failure"] == {"cause": "engine", "kind": "engine_call_failed", "retried": True, "counts": False,
                               "evidence": "EngineError: the image model could not be built"}


HASHES = json.loads((GOLDEN / "hashes.json").read_text())


def test_the_set_hashes_are_unchanged() -> None:
    assert case_set_hash() == HASHES["caseSetHash"]
    assert world_set_hash() == HASHES["worldSetHash"]
    assert evaluator_hash() == HASHES["evaluatorHash"]


@pytest.mark.parametrize("row", HASHES["rows"], ids=lambda r: f"{r['case']}.{r['condition']}")
def test_each_rows_hashes_are_unchanged(row: dict[str, str]) -> None:
    case = CASES[row["case"]]
    condition = case.condition_for(row["condition"])
    assert world_hash(condition) == row["worldHash"]
    assert spec_hash(case, condition) == row["specHash"]
    if "unarmed" in row:
        return
    world = build_world(condition.world)
    assert "sha256:" + resolve_catalogue(world, "golden").catalog_hash == row["catalogHash"]
    instructions = instructions_for(world.grants)
    for uncatalogued, key in ((True, "promptHashUncatalogued"), (False, "promptHashCatalogued")):
        prompt = prompt_for(case, issue_uncatalogued=uncatalogued, condition=condition)
        assert prompt_hash(instructions, prompt) == row[key]


def test_the_pinned_hashes_of_the_golden_runs_are_the_ones_computed() -> None:
    rows = {f"{r['case']}.{r['condition']}": r for r in HASHES["rows"]}
    pinned = [json.loads(p.read_text()) for p in RESULTS]
    turns = [b for b in pinned if "promptHash" in b["pins"]]
    assert turns
    for body in turns:
        row = rows[f"{body['cell']['case']}.{body['cell']['condition']}"]
        assert body["pins"]["catalogHash"] == row["catalogHash"]
        assert body["pins"]["promptHash"] in (row["promptHashUncatalogued"], row["promptHashCatalogued"])
    for body in pinned:
        if "caseSetHash" in body["pins"]:
            # the runs were written before issue 19 moved the set hashes: they keep the ones they were run under
            assert (body["pins"]["caseSetHash"], body["pins"]["worldSetHash"]) == (
                HASHES["runsCaseSetHash"], HASHES["runsWorldSetHash"])



def test_an_older_result_without_causes_and_with_a_numeric_judge_version_still_reads(tmp_path: Path) -> None:
    """Results written before upstream's newer record shape (issue 31) wrote the judge version as a number (these
    golden runs: judge 5) and left ``causes`` out when empty: they are read, their grade's causes as [], and a judge
    version number is the same judge as the string newer records write."""
    from runner.conformance.hashing import comparable, current_pins

    path = RUNS / "matrix" / "escalation.baseline.model" / RESULT
    body = json.loads(path.read_text())
    assert body["grade"]["causes"] == [] and body["pins"]["judgeVersion"] == 5
    del body["grade"]["causes"]
    older = tmp_path / RESULT
    older.write_text(json.dumps(body, indent=2) + "\n")
    read = load_result(older)
    assert read.grade is not None and read.grade.to_dict()["causes"] == []
    assert read.pins.judge_version == "5"  # held as upstream's string, written back as the number it was
    assert json.loads(read.dumps())["pins"]["judgeVersion"] == 5
    assert "judgeVersion" not in comparable({"judgeVersion": 6}, {"judgeVersion": current_pins().judge_version})
    assert comparable({"judgeVersion": 5}, {"judgeVersion": current_pins().judge_version}) == ["judgeVersion"]
