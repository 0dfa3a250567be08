"""Rootless Podman through its Docker-compatible socket: which promises it keeps, proved on the engine itself.

Runs only when RUNNER_TEST_PODMAN_HOST names the socket (``RUNNER_ENGINE=podman scripts/ensure-docker.sh`` prints
it) and the reference image is loaded there (``docker save IMAGE | podman load`` as that user). Measured on this
machine (Debian 12, Podman 4.3.1, rootless, cgroup v1, vfs storage): the compat API refuses the HOME tmpfs owned by
uid 1000 (``unknown mount option "uid=1000"``), and it accepts pids and memory limits it does not enforce (no
``pids.max`` in the container). runner names the first as HardeningRefused before any turn; a turn is never graded.
"""

from __future__ import annotations

import os
from pathlib import Path

import docker
import pytest

from runner.sandbox import probe
from runner.sandbox.container import ContainerSpec

HOST = os.environ.get("RUNNER_TEST_PODMAN_HOST", "")
pytestmark = [pytest.mark.docker, pytest.mark.timeout(300),
              pytest.mark.skipif(not HOST, reason="set RUNNER_TEST_PODMAN_HOST to a Podman socket")]


@pytest.fixture(scope="module")
def podman() -> docker.DockerClient:
    client = docker.DockerClient(base_url=HOST, version="auto", timeout=120)
    assert "podman" in str(client.version()).lower(), f"{HOST} is not a Podman engine"
    return client


@pytest.fixture(scope="module")
def reference(podman: docker.DockerClient) -> str:
    found = podman.images.list(filters={"label": "runner.harness=reference"}) or podman.images.list(
        name="runner/reference")
    if not found:
        pytest.skip("load the reference image into Podman first")
    return str(found[0].id)


def test_the_probe_names_what_podman_refuses_before_any_turn(
    tmp_path: Path, podman: docker.DockerClient, reference: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", HOST)
    monkeypatch.setenv("RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    spec = ContainerSpec(reference, ["true"], tmp_path, {"runner.run": "podman-test", "runner.cell": "probe"})
    with pytest.raises((probe.HardeningRefused, probe.LimitsNotEnforced)):
        probe.check_wiring(podman, spec)


def test_limits_are_accepted_but_not_enforced_on_cgroup_v1(podman: docker.DockerClient, reference: str) -> None:
    cgroups = podman.info().get("CgroupVersion") or podman.info().get("host", {}).get("cgroupVersion")
    container = podman.containers.create(
        reference, ["sh", "-c", "cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max"],
        user="1000:1000", network_mode="none", cap_drop=["ALL"], security_opt=["no-new-privileges"],
        read_only=True, pids_limit=256, mem_limit="1g", init=True, labels={"runner.test": "podman"})
    try:
        container.start()
        container.wait(timeout=120)
        seen = container.logs().decode().strip()
    finally:
        container.remove(force=True)
    if str(cgroups) in ("1", "v1"):
        assert seen != "256", "rootless Podman on cgroup v1 enforces no pids limit (the promise it cannot keep)"
    else:
        assert seen == "256"
