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
from runner.matrix.plan import CellOptions, CellPlan, plan_cells, with_trials
from runner.matrix.report import Expected, ReportError, gate, junit, load_cells, load_expected, manifest, markdown
from runner.matrix.result import CellPins, CellResult
from runner.matrix.run import run_matrix
from runner.matrix.series import stability

PINS = {"caseSetHash": "c" * 64, "worldSetHash": "w" * 64, "judgeVersion": 5, "runnerVersion": "0.1.0",
        "promptHash": "p" * 64, "catalogHash": "sha256:" + "k" * 64, "imageId": "sha256:i", "cliVersion": "1",
        "modelMode": "scripted", "behaviour": "cooperative"}


def result(cell_id: str, status: str, attempts: list[dict[str, str]] | None = None, **pins: Any) -> CellResult:
    return CellResult.read(result_json(cell_id, status, attempts, **pins))


def grade_json(cell_id: str, status: str, attempts: list[dict[str, str]] | None = None) -> dict[str, Any]:
    """A grade as the judge writes it: every field, each attempt an attack that was made unless it says."""
    case, condition, harness = cell_id.split(".")
    return {
        "caseId": case, "conditionId": condition, "columnId": harness, "status": status, "refusedBy": [],
        "reasonCodes": [], "declared": 1, "attempted": 1, "notApplicable": 0, "recordUsable": True, "recordGaps": [],
        "driverIssued": [], "turns": 1,
        "attempts": [{"role": "attack", "attempted": True, **a} for a in attempts or []],
        "evidence": f"{status}; 1 of 1 attempts issued",
    }


def result_json(cell_id: str, status: str, attempts: list[dict[str, str]] | None = None, **pins: Any
                ) -> dict[str, Any]:
    case, condition, harness = cell_id.split(".")
    return {
        "version": 1, "cell": {"id": cell_id, "case": case, "condition": condition, "column": harness},
        "row": {"kind": "k", "invariant": f"inv {case}", "expectedOutcome": "exp", "condition": None},
        "grade": grade_json(cell_id, status, attempts),
        "pins": {**PINS, **pins}, "repro": f"runner exec --harness {harness} --case {case} --condition {condition}",
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
    data = manifest(loaded).to_dict()
    assert [c["id"] for c in data["harnesses"]] == ["x", "y"]
    assert any("different catalogues" in p for p in data["comparability"])
    text = markdown(loaded, gate(loaded, []))
    assert "| x | 1 | 1 |  |" in text and "| y | 1 |  | 1 |" in text  # cells by grade: pass, fail
    assert "- `a.base.y` (fail): `runner exec --harness y --case a --condition base`" in text and "FAILED" in text
    known = markdown(loaded, gate(loaded, [Expected("a.base.y")]))  # still listed, said known: the gate passes
    assert "- `a.base.y` (fail, known): `runner exec --harness y --case a --condition base`" in known
    assert "**passed** — 0 new failure(s), 1 known, 0 stale" in known and "Full detail" not in known
    suites = ET.fromstring(junit(loaded))
    assert suites.find("testsuite[@name='y']").get("failures") == "1"  # type: ignore[union-attr]
    assert (tmp_path / "a.base.x" / "repro.sh").read_text().rstrip().endswith("--condition base")


def test_run_resumes_finished_cells_and_retries_infrastructure_errors(tmp_path: Path) -> None:
    chosen = plan_cells(cells("reference", "escalation"), CellOptions())
    assert [c.id for c in chosen] == ["escalation.baseline.reference"]
    calls: list[str] = []

    async def flaky(cell: CellPlan, directory: Path) -> CellResult:
        calls.append(cell.id)
        if len(calls) == 1:
            return CellResult.read(
                {**result_json(cell.id, "pass"), "infrastructureError": {"kind": "EngineError", "detail": "503"}}
            )
        outcome = result(cell.id, "pass")
        write_cell(directory, outcome)
        return outcome

    def planned(cell: CellPlan) -> CellPins:
        return CellPins.model_validate(PINS)

    summary = anyio.run(lambda: run_matrix(chosen, tmp_path, flaky, planned, retries=2))
    assert calls == [chosen[0].id] * 2 and summary.ran == [chosen[0].id]
    again = anyio.run(lambda: run_matrix(chosen, tmp_path, flaky, planned))
    assert again.reused == [chosen[0].id] and len(calls) == 2  # nothing ran the second time
    moved = CellPins.model_validate({**PINS, "imageId": "sha256:new"})
    changed = anyio.run(lambda: run_matrix(chosen, tmp_path, flaky, lambda c: moved))
    assert changed.ran == [chosen[0].id]  # a different image: the cell runs again


def test_load_cells_names_a_bad_file(tmp_path: Path) -> None:
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "result.json").write_text(json.dumps({"nope": 1}))
    with pytest.raises(ReportError, match="not a cell result"):
        load_cells([tmp_path])
    assert read_cell(tmp_path / "missing") is None
    assert find_profile("reference").id == "reference"


