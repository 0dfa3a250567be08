"""Interrupting a run: Ctrl-C leaves no container and keeps finished cells; after SIGKILL of `runner run` or
`runner exec`, the reaper removes the run's containers without `runner gc`; with the reaper disabled,
`runner gc` finds every leftover by label and a rerun resumes without redoing finished cells."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import docker
import pytest

from runner.images import ImageRecord
from tests.support import RUNNER

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

# hang-after-ask keeps a cell running until its deadline, so the run is surely mid-cell when signalled
ARGS = ["run", "--harness", "reference", "--case", "escalation,read-to-mutation", "--behaviour", "hang-after-ask",
        "-j", "1"]


# How long after a SIGKILL the run's containers may still be there. The reaper sweeps at once and twice more
# within ~6 s; the bound is generous because it guards "never left behind", not speed (that is under load).
REAPED_WITHIN = 90.0


def start(out: Path, args: list[str] = ARGS, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([RUNNER, *args, "--out", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, env={**os.environ, **(env or {})})


def of_this_run(engine: docker.DockerClient, turn_tmp: Path, turns_only: bool = False) -> list[dict[str, object]]:
    """The containers whose turn directory lies under ``turn_tmp`` (the runner's TMPDIR): this run's, and
    no other user's of the shared engine; ``turns_only``: not the wiring probe's, which carries the turn's labels."""
    found = []
    # the list call's own answer (no per-container inspect, which races the reaper's removal)
    for container in engine.api.containers(all=True, filters={"label": "runner.harness=reference"}):
        if turns_only and "runner.probe" in (container.get("Labels") or {}):
            continue
        if any(str(m.get("Source", "")).startswith(str(turn_tmp)) for m in container.get("Mounts") or []):
            found.append(container)
    return found


def wait_until(condition: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.2)
    return condition()


EXEC_HANGING = ["exec", "--harness", "reference", "--case", "escalation", "--behaviour", "hang-after-ask"]


@pytest.mark.parametrize(("command", "runtime"), [(ARGS, "runc"), (EXEC_HANGING, "runc"), (EXEC_HANGING, "runsc")],
                         ids=["run", "exec", "exec-runsc"])  # runsc: the engine must have it (make integration does)
def test_after_sigkill_the_reaper_removes_the_runs_containers_without_gc(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord, command: list[str], runtime: str
) -> None:
    turn_tmp = tmp_path / "tmp"
    turn_tmp.mkdir()
    proc = start(tmp_path / "out", command, {"TMPDIR": str(turn_tmp), "RUNNER_RUNTIME": runtime})
    # killed mid-turn, not mid-probe: the probe runs first here (a fresh TMPDIR is a new probe key)
    assert wait_until(lambda: bool(of_this_run(engine, turn_tmp, turns_only=True)), 60), (
        "the run never started a turn's container")
    proc.kill()
    proc.wait(timeout=30)
    assert wait_until(lambda: not of_this_run(engine, turn_tmp), REAPED_WITHIN), (
        f"a container of the SIGKILLed run was still there {REAPED_WITHIN:.0f} s later")


def wait_for_container(engine: docker.DockerClient, turn_tmp: Path, timeout: float = 60) -> None:
    """Until a turn's container of this run runs (not the wiring probe's: whether the probe runs first depends on
    the probe cache this machine has)."""
    assert wait_until(lambda: bool(of_this_run(engine, turn_tmp, turns_only=True)), timeout), (
        "the run never started a turn's container")


def test_ctrl_c_removes_every_container_and_marks_the_running_cell_interrupted(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    turn_tmp = tmp_path / "tmp"
    turn_tmp.mkdir()
    out = tmp_path / "run"
    proc = start(out, env={"TMPDIR": str(turn_tmp)})
    wait_for_container(engine, turn_tmp)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert not of_this_run(engine, turn_tmp), "Ctrl-C left a container behind"
    results = [json.loads(p.read_text()) for p in out.glob("*/result.json")]
    assert results and any(r.get("interrupted") for r in results)


def test_after_sigkill_gc_removes_leftovers_and_a_rerun_resumes(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    out = tmp_path / "run"
    finished = subprocess.run([RUNNER, "run", "--harness", "reference", "--case", "hidden-tool", "--out", str(out)],
                              capture_output=True, text=True, timeout=120)
    assert finished.returncode == 0, finished.stderr
    turn_tmp = tmp_path / "tmp"
    turn_tmp.mkdir()
    proc = start(out, env={"RUNNER_REAPER": "0", "TMPDIR": str(turn_tmp)})  # no reaper: the leftover is gc's to find
    wait_for_container(engine, turn_tmp)
    proc.kill()
    proc.wait(timeout=30)
    left = {c["Id"] for c in of_this_run(engine, turn_tmp)}
    assert left, "a SIGKILLed run cannot clean up: its container is still there"
    gc = subprocess.run([RUNNER, "gc", "--json"], capture_output=True, text=True, timeout=60)
    assert gc.returncode == 0 and left <= set(json.loads(gc.stdout)["removed"])
    assert not of_this_run(engine, turn_tmp)
    rerun = subprocess.run([RUNNER, "run", "--harness", "reference", "--case", "hidden-tool", "--out", str(out)],
                           capture_output=True, text=True, timeout=120)
    assert rerun.returncode == 0 and "ran 0, resumed 1" in rerun.stdout
