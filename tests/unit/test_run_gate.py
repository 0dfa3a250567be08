"""``runner run`` applies the expected-failures gate at its end, as ``runner report`` does, and exits by it: the
cells that run no turn (``--declared-only``) are written without an engine, so the gate's exits are shown here
through the real command."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from runner.cli.app import app
from runner.errors import Exit

# a row the reference harness declares not applicable: graded from what is declared, never a failure
DECLARED = "escalation-refused.escalation-withheld.reference"


def _run(out: Path, *extra: str) -> tuple[int, str]:
    done = CliRunner().invoke(app, ["run", "--harness", "reference", "--case", "escalation-refused", "--declared-only",
                                    "--out", str(out), *extra])
    return done.exit_code, done.stderr


def test_a_run_whose_cells_pass_the_gate_exits_0(tmp_path: Path) -> None:
    code, said = _run(tmp_path / "m")
    assert code == 0 and "gate passed: 0 new, 0 known, 0 stale" in said, said
    result = json.loads((tmp_path / "m" / DECLARED / "result.json").read_text())
    assert result["grade"]["status"] == "not_applicable"


def test_a_stale_expected_failure_fails_the_run_as_it_fails_the_report(tmp_path: Path) -> None:
    expected = tmp_path / "expected.yml"
    expected.write_text(f"- cell: {DECLARED}\n  reason: said to fail, but it does not\n")
    code, said = _run(tmp_path / "m", "--expected-failures", str(expected))
    assert code == Exit.VERDICT and "gate FAILED: 0 new, 0 known, 1 stale" in said, said
    assert (tmp_path / "m" / DECLARED / "result.json").is_file()  # the cells are written whatever the exit
    reported = CliRunner().invoke(app, ["report", str(tmp_path / "m"), "--expected-failures", str(expected),
                                        "--markdown", str(tmp_path / "r.md")])
    assert reported.exit_code == code and "1 stale" in reported.stderr  # the same gate, the same exit


def test_an_unreadable_expected_failures_file_fails_before_any_cell_is_run(tmp_path: Path) -> None:
    expected = tmp_path / "expected.yml"
    expected.write_text("- reason: names no cell\n")
    code, said = _run(tmp_path / "m", "--expected-failures", str(expected))
    assert code == Exit.USAGE and str(expected) in said, said
    assert not (tmp_path / "m" / DECLARED).exists()


def test_run_help_says_its_exit_codes() -> None:
    text = CliRunner().invoke(app, ["run", "--help"], terminal_width=200).output
    assert "--expected-failures" in text and "1 when the gate failed" in text


def test_the_retrying_line_says_why_the_attempt_ended_by_its_cause() -> None:
    """A graded attempt whose cause's rule retries it is not called an infrastructure error: the line is the
    failure's own (cause, kind, evidence), and what a CLI put in the evidence is shown, never obeyed."""
    from runner.cli.matrix import retrying_line
    from runner.conformance.failures import failure
    from runner.matrix.result import CellResult, FailureRecord, InfrastructureProblem
    from tests.unit.test_matrix_report import result_json

    graded = CellResult.read(result_json("a.base.x", "fail")).model_copy(update={
        "failure": FailureRecord.of(failure("vendor_error", "the vendor answered 529 \x1b[2J"))})
    assert retrying_line("a.base.x", graded) == (
        "  a.base.x: model_api (vendor_error): the vendor answered 529 \\x1b[2J, retrying")
    # a result written before version 5: its infrastructure error names the failure
    old = CellResult.read(result_json("a.base.x", "pass")).model_copy(update={
        "infrastructure_error": InfrastructureProblem(kind="ContainerStartError", detail="no room")})
    assert retrying_line("a.base.x", old).startswith("  a.base.x: engine (") and "no room" in retrying_line(
        "a.base.x", old)
    assert retrying_line("a.base.x", None) == "  a.base.x: the attempt ended without a record, retrying"
