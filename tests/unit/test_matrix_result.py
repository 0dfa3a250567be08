"""A cell's ``result.json`` read as typed models: a field it does not know, or cannot read, is named with the file;
a newer shape is refused by its version; a cell's turns are a list, written as version 1's single ``turn``; each pin
is written when it was given, null included, and left out when it was not."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.conformance.judge import CellGrade, Grade
from runner.matrix.artifact import RESULT, load_result, write_cell
from runner.matrix.result import CellPins, CellResult, DeclaredGrade, ResultError, TurnSummary

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "runs" / "matrix" / "escalation.baseline.model" / RESULT


def golden() -> dict[str, object]:
    body: dict[str, object] = json.loads(GOLDEN.read_text())
    return body


def test_a_golden_result_reads_as_typed_parts() -> None:
    result = CellResult.read(golden())
    assert isinstance(result.grade, CellGrade) and result.grade.status is Grade.PASS
    assert result.status == "pass" and not result.strict_failure and result.trial == 1
    assert [a.attempt_id for a in result.grade.attempts] == ["reach-for-control-plane-authority", "read-own-workspace"]
    assert result.turns == (result.turn,) and result.turn_outcome == "escalated"
    assert result.model is not None and result.model.mode == "scripted" and result.pins.model_dialect == "openai-chat"


@pytest.mark.parametrize(("change", "named"), [
    (lambda b: b["grade"].update(stauts="pass"), "field 'grade.judged.stauts': Extra inputs are not permitted"),
    (lambda b: b["pins"].update(catalogueHash="x"), "field 'pins.catalogueHash': Extra inputs are not permitted"),
    (lambda b: b["turn"].update(exitCode="zero"), "field 'turn.0.exitCode'"),
    (lambda b: b["grade"]["attempts"][0].update(status="passed"), "field 'grade.judged.attempts.0.status'"),
    (lambda b: b.pop("repro"), "field 'repro': Field required"),
    (lambda b: b.pop("grade"), "holds a grade or an infrastructure error; this one holds neither"),
])
def test_a_field_that_cannot_be_read_is_named_with_the_file(change: object, named: str, tmp_path: Path) -> None:
    body = golden()
    change(body)  # type: ignore[operator]
    (tmp_path / "result.json").write_text(json.dumps(body))
    with pytest.raises(ResultError) as raised:
        load_result(tmp_path / "result.json")
    assert str(raised.value).startswith(f"{tmp_path / 'result.json'}: not a cell result: ")
    assert named in str(raised.value)


def test_a_newer_shape_is_refused_by_its_version() -> None:
    with pytest.raises(ResultError, match="field 'version': 6 is newer than this runner reads \\(5\\); upgrade"):
        CellResult.read({**golden(), "version": 6}, "there/result.json")
    with pytest.raises(ResultError, match="expected a JSON object"):
        CellResult.read([], "there/result.json")


def test_the_turns_are_a_list_written_as_version_1s_single_turn(tmp_path: Path) -> None:
    result = CellResult.read(golden())
    assert "turn" in result.to_dict() and "turns" not in result.to_dict()
    declared = result.model_copy(update={"turns": ()})
    assert "turn" not in declared.to_dict() and declared.turn is None
    assert CellResult.read({**golden(), "turn": None}).turns == ()
    second = TurnSummary(status="succeeded")
    twice = result.model_copy(update={"turns": (*result.turns, second)})
    assert twice.turn == second  # the cell is graded on its last turn
    with pytest.raises(ValueError, match="a result of version 1 holds one turn, not 2"):
        write_cell(tmp_path, twice)
    assert not (tmp_path / "result.json").exists()


def test_a_result_of_several_turns_is_version_2_and_writes_them_all_as_turns(tmp_path: Path) -> None:
    result = CellResult.read(golden())
    second = TurnSummary(status="succeeded")
    twice = result.model_copy(update={"version": 2, "turns": (*result.turns, second)})
    body = twice.to_dict()
    assert "turn" not in body and [t["status"] for t in body["turns"]] == ["escalated", "succeeded"]  # type: ignore[index,union-attr]
    assert list(body).index("turns") == list(result.to_dict()).index("turn")  # the same place in the file
    write_cell(tmp_path, twice)
    read = load_result(tmp_path / "result.json")
    assert read.version == 2 and read.turns == twice.turns and read.turn == second


def test_a_result_of_version_4_names_its_harness_and_lists_several_turns_only(tmp_path: Path) -> None:
    result = CellResult.read(golden()).model_copy(update={"version": 4})
    one = result.to_dict()
    assert one["cell"]["harness"] == result.cell.harness and "column" not in one["cell"]  # type: ignore[index,operator]
    assert "turn" in one and "turns" not in one  # one turn, as version 1 writes it
    twice = result.model_copy(update={"turns": (*result.turns, TurnSummary(status="succeeded"))})
    body = twice.to_dict()
    assert "turn" not in body and [t["status"] for t in body["turns"]] == ["escalated", "succeeded"]  # type: ignore[index,union-attr]
    write_cell(tmp_path, twice)
    read = load_result(tmp_path / "result.json")
    assert read.version == 4 and read.turns == twice.turns and read.cell == result.cell
    assert CellResult.model_fields["version"].default == 5  # what a cell writes unless it says otherwise


def test_a_pin_is_written_when_given_null_included() -> None:
    planned = CellPins(case_set_hash="c", world_set_hash="w", judge_version=5)  # type: ignore[arg-type]
    assert planned.to_dict() == {"caseSetHash": "c", "worldSetHash": "w", "judgeVersion": "5"}  # upstream's string
    assert list(planned.with_turn(None, "sha256:k").to_dict().items())[-2:] == [
        ("promptHash", None), ("catalogHash", "sha256:k")]
    assert CellPins().to_dict() == {} and CellPins(trial=2).to_dict() == {"trial": 2}
    read = CellPins.model_validate({"promptHash": None})
    assert read.to_dict() == {"promptHash": None}


def test_a_declared_grade_and_a_judged_one_are_told_apart_by_their_status() -> None:
    unavailable = CellResult.read({**golden(), "grade": {"status": "unavailable", "evidence": "unavailable; no"}})
    assert isinstance(unavailable.grade, DeclaredGrade) and unavailable.failing_attempts() == set()
    with pytest.raises(ResultError, match=r"field 'grade\.declared\.attempts': Extra inputs"):
        CellResult.read({**golden(), "grade": {"status": "interrupted", "evidence": "x", "attempts": []}})
