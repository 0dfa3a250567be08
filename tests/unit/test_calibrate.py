"""``runner profiles calibrate``: each column's cell_seconds from a finished run, on a run directory built by hand
(results taken from the golden run, their wall times set here) and profiles copied to a temporary directory."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from runner.harnesses.profile import load_profile, shipped_profile
from runner.matrix.calibrate import CalibrationError, calibrate, figure, rewritten
from runner.matrix.cells import MatrixCell
from runner.matrix.plan import profile_hash

GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "runs"
RUNNER = str(Path(sys.executable).parent / "runner")


def cell(run: Path, name: str, source: Path, seconds: float, *, trial: int = 1) -> None:
    """A cell directory holding ``source``'s result with its wall time set to ``seconds`` (trial k in trial-k/)."""
    body = json.loads(source.read_text())
    body["elapsedSeconds"] = seconds
    if trial > 1:
        body["pins"]["trial"] = trial
    directory = run / name / (f"trial-{trial}" if trial > 1 else "")
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "result.json").write_text(json.dumps(body))


@pytest.fixture()
def run(tmp_path: Path) -> Path:
    """reference: turns of 2.0, 3.0 and 10.04 s (a trial among them), one infrastructure error and one declared
    row; model: one turn of 1.23 s. Medians: reference 3.0, model 1.3 (rounded up)."""
    out = tmp_path / "run"
    matrix = GOLDEN / "matrix"
    turn_ref = matrix / "escalation.baseline.reference" / "result.json"
    cell(out, "escalation.baseline.reference", turn_ref, 2.0)
    cell(out, "escalation.baseline.reference", turn_ref, 10.04, trial=2)
    cell(out, "bounded-grant.single-use-write-grant.reference",
         matrix / "bounded-grant.single-use-write-grant.reference" / "result.json", 3.0)
    declared = matrix / "escalation-refused.escalation-withheld.reference" / "result.json"
    assert not json.loads(declared.read_text()).get("turn")
    cell(out, "escalation-refused.escalation-withheld.reference", declared, 0.0)
    broken = GOLDEN / "constructed" / "wiring" / "escalation.baseline.model" / "result.json"
    assert json.loads(broken.read_text())["infrastructureError"]
    cell(out, "broken.model", broken, 99.0)
    cell(out, "escalation.baseline.model", matrix / "escalation.baseline.model" / "result.json", 1.23)
    return out


@pytest.fixture()
def profiles(tmp_path: Path) -> Path:
    """The shipped reference and model profiles, their figures set here (3 and 4 s), not whatever the tree holds
    since its last calibration."""
    directory = tmp_path / "profiles"
    directory.mkdir()
    for name, seconds in (("reference", 3), ("model", 4)):
        text = re.sub(r"(?m)^cell_seconds:.*$", f"cell_seconds: {seconds}", shipped_profile(name).read_text())
        assert f"\ncell_seconds: {seconds}\n" in text
        (directory / f"{name}.yaml").write_text(text)
    return directory


def test_figure_is_the_median_rounded_up_to_a_tenth() -> None:
    assert figure([2.0, 3.0, 10.04]) == 3.0
    assert figure([1.23]) == 1.3
    assert figure([1.2, 1.3]) == 1.3  # 1.25 rounds up
    assert figure([0.001]) == 0.1


def test_each_column_gets_the_median_of_its_turns_and_only_its_line_changes(run: Path, profiles: Path) -> None:
    before = {name: (profiles / f"{name}.yaml").read_text() for name in ("reference", "model")}
    found = {c.harness: c for c in calibrate([run], [profiles], today="2026-12-02")}
    assert (found["reference"].before, found["reference"].after, found["reference"].cells) == (3.0, 3.0, 3)
    assert not found["reference"].changed
    assert (profiles / "reference.yaml").read_text() == before["reference"]  # unchanged: not rewritten at all
    model = found["model"]
    assert (model.before, model.after, model.cells, model.changed) == (4.0, 1.3, 1, True)
    assert model.file == str(profiles / "model.yaml")
    text = (profiles / "model.yaml").read_text()
    old_lines, new_lines = before["model"].splitlines(), text.splitlines()
    assert len(old_lines) == len(new_lines)
    differ = [(a, b) for a, b in zip(old_lines, new_lines, strict=True) if a != b]
    assert differ == [("cell_seconds: 4",
                       "cell_seconds: 1.3  # median of 1 cells, runner profiles calibrate, 2026-12-02")]
    assert load_profile(profiles / "model.yaml").cell_seconds == 1.3


def test_dry_run_writes_nothing(run: Path, profiles: Path) -> None:
    before = (profiles / "model.yaml").read_bytes()
    [model] = [c for c in calibrate([run], [profiles], write=False) if c.harness == "model"]
    assert model.changed and model.after == 1.3
    assert (profiles / "model.yaml").read_bytes() == before


def test_a_profile_without_the_field_gets_it_appended() -> None:
    assert rewritten("id: x\nlabel: X", 2.5, "n") == "id: x\nlabel: X\ncell_seconds: 2.5  # n\n"
    assert rewritten("id: x\ncell_seconds: 80 # old\nwind_down: {}\n", 12.0, "n") == (
        "id: x\ncell_seconds: 12  # n\nwind_down: {}\n"
    )
    with pytest.raises(CalibrationError, match="more than once"):
        rewritten("cell_seconds: 1\ncell_seconds: 2\n", 3.0, "n")


def test_calibrating_does_not_change_the_profile_hash(run: Path, profiles: Path) -> None:
    """The figure plans CI jobs and changes no turn: a run's finished cells are still resumed after it."""
    from runner.conformance.cases import get_case

    case = get_case("escalation")
    hashed = lambda: profile_hash(MatrixCell(case, case.condition, load_profile(profiles / "model.yaml")))  # noqa: E731
    before = hashed()
    calibrate([run], [profiles])
    assert (profiles / "model.yaml").read_text() != shipped_profile("model").read_text()
    assert hashed() == before
    (profiles / "model.yaml").write_text((profiles / "model.yaml").read_text().replace("label:", "label: x"))
    assert hashed() != before  # any other edit still moves it


def test_a_directory_with_no_turn_is_an_error_naming_it(tmp_path: Path) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(CalibrationError, match="no cell that ran a turn"):
        calibrate([empty])


def test_the_command_prints_json_and_exits_2_on_a_missing_directory(run: Path, profiles: Path, tmp_path: Path) -> None:
    proc = subprocess.run([RUNNER, "profiles", "calibrate", str(run), "--profiles-dir", str(profiles), "--dry-run",
                           "--json"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    body = json.loads(proc.stdout)
    assert body["dryRun"] is True
    assert [(c["harness"], c["before"], c["after"], c["changed"]) for c in body["harnesses"]] == [
        ("model", 4.0, 1.3, True), ("reference", 3.0, 3.0, False)]
    missing = subprocess.run([RUNNER, "profiles", "calibrate", str(tmp_path / "nothing")], capture_output=True,
                             text=True, timeout=60)
    assert missing.returncode == 2
    assert f"runner: {tmp_path / 'nothing'}: no such file or directory" in missing.stderr.splitlines()
