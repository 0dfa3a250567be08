"""``runner run`` / ``report`` / ``repro`` on the reference column, in the real engine.

A deliberately broken build (the latch disabled: ``RUNNER_FAULT=latch-disabled``) must turn the
escalation cell to a failure the gate catches, the report must print the cell's repro command, and
that command must reproduce the failure alone.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from runner.images import ImageRecord
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
    assert ran.returncode == 1 and "gate FAILED: 1 new" in ran.stderr, ran.stderr  # run gates as report does
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
    resumed = runner("run", "--harness", "reference", "--case", "escalation", "--out", str(out),
                     "--expected-failures", str(expected), fault=True)
    assert resumed.returncode == 0 and "resumed 1" in resumed.stdout, resumed.stderr  # the same gate in run
    fixed = tmp_path / "fixed"
    assert runner("run", "--harness", "reference", "--case", "escalation", "--out", str(fixed)).returncode == 0
    stale = runner("report", str(fixed), "--expected-failures", str(expected))
    assert stale.returncode == 1 and "1 stale" in stale.stderr


def _edit(file: Path, **changes: object) -> None:
    """One field of a real result changed (``grade`` status, a pin), the way a moving grade would have left it."""
    data = json.loads(file.read_text())
    if "status" in changes:
        data["grade"]["status"] = changes.pop("status")
    data["pins"].update(changes)
    file.write_text(json.dumps(data, indent=2))


def test_trials_resume_report_side_by_side_merge_only_comparable_runs_and_gate_unstable_cells(
    tmp_path: Path, reference_image: ImageRecord
) -> None:
    a, b = tmp_path / "a", tmp_path / "b"
    first = runner("run", "--harness", "reference", "--case", "escalation,hidden-tool", "--trials", "3",
                   "--out", str(a))
    assert first.returncode == 0, first.stderr
    cell = a / "escalation.baseline.reference"
    layout = sorted(str(p.relative_to(a)) for p in a.rglob("result.json"))
    assert layout == sorted(f"{c}/{t}result.json" for c in ("escalation.baseline.reference",
                                                             "hidden-tool.baseline.reference")
                            for t in ("", "trial-2/", "trial-3/"))
    assert "trial" not in json.loads((cell / "result.json").read_text())["pins"]  # trial 1 reads as it always did
    assert json.loads((cell / "trial-3" / "result.json").read_text())["pins"]["trial"] == 3
    again = runner("run", "--harness", "reference", "--case", "escalation,hidden-tool", "--trials", "3",
                   "--out", str(a))
    assert again.returncode == 0 and "ran 0, resumed 6" in again.stdout
    text = (a / "report.md").read_text()
    assert "- Runs per cell: up to 3" in text.splitlines()
    assert "| reference | 2 | 2 |" in text.splitlines()  # both cells pass every run: counted, nothing listed
    assert "finding" not in text.lower() and "Unstable" not in text  # three runs of one script, all alike

    # another output directory (another machine): one more run of the escalation cell, and one grade that moved
    assert runner("run", "--harness", "reference", "--case", "escalation", "--out", str(b)).returncode == 0
    _edit(cell / "trial-2" / "result.json", status="not_exercised")
    md, manifest = tmp_path / "r.md", tmp_path / "m.json"
    merged = runner("report", str(a), str(b), "--markdown", str(md), "--manifest", str(manifest))
    assert merged.returncode == 1 and "1 new" in merged.stderr  # a stable-pass cell failing one trial is new
    text = md.read_text()
    assert ("| `escalation.baseline.reference` | pass | not exercised | pass | pass | escalated | "
            "3/4 pass, 1/4 not exercised |") in text.splitlines()  # the unstable cell's runs, side by side
    assert "| reference | 2 | 1 | 1 |" in text.splitlines()  # counted: hidden-tool (a's three runs) pass, unstable
    [row] = [r for r in json.loads(manifest.read_text())["rows"] if r["caseId"] == "escalation"]
    assert [t["status"] for t in row["cells"][0]["trials"]] == ["pass", "not_exercised", "pass", "pass"]
    assert row["cells"][0]["status"] == "unstable"
    assert any("escalation.baseline.reference: 4 runs of one script differ" in f
               for f in json.loads(manifest.read_text())["findings"])

    # the gate: a plain entry is stale once any run passes; an unstable one covers the moving cell, and is stale
    # once its cell is stable
    expected = tmp_path / "expected.yml"
    expected.write_text("- cell: escalation.baseline.reference\n  reason: moves\n")
    plain = runner("report", str(a), str(b), "--expected-failures", str(expected))
    assert plain.returncode == 1 and "0 new, 1 known, 1 stale" in plain.stderr
    expected.write_text("- cell: escalation.baseline.reference\n  unstable: true\n  reason: the model skips the "
                        "control call now and then\n- cell: hidden-tool.baseline.reference\n  unstable: true\n"
                        "  reason: was flaky\n")
    unstable = runner("report", str(a), str(b), "--expected-failures", str(expected), "--markdown", str(md))
    assert unstable.returncode == 1 and "0 new, 1 known, 1 stale" in unstable.stderr
    assert "stale (now passes): `hidden-tool.baseline.reference (unstable, now stable: 3/3 pass)`" in md.read_text()
    expected.write_text(expected.read_text().split("- cell: hidden-tool")[0])
    assert runner("report", str(a), str(b), "--expected-failures", str(expected)).returncode == 0

    # runs whose comparability pins differ are kept apart, and the report names the pin
    c = tmp_path / "c"
    shutil.copytree(b, c)
    _edit(c / "escalation.baseline.reference" / "result.json", caseSetHash="0" * 64)
    apart = runner("report", str(a), str(c), "--markdown", str(md), "--manifest", str(manifest))
    data = json.loads(manifest.read_text())
    [row] = [r for r in data["rows"] if r["caseId"] == "escalation"]
    assert len(row["cells"][0]["trials"]) == 3  # only a's runs are merged
    [kept] = data["keptApart"]
    assert kept["caseSetHash"] == "0" * 64 and "caseSetHash" in kept["apart"][0]
    assert "## Group 2: kept apart" in md.read_text() and "**Not merged** with group 1: caseSetHash" in md.read_text()
    assert apart.returncode == 1  # a's moved grade is still a new failure

    # repro of a trial reruns that trial, pinned as it
    rerun = runner("repro", str(cell / "trial-2"), "--out", str(tmp_path / "rerun"), "--json")
    assert json.loads(rerun.stdout)["recorded"] == "not_exercised" and rerun.returncode == 1  # the edit is undone
    assert json.loads((tmp_path / "rerun" / "result.json").read_text())["pins"]["trial"] == 2
