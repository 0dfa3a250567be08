"""A run's lease, tried by others (issue 29): `runner gc` removes only what runs that are gone left (their
containers and their turn dirs in TMPDIR), never a live run's nor a container whose run it cannot judge; a turn whose
container someone removes anyway ends as an infrastructure error; a second run on an `--out` a live run holds is
refused before it starts, and the first goes on.

The engine is shared with whoever else uses it: these tests remove only containers of the runs they make, and check
that gc removed nothing else (every container it removed was judged dead, and none that was not is gone)."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest

from runner.images import ImageRecord
from runner.images.settings import ImageSettings
from runner.sandbox.container import CELL_LABEL, OWNER_LABEL, RUN_LABEL
from runner.sandbox.lease import HOST_LABEL, LEASE_LABEL, SCOPE_LABEL, run_token, scope
from runner.sandbox.leftovers import RunState, judge
from tests.integration.test_interrupts import wait_until
from tests.local_users import docker_user, image_cache_for, shared_tmp
from tests.support import RUNNER

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]


def start(argv: list[str], tmp: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen([RUNNER, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "TMPDIR": str(tmp), **(env or {})})


def of_runs_in(engine: docker.DockerClient, tmp: Path, turns_only: bool = False) -> list[dict[str, Any]]:
    """The containers (of any column) whose turn dir lies under ``tmp``, the TMPDIR of this test's runs: theirs,
    and no other user's of the shared engine; ``turns_only``: not the wiring probe's."""
    found = []
    for container in engine.api.containers(all=True, filters={"label": f"{OWNER_LABEL}=runner"}):
        if turns_only and "runner.probe" in (container.get("Labels") or {}):
            continue
        if any(str(m.get("Source", "")).startswith(str(tmp)) for m in container.get("Mounts") or []):
            found.append(container)
    return found


def turn_containers(engine: docker.DockerClient, tmp: Path, case: str) -> list[dict[str, Any]]:
    """The turn containers (not the wiring probe's) of the runs whose TMPDIR is ``tmp``, of the row ``case``."""
    return [c for c in of_runs_in(engine, tmp, turns_only=True)
            if str((c.get("Labels") or {}).get(CELL_LABEL, "")).startswith(f"{case}.")]


def runner_containers(engine: docker.DockerClient) -> dict[str, dict[str, str]]:
    """Every container on the engine labelled as runner's, by id: its labels."""
    return {c["Id"]: c.get("Labels") or {}
            for c in engine.api.containers(all=True, filters={"label": f"{OWNER_LABEL}=runner"})}


def exists(engine: docker.DockerClient, container_id: str) -> bool:
    try:
        engine.api.inspect_container(container_id)
    except docker.errors.NotFound:
        return False
    return True


@pytest.fixture
def bystanders(engine: docker.DockerClient, reference_image: ImageRecord, tmp_path: Path) -> Iterator[dict[str, str]]:
    """Two containers gc cannot judge, made (never started) by this test and removed by it: one of a runner that
    marks no lease (an older runner), one whose lease is on another machine. By run id: container id."""
    made: dict[str, str] = {}
    leases = {
        "unmarked": {},
        "elsewhere": {HOST_LABEL: "another-machine", SCOPE_LABEL: "another-machine another-boot mnt:[4026531840]",
                      LEASE_LABEL: str(tmp_path / f"runner-run-{run_token('x')}.lock")},
    }
    try:
        for kind, labels in leases.items():
            run = f"pytest-gc-{kind}-{uuid.uuid4().hex[:8]}"
            container = engine.containers.create(reference_image.image_id, ["true"], network_mode="none", labels={
                OWNER_LABEL: "runner", RUN_LABEL: run, CELL_LABEL: f"gc.{kind}", **labels})
            made[run] = str(container.id)
        yield made
    finally:
        for container_id in made.values():
            with contextlib.suppress(docker.errors.NotFound):
                engine.api.remove_container(container_id, force=True)


def gc(tmp: Path, *args: str) -> dict[str, Any]:
    done = subprocess.run([RUNNER, "gc", "--json", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TMPDIR": str(tmp)})
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_gc_removes_a_killed_runs_containers_and_turn_dirs_and_nothing_of_a_live_run_or_one_it_cannot_judge(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord, bystanders: dict[str, str]
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    # the live run: asks, then hangs until its deadline; the dead one: SIGKILLed mid-turn with no reaper
    live = start(["exec", "--harness", "reference", "--case", "escalation", "--behaviour", "hang-after-ask",
                  "--deadline", "45", "--json", "--out", str(tmp_path / "live")], tmp)
    dead = start(["run", "--harness", "reference", "--case", "read-to-mutation", "--behaviour", "hang-after-ask",
                  "--out", str(tmp_path / "dead")], tmp, {"RUNNER_REAPER": "0"})
    try:
        assert wait_until(lambda: bool(turn_containers(engine, tmp, "escalation")), 120), "the live run never ran"
        assert wait_until(lambda: bool(turn_containers(engine, tmp, "read-to-mutation")), 120), "nor the other"
        dead.kill()
        dead.wait(timeout=30)
        live_ids = {c["Id"] for c in of_runs_in(engine, tmp) if c["Labels"][CELL_LABEL].startswith("escalation.")}
        dead_ids = {c["Id"] for c in of_runs_in(engine, tmp)} - live_ids
        [dead_run] = {c["Labels"][RUN_LABEL] for c in of_runs_in(engine, tmp) if c["Id"] in dead_ids}
        [live_run] = {c["Labels"][RUN_LABEL] for c in of_runs_in(engine, tmp) if c["Id"] in live_ids}
        dead_dirs = list(tmp.glob(f"runner-{run_token(dead_run)}?????"))
        live_dirs = list(tmp.glob(f"runner-{run_token(live_run)}?????"))
        assert dead_dirs and live_dirs, "each run's turn dir is in TMPDIR, named after its run"
        # whatever else is on the shared engine and is not dead: gc must leave every one of them
        here = scope()
        not_dead = {cid for cid, labels in runner_containers(engine).items()
                    if judge(labels, here) is not RunState.DEAD}
        assert live_ids | set(bystanders.values()) <= not_dead

        swept = gc(tmp)

        removed = {c["id"]: c for c in swept["containers"]}
        assert dead_ids <= set(removed), "the killed run's containers are removed"
        assert {c["verdict"] for c in removed.values()} == {"dead"}, "gc removed only what was dead"
        assert not set(removed) & not_dead
        assert all(exists(engine, cid) for cid in live_ids | set(bystanders.values()))
        kept = {c["id"]: c["verdict"] for c in swept["kept"]}
        assert {kept[cid] for cid in live_ids} == {"live"}
        assert {kept[bystanders[run]] for run in bystanders} == {"unmarked", "elsewhere"}
        assert sorted(swept["turnDirs"]["removed"]) == sorted(map(str, dead_dirs)), "its turn dir is swept"
        assert all(d.is_dir() for d in live_dirs) and not any(d.exists() for d in dead_dirs)
        assert not (tmp / f"runner-run-{run_token(dead_run)}.lock").exists()

        # named with --run: a run gc cannot judge is removed; a live one is not, even named
        named = gc(tmp, "--run", live_run, *[arg for run in bystanders for arg in ("--run", run)])
        assert {c["id"] for c in named["containers"]} == set(bystanders.values())
        assert {c["id"]: c["verdict"] for c in named["kept"]} == dict.fromkeys(live_ids, "live")
        assert all(exists(engine, cid) for cid in live_ids) and all(d.is_dir() for d in live_dirs)

        out, err = live.communicate(timeout=120)
        assert live.returncode == 0, err
        report = json.loads(out)
        assert report["status"] == "escalated" and report["infrastructureError"] is None, "the live run went on"
    finally:
        for proc in (live, dead):
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=30)
    assert list(tmp.iterdir()) == []


def test_a_turn_whose_container_is_removed_under_it_is_an_infrastructure_error_not_the_clis_conduct(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    """What a `runner gc --run` of another machine sharing the engine (or a `docker rm -f`) does to a live turn."""
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    proc = start(["exec", "--harness", "reference", "--case", "escalation", "--behaviour", "hang-after-ask",
                  "--deadline", "60", "--json", "--out", str(tmp_path / "out")], tmp)
    try:
        assert wait_until(lambda: bool(turn_containers(engine, tmp, "escalation")), 120), "the turn never ran"
        time.sleep(2)  # asked, and hanging
        [container] = turn_containers(engine, tmp, "escalation")
        engine.api.remove_container(container["Id"], force=True)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == 5, err
    report = json.loads(out)
    problem = report["infrastructureError"]
    assert problem["kind"] == "container_removed"
    assert "was removed from the engine while its turn ran" in problem["detail"]


def test_a_second_run_on_an_out_a_live_run_holds_is_refused_before_it_starts_and_the_first_goes_on(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    out = tmp_path / "out"
    first = start(["exec", "--harness", "reference", "--case", "escalation", "--behaviour", "hang-after-ask",
                   "--deadline", "20", "--json", "--out", str(out)], tmp)
    try:
        assert wait_until(lambda: bool(turn_containers(engine, tmp, "escalation")), 120), "the first never ran"
        started = time.monotonic()
        for argv in (["run", "--harness", "reference", "--case", "read-to-mutation", "--out", str(out)],
                     ["exec", "--harness", "reference", "--case", "read-to-mutation", "--out", str(out)]):
            second = subprocess.run([RUNNER, *argv], capture_output=True, text=True, timeout=120,
                                    env={**os.environ, "TMPDIR": str(tmp)})
            assert second.returncode == 5, second.stderr
            assert f"{out}: another runner is writing there (run " in second.stderr
            assert f"pid {first.pid} on " in second.stderr
        assert time.monotonic() - started < 30, "refused before anything started"
        assert not turn_containers(engine, tmp, "read-to-mutation"), "the refused runs started no container"
        assert first.poll() is None, "the first run is still going"
        stdout, stderr = first.communicate(timeout=120)
    finally:
        if first.poll() is None:
            first.send_signal(signal.SIGINT)
            first.wait(timeout=60)
    assert first.returncode == 0, stderr
    report = json.loads(stdout)
    assert report["infrastructureError"] is None and report["status"] == "escalated"
    assert report["cell"]["id"].startswith("escalation.")
    assert not (out / ".runner.lock").exists() and list(tmp.iterdir()) == []


def test_a_non_root_runner_killed_mid_turn_leaves_nothing_its_own_gc_does_not_remove(
    engine: docker.DockerClient, codex_image: ImageRecord, image_settings: ImageSettings
) -> None:
    """As GitHub's kind of user (uid 1003 here, in the docker group): SIGKILLed with no reaper while Codex has
    written its HOME (directories of its own in the turn dir), then `runner gc` as the same user removes the
    container and the whole turn dir, the CLI's files included."""
    user = docker_user(1003)
    place = shared_tmp("runner-gc-")
    try:
        work = user.mkdir(place / "work")
        cache = image_cache_for(user, image_settings, work / "cache")
        tmp = shared_tmp("tmp-", work)
        proc = user.popen(["runner", "exec", "--harness", "codex", "--case", "escalation", "--model-fault", "stall",
                           "--deadline", "120", "--json", "--out", str(work / "out")],
                          user.env(tmp, cache, {"RUNNER_REAPER": "0"}), work)
        try:
            assert wait_until(lambda: bool(turn_containers(engine, tmp, "escalation")), 120), "the turn never ran"
            assert wait_until(lambda: any(tmp.glob("runner-*/home/.codex/sessions")), 60), "Codex wrote its HOME"
        finally:
            proc.kill()
            proc.wait(timeout=30)
        left = {c["Id"] for c in of_runs_in(engine, tmp)}
        assert left, "a SIGKILLed run with no reaper leaves its container"
        done = user.run(["runner", "gc", "--json"], user.env(tmp, cache), work, timeout=120)
        assert done.returncode == 0, done.stderr
        swept = json.loads(done.stdout)
        assert left <= {c["id"] for c in swept["containers"]}
        assert {c["verdict"] for c in swept["containers"]} == {"dead"}
        assert swept["turnDirs"]["left"] == {} and len(swept["turnDirs"]["removed"]) == 1
        assert list(tmp.iterdir()) == [], sorted(map(str, tmp.rglob("*")))[:8]
    finally:
        shutil.rmtree(place, ignore_errors=True)
