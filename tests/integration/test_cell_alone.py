"""A cell fails alone, every attempt is kept, and only runner's own files are read as results: through the product's
own commands, in the real engine, with hostile CLIs on the reference image (tests/hostile/) beside ordinary cells.

- ``runner run -j 2`` where some cells' CLIs make runner raise (a line nested 100 000 deep; 3 MB on stdout while
  runner runs under a file size limit, so its write fails as on a full disk, whatever a reader does with the bytes;
  a lone surrogate in a frame): the run finishes, every ordinary cell is graded as without them, each bad cell is an
  infrastructure error naming the exception (runner's own failure: not retried), and the reports are written.
- ``runner exec`` of such a CLI writes ``result.json`` and exits 5 with one line, never a traceback.
- A CLI that writes a forged failing ``result.json`` in its session directory: ``runner report`` (and a report of
  CI's artifact layout) never reads it; the gate stays as the real cells say.
- In-process, ``run_matrix`` with the real ``run_cell`` and engine, each cell retried by its failure's rule: a turn
  whose artifacts cannot be written (the disk is full: runner's own, not retried), a CLI that never opens its MCP
  session (its conduct: not retried, named), and a first attempt whose container the engine cannot start (retried:
  the pass lists both attempts, each with its own files).
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
from runner.harnesses.profile import find_profile
from runner.images import ImageRecord
from runner.matrix.cells import cells
from runner.matrix.plan import CellOptions, CellPlan, plan_cells
from runner.matrix.report import write_reports
from runner.matrix.result import CellResult
from runner.matrix.run import run_matrix
from runner.matrix.run_cell import run_cell
from runner.sandbox.docker_backend import DockerBackend
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
    # runner's own failure (a write it could not make): never retried, whatever --retries says
    assert body(flood)["failure"]["kind"] == "runner_error" and body(flood)["failure"]["retried"] is False
    assert "cellAttempts" not in body(flood) and not (flood / "attempt-1").exists()
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
    assert "## Retried cells: every attempt" not in report


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
        assert {c["harnessId"]: c["status"] for c in row["cells"]} == {"reference": "pass", "cell-forger": "pass"}
        assert "forged" not in (tmp_path / "r.md").read_text()


def test_in_process_a_full_disk_a_toolless_cli_and_a_missing_image_each_fail_alone_by_their_retry_rule(
    tmp_path: Path, backend: DockerBackend, reference_image: ImageRecord, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``run_matrix`` with the real ``run_cell``, the engine and the reference CLI, each cell retried by its failure's
    rule (runner.conformance.failures): one cell's artifacts cannot be written (the disk is full: runner's own
    failure, not retried), one cell's CLI never opens its MCP session (its conduct: never retried, and named so), and
    one cell's first attempt asks the engine for an image it does not hold (the engine could not start the
    container: retried, every attempt kept, the second the real client's pass)."""
    options = CellOptions(host=Host.from_environ(os.environ), run_id=f"cell-alone-{secrets.token_hex(3)}")
    plans = plan_cells(cells("reference", "escalation,hidden-tool,read-to-mutation"), options)
    full, toolless, flaky = ("hidden-tool.baseline.reference", "escalation.baseline.reference",
                             "read-to-mutation.baseline.reference")
    write_artifacts = turn_module._write_artifacts

    def full_disk(out: Path, *args: Any) -> dict[str, str]:
        if out.name == full:
            raise OSError(errno.ENOSPC, "No space left on device")
        return write_artifacts(out, *args)

    monkeypatch.setattr(turn_module, "_write_artifacts", full_disk)
    no_session = find_profile("reference").model_copy(
        update={"argv": ["/bin/sh", "-c", "echo toolless; cat >/dev/null"]})
    missing = dataclasses.replace(reference_image, image_id="sha256:" + "0" * 64)
    calls: Counter[str] = Counter()

    async def one(plan: CellPlan, directory: Path) -> CellResult:
        calls[plan.id] += 1
        image = reference_image
        if plan.id == toolless:
            plan = dataclasses.replace(plan, cell=dataclasses.replace(plan.cell, profile=no_session))
        if plan.id == flaky and calls[plan.id] == 1:
            image = missing
        result, _ = await run_cell(backend, plan, directory, image=image)
        return result

    summary = anyio.run(lambda: run_matrix(plans, tmp_path, one, lambda p: p.planned_pins(reference_image),
                                           jobs=2, retries=1))
    assert calls == {full: 1, toolless: 1, flaky: 2}
    assert sorted(summary.infrastructure) == sorted([full, toolless]) and summary.ran == [flaky]
    assert {k: r.status for k, r in summary.results.items()} == {
        flaky: "pass", full: "infrastructure_error", toolless: "infrastructure_error"}

    broken = summary.results[full]
    assert broken.infrastructure_error is not None and broken.infrastructure_error.kind == "OSError"
    assert broken.infrastructure_error.detail == "[Errno 28] No space left on device"
    assert broken.why is not None and (broken.why.cause, broken.why.kind) == ("runner", "runner_error")
    assert broken.cell_attempts == ()

    silent = body(tmp_path / toolless)
    assert silent["failure"]["cause"] == "cli" and silent["failure"]["kind"] == "mcp_never_opened"
    assert silent["failure"]["retried"] is False and "cellAttempts" not in silent

    cell = tmp_path / flaky
    passed = body(cell)
    assert passed["version"] == 5 and passed["grade"]["status"] == "pass" and "failure" not in passed
    first, second = passed["cellAttempts"]
    assert first["infrastructureError"]["kind"] == "ContainerStartError" and first["files"] == "attempt-1"
    assert (first["failure"]["cause"], first["failure"]["kind"]) == ("engine", "container_not_started")
    assert first["failure"]["retried"] is True
    assert second == {"attempt": 2, "startedAt": second["startedAt"], "status": "pass"}
    started = [json.loads(line)["event"] for line in (cell / "timeline.jsonl").read_text().splitlines()]
    assert started.count("turn_started") == 1

    write_reports(tmp_path, [tmp_path / p.id for p in plans])
    report = (tmp_path / "report.md").read_text()
    assert f"- `{flaky}` (pass after 2 attempts)" in report
    assert "infrastructure error: engine (container_not_started)" in report