def trial(cell_id: str, status: str, k: int, started: str = "2026-12-01T00:00:00Z", **pins: Any) -> CellResult:
    body = result_json(cell_id, status, **({"trial": k} if k > 1 else {}), **pins)
    return CellResult.read({**body, "startedAt": started, "turn": {"status": "escalated"}})


def test_stability_reads_pass_first_then_the_other_grades_as_they_first_appear() -> None:
    runs = [trial("a.base.x", "not_exercised", 1), trial("a.base.x", "pass", 2)]
    assert stability(runs) == "1/2 pass, 1/2 not_exercised"
    assert stability(runs, spaced=True) == "1/2 pass, 1/2 not exercised"
    assert stability([trial("a.base.x", "pass", k) for k in (1, 2)]) == "2/2 pass"


def test_the_gate_on_unstable_cells() -> None:
    moving = [trial("a.base.x", "pass", 1), trial("a.base.x", "not_exercised", 2)]
    steady = [trial("b.base.x", "pass", 1), trial("b.base.x", "pass", 2)]
    # no entry: a cell expected to pass every run that fails one is a new failure
    assert gate(moving + steady, []).new == ["a.base.x (1/2 pass, 1/2 not_exercised)"]
    # a plain entry (a known failure) whose cell passed a run is stale; an unstable one covers it
    plain = gate(moving, [Expected("a.base.x")])
    assert plain.known and plain.stale == ["a.base.x (1/2 pass, 1/2 not_exercised: fixed, or mark it unstable)"]
    assert gate(moving, [Expected("a.base.x", reason="r", unstable=True)]).passed
    # an unstable cell that became stable (two runs or more, none failing) is stale; one run proves nothing
    assert gate(steady, [Expected("b.base.x", reason="r", unstable=True)]).stale == [
        "b.base.x (unstable, now stable: 2/2 pass)"]
    assert gate(steady[:1], [Expected("b.base.x", reason="r", unstable=True)]).passed
    failing = [trial("c.base.x", "fail", 1), trial("c.base.x", "fail", 2)]
    assert gate(failing, [Expected("c.base.x", reason="r", unstable=True)]).passed  # still fails: still covered


def test_an_unstable_entry_must_say_why(tmp_path: Path) -> None:
    file = tmp_path / "expected.yml"
    file.write_text("- cell: a.b.c\n  unstable: true\n")
    with pytest.raises(ReportError, match="entry 0: field 'reason'"):
        load_expected(file)
    file.write_text("- cell: a.b.c\n  unstable: yes please\n")
    with pytest.raises(ReportError, match="field 'unstable'"):
        load_expected(file)
    file.write_text("- cell: a.b.c\n  unstable: true\n  reason: the model skips the control call\n")
    assert load_expected(file) == [Expected("a.b.c", None, "the model skips the control call", True)]


def test_runs_of_one_cell_on_another_catalogue_are_kept_apart_columns_of_one_row_are_not() -> None:
    runs = [trial("a.base.x", "pass", 1), trial("a.base.x", "pass", 2, catalogHash="sha256:other"),
            trial("a.base.y", "pass", 1, catalogHash="sha256:other")]
    data = manifest(runs).to_dict()
    assert [c["harnessId"] for c in data["rows"][0]["cells"]] == ["x", "y"]
    assert any("different catalogues" in p for p in data["comparability"])  # reported, as it always was
    [kept] = data["keptApart"]
    assert kept["apart"] == ["group 1: catalogHash of a.base.x sha256:" + "k" * 64 + " → sha256:other"]
    text = markdown(runs)
    assert "## Group 2: kept apart" in text and text.count("| x | 1 | 1 |") == 2  # one run of a.base.x in each


