"""A Docker daemon that refuses or drops requests, injected by a proxy in front of the real engine socket.

What the user gets: a hiccup is retried with backoff and the turn runs as if nothing happened; a
daemon that keeps failing ends the turn, within seconds, in an infrastructure error that names the
engine call at fault (exit 5); and in every case no container the run started survives it, including
the twin that a retried create leaves when the engine made a container whose answer was lost.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from runner.engine import ATTEMPTS
from runner.images import ImageRecord
from tests.engine_proxy import EngineProxy, Fault
from tests.support import meta, runner_exec

pytestmark = [pytest.mark.docker, pytest.mark.timeout(240)]

CONTAINER = r"/containers/[0-9a-f]{64}"
INFRASTRUCTURE = 5


@pytest.fixture()
def proxy(tmp_path: Path, reference_image: ImageRecord) -> Iterator[EngineProxy]:
    with EngineProxy(tmp_path / "engine.sock", faults=[]).running() as running:
        yield running


def exec_through(proxy: EngineProxy, tmp_path: Path, *faults: Fault, expect_exit: int = 0) -> dict[str, object]:
    proxy.faults[:] = faults
    return runner_exec(tmp_path, "--harness", "reference", "--case", "escalation",
                       env={"DOCKER_HOST": proxy.docker_host}, expect_exit=expect_exit)


def assert_nothing_left(engine: docker.DockerClient, proxy: EngineProxy) -> None:
    runs = {labels["runner.run"] for labels in proxy.created_labels}
    assert runs, "the run asked the engine for a container"
    for run in runs:
        left = engine.containers.list(all=True, sparse=True, filters={"label": f"runner.run={run}"})
        assert left == [], f"containers of run {run} survived: {[c.short_id for c in left]}"


def test_hiccups_are_retried_and_the_turn_runs_as_if_nothing_happened(
    tmp_path: Path, engine: docker.DockerClient, proxy: EngineProxy
) -> None:
    # a clean turn first, through the same proxy: it runs (and caches) the wiring probe for this engine address,
    # so the faults below land on the turn's own container and the counts are the turn's alone
    assert exec_through(proxy, tmp_path)["status"] == "escalated"
    proxy.seen.clear()
    proxy.created_labels.clear()
    report = exec_through(
        proxy, tmp_path,
        Fault("GET", "/_ping", "refuse"),
        Fault("POST", "/containers/create", "refuse"),
        Fault("POST", "/containers/create", "lose"),  # the engine makes a container nobody hears of
        Fault("POST", f"{CONTAINER}/start", "drop"),
        Fault("POST", f"{CONTAINER}/wait", "drop"),
        Fault("DELETE", CONTAINER, "refuse"),
    )
    assert report["status"] == "escalated" and report["infrastructureError"] is None
    assert meta(report)["harnessOutcome"] == "complete"
    assert all(fault.served == 1 for fault in proxy.faults), [(f.path, f.served) for f in proxy.faults]
    assert proxy.count("POST", "/containers/create") == 3  # refused, lost, made
    assert len(proxy.created_labels) == 3
    assert_nothing_left(engine, proxy)  # the lost create's twin too


@pytest.mark.parametrize(
    ("fault", "call"),
    [
        (Fault("POST", "/containers/create", "refuse", times=None), "containers.create"),
        (Fault("POST", f"{CONTAINER}/wait", "drop", times=None), "container.wait"),
    ],
    ids=["create-refused", "wait-dropped"],
)
def test_a_daemon_that_keeps_failing_is_an_infrastructure_error_naming_the_call_within_seconds(
    tmp_path: Path, engine: docker.DockerClient, proxy: EngineProxy, fault: Fault, call: str
) -> None:
    started = time.monotonic()
    report = exec_through(proxy, tmp_path, fault, expect_exit=INFRASTRUCTURE)
    elapsed = time.monotonic() - started
    problem = report["infrastructureError"]
    assert isinstance(problem, dict), report
    assert call in str(problem["detail"]) and f"after {ATTEMPTS} attempts" in str(problem["detail"]), problem
    assert fault.served == ATTEMPTS  # bounded: exactly the retries, no more
    assert report.get("grade") is None  # never graded as if the CLI had done something
    assert elapsed < 60, f"took {elapsed:.0f}s"
    assert_nothing_left(engine, proxy)


def test_an_engine_that_never_answers_is_named_with_a_hint(tmp_path: Path, proxy: EngineProxy) -> None:
    proxy.faults[:] = [Fault("GET", "/_ping", "drop", times=None), Fault("GET", "/version", "drop", times=None)]
    report = runner_exec(tmp_path, "--harness", "reference", "--case", "escalation",
                         env={"DOCKER_HOST": proxy.docker_host}, expect_exit=INFRASTRUCTURE)
    assert report["error"]["kind"] == "infrastructure"
    assert proxy.docker_host in report["error"]["message"] and "runner setup engine" in report["error"]["message"]
    assert proxy.count("GET", "/(_ping|version)") == ATTEMPTS
