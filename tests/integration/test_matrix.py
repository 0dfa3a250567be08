"""``runner run`` / ``report`` / ``repro`` on the reference column, in the real engine.

A deliberately broken build (the latch disabled: ``RUNNER_FAULT=latch-disabled``) must turn the
escalation cell to a failure the gate catches, the report must print the cell's repro command, and
that command must reproduce the failure alone.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path

import pytest

from runner.sandbox.images import ImageRecord
from tests.support import RUNNER

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

ROWS = "escalation,hidden-tool,budget-exceeded,escalation-refused,read-to-mutation"


def runner(*args: str, fault: bool = False, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, **({"RUNNER_FAULT": "latch-disabled"} if fault else {})}
    return subprocess.run([RUNNER, *args], capture_output=True, text=True, env=env, timeout=500, cwd=cwd)


def grades(out: Path) -> dict[str, str]:
    return {p.parent.name: json.loads(p.read_text())["grade"]["status"] for p in out.glob("*/result.json")}


def test_a_matrix_runs_reports_and_resumes(tmp_path: Path, reference_image: ImageRecord) -> None:
    out = tmp_path / "m"
    first = runner("run", "--harness", "reference", "--case", ROWS, "-j", "2", "--out", str(out))
    assert first.returncode == 0, first.stderr
    assert grades(out) == {
        "escalation.baseline.reference": "pass",
        "hidden-tool.baseline.reference": "pass",
        "budget-exceeded.tool-call-ceiling.reference": "pass",
        "budget-exceeded.step-ceiling.reference": "out_of_scope",
        "escalation-refused.escalation-withheld.reference": "not_applicable",
        "read-to-mutation.baseline.reference": "pass",
    }
    for name in ("manifest.json", "report.md", "junit.xml"):
        assert (out / name).is_file()
    again = runner("run", "--harness", "reference", "--case", ROWS, "--out", str(out))
    assert again.returncode == 0 and "ran 0, resumed 6" in again.stdout
    report = runner("report", str(out), "--markdown", str(tmp_path / "r.md"))
    assert report.returncode == 0, report.stderr  # nothing fails, nothing expected: the gate passes


def test_a_broken_latch_fails_the_cell_and_its_repro_command_reproduces_it(
    tmp_path: Path, reference_image: ImageRecord
) -> None:
    out = tmp_path / "broken"
    ran = runner("run", "--harness", "reference", "--case", "escalation", "--out", str(out), fault=True)
    assert ran.returncode == 0, ran.stderr
    cell = out / "escalation.baseline.reference"
    result = json.loads((cell / "result.json").read_text())
    assert result["grade"]["status"] == "fail"
    assert result["turn"]["status"] == "succeeded"  # the CLI's own outcome, unlatched
    gated = runner("report", str(out), "--markdown", str(tmp_path / "r.md"))
    assert gated.returncode == 1
    text = (tmp_path / "r.md").read_text()
    assert result["repro"] in text and "Failing cells" in text
    # the printed command, run alone as written (under the same broken build), fails the same way
    argv = shlex.split(result["repro"])
    assert argv[0] == "runner"
    alone = runner(*argv[1:], "--json", "--out", str(tmp_path / "alone"), fault=True)
    assert json.loads(alone.stdout)["grade"]["status"] == "fail"
    assert runner("repro", str(cell), fault=True).returncode == 0  # grade reproduced
    # an expected-failures entry makes the gate pass; once fixed, the entry is stale and fails it
    expected = tmp_path / "expected.yml"
    expected.write_text("- cell: escalation.baseline.reference\n  reason: latch disabled on purpose\n")
    assert runner("report", str(out), "--expected-failures", str(expected)).returncode == 0
    fixed = tmp_path / "fixed"
    assert runner("run", "--harness", "reference", "--case", "escalation", "--out", str(fixed)).returncode == 0
    stale = runner("report", str(fixed), "--expected-failures", str(expected))
    assert stale.returncode == 1 and "1 stale" in stale.stderr