def test_junit_is_one_test_per_cell_with_its_runs_in_the_output() -> None:
    runs = [trial("a.base.x", "pass", 1), trial("a.base.x", "fail", 2)]
    suite = ET.fromstring(junit(runs)).find("testsuite[@name='x']")
    assert suite is not None and suite.get("tests") == "1" and suite.get("failures") == "1"
    out = suite.find("testcase/system-out")
    assert out is not None and (out.text or "").splitlines()[1].startswith("run 2 (trial 2): fail")
    assert ET.fromstring(junit(runs[:1])).find("testsuite/testcase/system-out") is None  # one run: as before


def test_a_byte_identical_copy_of_a_run_is_one_run_a_rerun_is_another(tmp_path: Path) -> None:
    one = trial("a.base.x", "pass", 1)
    write_cell(tmp_path / "a" / one.id, one)
    write_cell(tmp_path / "copy" / one.id, one)
    write_cell(tmp_path / "b" / one.id, one.model_copy(update={"started_at": "2026-12-01T00:00:09Z"}))
    assert len(load_cells([tmp_path / "a", tmp_path / "copy", tmp_path / "a" / one.id])) == 1
    assert [r.started_at for r in load_cells([tmp_path / "b", tmp_path / "a"])] == [
        "2026-12-01T00:00:09Z", "2026-12-01T00:00:00Z"]  # in the order the directories were given


def test_trials_of_a_cell_run_one_after_another_and_resume_counts_them(tmp_path: Path) -> None:
    plans = with_trials(plan_cells(cells("reference", "escalation,escalation-refused"), CellOptions()), 3)
    # the declared row (escalation-refused is not applicable on an MCP column) is written once
    assert [(p.id, p.trial) for p in plans] == [("escalation.baseline.reference", k) for k in (1, 2, 3)] + [
        ("escalation-refused.escalation-withheld.reference", 1)]
    assert plans[1].planned_pins().trial == 2 and "trial" not in plans[0].planned_pins().to_dict()
    running: list[str] = []
    overlapped: list[bool] = []

    async def one(cell: CellPlan, directory: Path) -> CellResult:
        overlapped.append(any(r == cell.id for r in running))
        running.append(cell.id)
        await anyio.sleep(0.01)
        running.remove(cell.id)
        outcome = trial(cell.id, "pass", cell.trial)
        write_cell(directory, outcome)
        return outcome

    def planned(cell: CellPlan) -> CellPins:
        return CellPins.model_validate({**PINS, **({"trial": cell.trial} if cell.trial > 1 else {})})

    summary = anyio.run(lambda: run_matrix(plans, tmp_path, one, planned, jobs=4, per_harness=4))
    assert not any(overlapped) and len(summary.ran) == 4
    assert (tmp_path / "escalation.baseline.reference" / "trial-3" / "result.json").is_file()
    assert read_cell(tmp_path / "escalation.baseline.reference" / "trial-2") is not None
    again = anyio.run(lambda: run_matrix(plans, tmp_path, one, planned))
    assert again.ran == [] and len(again.reused) == 4
    more = with_trials(plans[:1], 4)
    assert anyio.run(lambda: run_matrix(more, tmp_path, one, planned)).ran == [
        "escalation.baseline.reference trial 4"]


def test_an_interrupted_run_that_never_knew_its_pins_is_not_kept_apart() -> None:
    graded = trial("a.base.x", "pass", 1)
    cut = CellResult.read({"version": 1, "cell": graded.cell.to_dict(), "interrupted": True, "pins": {},
                           "grade": {"status": "interrupted", "evidence": "interrupted"}, "repro": ""})
    data = manifest([cut, graded]).to_dict()
    assert data["keptApart"] == [] and data["caseSetHash"] == "c" * 64
    assert data["rows"][0]["cells"][0]["stability"] == "1/2 pass, 1/2 interrupted"


# --- the Markdown summary of a full matrix ------------------------------------------------------------------------

WHY = ("Acme talks only to the Acme service: with no ACME_API_KEY it starts a browser login flow and waits for a "
       "pasted code; its settings have no model provider or base URL. ") * 5  # ~700 characters, as Amp's are
COLUMNS = [f"col{n:02}" for n in range(18)] + ["acme"]  # 19 columns
ROWS = [f"row{n:02}" for n in range(32)]  # 32 rows: 608 cells, as today's full matrix
DECLARED = {"row30", "row31"}  # rows no column runs (not implemented): one run each, as runner run writes them
FAILING, UNSTABLE = "row07.base.col03", "row12.base.col11"


