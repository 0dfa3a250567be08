"""A cell fails alone, every attempt is kept, and only runner's own files are read as results: through the product's
own commands, in the real engine, with hostile CLIs on the reference image (tests/hostile/) beside ordinary cells.

- ``runner run -j 2`` where some cells' CLIs make runner raise (a line nested 100 000 deep; 3 MB on stdout while
  runner runs under a file size limit, so its write fails as on a full disk, whatever a reader does with the bytes;
  a lone surrogate in a frame): the run finishes, every ordinary cell is graded as without them, each bad cell is an
  infrastructure error naming the exception, with every attempt, and the reports are written.
- ``runner exec`` of such a CLI writes ``result.json`` and exits 5 with one line, never a traceback.
- A CLI that writes a forged failing ``result.json`` in its session directory: ``runner report`` (and a report of
  CI's artifact layout) never reads it; the gate stays as the real cells say.
- In-process, ``run_matrix`` with the real ``run_cell`` and engine: a turn whose artifacts cannot be written (the
  disk is full: no reader's fix removes that), and a CLI that fails to open its MCP session on its first attempt and
  passes on its second: the pass lists both attempts, each with its own files.
"""

from __future__ import annotations

import dataclasses
import errno
import json
import os
import resource
import secrets
import shutil
import subprocess
import xml.etree.ElementTree as ET
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

import runner.turn.run_turn as turn_module
from runner.engine import EngineClient
from runner.harnesses.profile import find_profile
from runner.images import ImageRecord
from runner.matrix.cells import cells
from runner.matrix.plan import CellOptions, CellPlan, plan_cells
from runner.matrix.report import write_reports
from runner.matrix.result import CellResult
from runner.matrix.run import run_matrix
from runner.matrix.run_cell import run_cell
from runner.turn.settings import Host
from tests.support import RUNNER

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

HOSTILE = Path(__file__).resolve().parents[1] / "hostile"
FILE_LIMIT = 1024 * 1024  # runner's RLIMIT_FSIZE: above every ordinary cell's files, below cell-flood's 3 MB stdout


def runner(tmp_path: Path, *args: str, file_limit: bool = False) -> subprocess.CompletedProcess[str]:
    """The installed ``runner`` as a user runs it, its turn dirs in a TMPDIR of the test's own; ``file_limit``: under
    RLIMIT_FSIZE (a write past it fails with EFBIG, as on a full disk; Python ignores SIGXFSZ)."""
    turn_tmp = tmp_path / "tmp"
    turn_tmp.mkdir(exist_ok=True)

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (FILE_LIMIT, FILE_LIMIT))

    return subprocess.run([RUNNER, *args], capture_output=True, text=True, timeout=500,
                          env={**os.environ, "TMPDIR": str(turn_tmp)}, preexec_fn=limit if file_limit else None)


def body(cell: Path) -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads((cell / "result.json").read_text())
    return loaded