def full_matrix() -> list[CellResult]:
    """608 cells: 18 available columns whose every graded cell ran two trials (one fails both, one moves between
    them), the rows no column runs, and an unavailable column whose 700-character reason every one of its cells
    carries. Each cell's evidence is as long as a real one (~300 characters)."""
    runs = []
    for row in ROWS:
        for harness in COLUMNS:
            cell_id = f"{row}.base.{harness}"
            if row in DECLARED or harness == "acme":  # a cell that runs no turn: no image, no prompt, no catalogue
                body = result_json(cell_id, "not_implemented")  # in every column, an unavailable one included
                body["pins"] = {k: PINS[k] for k in ("caseSetHash", "worldSetHash", "judgeVersion", "runnerVersion",
                                                     "behaviour")} | {"modelMode": "none"}
                if row not in DECLARED:
                    body["grade"] = {"status": "unavailable", "evidence": f"unavailable; {WHY}"}
                runs.append(CellResult.read(body))
                continue
            for k in (1, 2):
                status = "fail" if cell_id == FAILING else "not_exercised" if cell_id == UNSTABLE and k == 2 else "pass"
                run = trial(cell_id, status, k)
                evidence = f"{status}; 3 of 3 attempts issued; refused by `envelope`; " + "record usable; " * 16
                grade = run.grade.model_copy(update={"evidence": evidence})  # type: ignore[union-attr]
                runs.append(run.model_copy(update={"grade": grade}))
    return runs


def test_the_markdown_of_a_full_matrix_stays_a_summary() -> None:
    runs = full_matrix()
    assert len({r.id for r in runs}) == 608
    verdict = gate(runs, [])
    text = markdown(runs, verdict, full_detail="`report.html`")
    lines = text.splitlines()
    size = len(text.encode())
    # said once: the unavailable column's reason (its 30 cells all carry it), and each column's pins
    assert text.count(WHY.strip()) == 1 and f"- **acme** (30 cells): {WHY.strip()}" in lines
    # its counts, its pins, its pass rate over its trials: nothing per row
    assert sum(line.startswith("| col00 |") for line in lines) == 3
    assert "| col00 | 60/60 (95% CI 94-100%) | 30 | 0 | 0 |" in lines
    assert "| col03 | 58/60 (95% CI 89-99%) | 29 | 0 | 1 |" in lines
    assert "| acme | — | — | none | cooperative | — |" in lines
    # counts per harness and grade: 30 graded rows and 2 declared ones, and the two cells that do not pass
    assert lines[lines.index("## Cells by grade, per harness") + 2] == (
        "| Harness | Cells | pass | fail | unstable | not implemented | unavailable |")
    assert "| col00 | 32 | 30 |  |  | 2 |  |" in lines
    assert "| col03 | 32 | 29 | 1 |  | 2 |  |" in lines
    assert "| col11 | 32 | 29 |  | 1 | 2 |  |" in lines
    assert "| acme | 32 |  |  |  | 2 | 30 |" in lines
    assert "Not implemented in any harness (2 rows): `row30.base`, `row31.base`" in lines
    # what a reader acts on: each failing cell with the command that reproduces it, the unstable one's runs
    repro = "runner exec --harness col03 --case row07 --condition base"
    assert f"- `{FAILING}` (2/2 fail): `{repro}`" in lines
    assert f"- `{UNSTABLE}` (1/2 pass, 1/2 not exercised): `runner exec --harness col11 --case row12 " \
           "--condition base`" in lines
    assert f"| `{UNSTABLE}` | pass | not exercised | escalated | 1/2 pass, 1/2 not exercised |" in lines
    assert "**FAILED** — 2 new failure(s), 0 known, 0 stale" in lines
    assert "Full detail, every cell: `report.html`" in lines
    assert "record usable; record usable; record usable; record usable; record usable; record usable" in text
    # the evidence of the 606 cells that pass or are declared is left to the detail: the size is the summary's
    assert text.count("record usable") == 2 * 16 and size < 8_000, size  # 5.7 KB (282 KB before: every evidence)
    assert all(line == line.rstrip() for line in lines)


def test_a_failing_cells_evidence_is_quoted_short_and_on_one_line() -> None:
    body = result_json("a.base.x", "fail")
    body["grade"]["evidence"] = "fail; " + "the CLI said\n  something long " * 100
    text = markdown([CellResult.read(body)])
    [quoted] = [line for line in text.splitlines() if line.startswith("  - fail; the CLI said something long")]
    assert len(quoted) == len("  - ") + 400 and quoted.endswith("…")