def test_a_matrix_whose_cells_raise_in_runner_finishes_grades_every_ordinary_cell_and_reports(
    tmp_path: Path, reference_image: ImageRecord
) -> None:
    out = tmp_path / "m"
    ran = runner(tmp_path, "run", "--harness", "reference,cell-nested,cell-flood,cell-surrogate", "--case",
                 "escalation,hidden-tool", "-j", "2", "--retries", "1", "--profiles-dir", str(HOSTILE),
                 "--out", str(out), file_limit=True)
    assert ran.returncode == 5, ran.stderr  # infrastructure errors: said by the exit code, not by a traceback
    assert "Traceback" not in ran.stderr and "interrupted" not in ran.stdout + ran.stderr
    assert list((tmp_path / "tmp").iterdir()) == []  # every turn dir removed
    for name in ("report.md", "manifest.json", "junit.xml"):
        assert (out / name).is_file(), name
    ET.parse(out / "junit.xml")
    results = {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/result.json")}
    assert {k: v["grade"]["status"] for k, v in results.items() if k.endswith(".reference")} == {
        "escalation.baseline.reference": "pass", "hidden-tool.baseline.reference": "pass"}  # as without them

    flood = out / "escalation.baseline.cell-flood"
    problem = body(flood)["infrastructureError"]
    assert problem == {"kind": "OSError", "detail": "[Errno 27] File too large"}
    attempts = body(flood)["cellAttempts"]
    assert [(a["attempt"], a["status"], a["infrastructureError"]["kind"]) for a in attempts] == [
        (1, "infrastructure_error", "OSError"), (2, "infrastructure_error", "OSError")]
    assert attempts[0]["files"] == "attempt-1" and (flood / "attempt-1" / "result.json").is_file()
    assert "OSError: [Errno 27] File too large" in (flood / "traceback.txt").read_text()

    nested = body(out / "escalation.baseline.cell-nested")
    assert not nested.get("interrupted")
    if nested.get("infrastructureError"):  # until runner's frame reader takes it as the CLI's malformed output
        assert nested["infrastructureError"]["kind"] == "RecursionError"
    else:
        assert nested["grade"]["status"] != "pass"

    surrogate = out / "escalation.baseline.cell-surrogate"
    assert "infrastructureError" not in body(surrogate) and body(surrogate)["grade"]["status"] == "not_exercised"
    for name in ("record.json", "execution-result.json"):
        json.loads((surrogate / name).read_text(encoding="utf-8"))  # written, escaped, and well-formed
    for name in ("mcp-events.jsonl", "timeline.jsonl"):
        [json.loads(line) for line in (surrogate / name).read_text(encoding="utf-8").splitlines()]

    report = (out / "report.md").read_text()
    assert "## Retried cells: every attempt" in report and "- `escalation.baseline.cell-flood` (infrastructure " \
        "error after 2 attempts)" in report
    assert "infrastructure error (OSError): [Errno 27] File too large" in report


def test_exec_of_a_cell_that_raises_in_runner_writes_its_result_and_exits_5_in_one_line(
    tmp_path: Path, reference_image: ImageRecord
) -> None:
    out = tmp_path / "out"
    ran = runner(tmp_path, "exec", "--profile", str(HOSTILE / "cell-flood.yaml"), "--case", "escalation",
                 "--out", str(out), file_limit=True)
    assert ran.returncode == 5
    assert "Traceback" not in ran.stderr
    said = [line for line in ran.stderr.splitlines() if line.startswith("runner:")]
    assert said == ["runner: infrastructure error (OSError): [Errno 27] File too large"]
    assert body(out)["infrastructureError"]["kind"] == "OSError"
    assert list((tmp_path / "tmp").iterdir()) == []


def test_a_result_a_cli_forges_in_its_session_directory_is_never_read_as_a_cell(
    tmp_path: Path, reference_image: ImageRecord
) -> None:
    out = tmp_path / "m"
    ran = runner(tmp_path, "run", "--harness", "reference,cell-forger", "--case", "escalation", "--profiles-dir",
                 str(HOSTILE), "--out", str(out))
    assert ran.returncode == 0, ran.stderr
    forger = out / "escalation.baseline.cell-forger"
    copied = json.loads((forger / "session" / "result.json").read_text())  # the CLI's file did land in the cell
    assert copied["cell"]["column"] == "reference" and copied["grade"]["status"] == "fail"
    assert (forger / "session" / "nested" / "result.json").is_file()
    assert body(forger)["grade"]["status"] == "pass"  # the forger played the reference client's script

    # CI's report job reads every column's artifact under cells/column-<job>/
    ci = tmp_path / "cells"
    shutil.copytree(out, ci / "column-reference")
    for where in (out, ci):
        manifest = tmp_path / "manifest.json"
        report = runner(tmp_path, "report", str(where), "--manifest", str(manifest), "--markdown",
                        str(tmp_path / "r.md"))
        assert report.returncode == 0, report.stderr  # the gate passes: the forged failing run was never read
        [row] = json.loads(manifest.read_text())["rows"]
        assert {c["columnId"]: c["status"] for c in row["cells"]} == {"reference": "pass", "cell-forger": "pass"}
        assert "forged" not in (tmp_path / "r.md").read_text()


def test_in_process_a_full_disk_and_a_flaky_cli_each_fail_alone_and_every_attempt_is_kept(
    tmp_path: Path, engine: EngineClient, reference_image: ImageRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_matrix`` with the real ``run_cell``, the engine and the reference CLI: one cell's artifacts cannot be
    written (the disk is full), one cell's first attempt runs a CLI that never opens its MCP session (runner retries
    it: the CLI caused that) and its second the real client."""
    options = CellOptions(host=Host.from_environ(os.environ), run_id=f"cell-alone-{secrets.token_hex(3)}")
    plans = plan_cells(cells("reference", "escalation,hidden-tool,read-to-mutation"), options)
    full, flaky = "hidden-tool.baseline.reference", "escalation.baseline.reference"
    write_artifacts = turn_module._write_artifacts

    def full_disk(out: Path, *args: Any) -> dict[str, str]:
        if out.name == full:
            raise OSError(errno.ENOSPC, "No space left on device")
        return write_artifacts(out, *args)

    monkeypatch.setattr(turn_module, "_write_artifacts", full_disk)
    no_session = find_profile("reference").model_copy(
        update={"argv": ["/bin/sh", "-c", "echo flaky-first-attempt; cat >/dev/null"]})
    calls: Counter[str] = Counter()

    async def one(plan: CellPlan, directory: Path) -> CellResult:
        calls[plan.id] += 1
        if plan.id == flaky and calls[plan.id] == 1:
            plan = dataclasses.replace(plan, cell=dataclasses.replace(plan.cell, profile=no_session))
        result, _ = await run_cell(engine, plan, directory, image=reference_image)
        return result

    summary = anyio.run(lambda: run_matrix(plans, tmp_path, one, lambda p: p.planned_pins(reference_image),
                                           jobs=2, retries=1))
    assert summary.infrastructure == [full] and sorted(summary.ran) == sorted(p.id for p in plans if p.id != full)
    assert {k: r.status for k, r in summary.results.items()} == {
        flaky: "pass", full: "infrastructure_error", "read-to-mutation.baseline.reference": "pass"}

    broken = summary.results[full]
    assert broken.infrastructure_error is not None and broken.infrastructure_error.kind == "OSError"
    assert broken.infrastructure_error.detail == "[Errno 28] No space left on device"
    assert [a.status for a in broken.cell_attempts] == ["infrastructure_error", "infrastructure_error"]

    cell = tmp_path / flaky
    passed = body(cell)
    assert passed["version"] == 4 and passed["grade"]["status"] == "pass"
    first, second = passed["cellAttempts"]
    assert first["infrastructureError"]["kind"] == "mcp_not_connected" and first["files"] == "attempt-1"
    assert second == {"attempt": 2, "startedAt": second["startedAt"], "status": "pass"}
    assert "flaky-first-attempt" in (cell / "attempt-1" / "stdout.log").read_text()
    assert "flaky-first-attempt" not in (cell / "stdout.log").read_text()  # the cell dir holds attempt 2's alone
    started = [json.loads(line)["event"] for line in (cell / "timeline.jsonl").read_text().splitlines()]
    assert started.count("turn_started") == 1

    write_reports(tmp_path, [tmp_path / p.id for p in plans])
    report = (tmp_path / "report.md").read_text()
    assert f"- `{flaky}` (pass after 2 attempts)" in report
    assert "infrastructure error (mcp_not_connected): the CLI never opened an MCP session" in report
