"""Rootless Podman through its Docker-compatible socket: which promises it keeps, proved on the engine itself.

The engine is RUNNER_TEST_PODMAN_HOST when it names a socket; otherwise, as root on Debian (this machine, and
CI), ``ensure-podman.sh`` provisions one (Debian's podman, a non-root user, its rootless service) and the
reference image is loaded into that user's store (``docker save`` from the Docker Engine, ``podman load`` as the
user). Measured on this machine (Debian 12, Podman 4.3.1, rootless, cgroup v1, vfs storage): the compat API refuses
the HOME tmpfs owned by uid 1000 (``unknown mount option "uid=1000"``), and it accepts pids and memory limits it
does not enforce (no ``pids.max`` in the container). runner names the first as HardeningRefused before any turn; a
turn is never graded.

A service this module provisions (``podman system service --time=0``, which never exits by itself) is stopped
when the module ends, however it ends (the ``host`` fixture), and the module fails if a process of the Podman user
is left: ``make test`` leaves no service running behind it.
"""

from __future__ import annotations

import os
import pwd
import re
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import suppress
from pathlib import Path
from signal import SIGKILL, SIGTERM

import docker
import pytest

from runner.engine import connect
from runner.images import ImageRecord
from runner.sandbox import probe
from runner.sandbox.interface import ContainerSpec

ROOT = Path(__file__).resolve().parents[2]
PODMAN_SCRIPT = ROOT / "runner" / "engine" / "host" / "ensure-podman.sh"
PODMAN_USER = os.environ.get("RUNNER_PODMAN_USER", "runner-podman")
pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def host() -> Iterator[str]:
    """The Podman socket: the one named, or one this machine's scripts provision (root on Debian, as in CI). A
    service provisioned here (`podman system service --time=0`, which never exits by itself) is stopped when the
    module ends, whatever happened in it, and the module fails if any process of its user is left."""
    named = os.environ.get("RUNNER_TEST_PODMAN_HOST", "")
    if named:
        yield named
        return
    if os.geteuid() != 0 or not shutil.which("apt-get"):
        pytest.fail("no Podman to test: set RUNNER_TEST_PODMAN_HOST, or run as root on Debian so that "
                    "runner/engine/host/ensure-podman.sh can provision one")
    try:
        done = subprocess.run([str(PODMAN_SCRIPT)], capture_output=True, text=True,
                              timeout=600, env={**os.environ, "RUNNER_PODMAN_USER": PODMAN_USER})
        assert done.returncode == 0, done.stderr
        found = re.search(r"^export DOCKER_HOST=(\S+)$", done.stdout, re.M)
        assert found, done.stdout + done.stderr
        yield found.group(1)
    finally:
        left = stop_processes_of(PODMAN_USER)
    assert not left, f"processes of {PODMAN_USER} outlived the Podman tests: {left}"


def processes_of(user: str) -> dict[int, str]:
    """Every process the user runs now: pid and command line."""
    found = subprocess.run(["pgrep", "-a", "-u", user], capture_output=True, text=True, timeout=30)
    return {int(pid): command for pid, _, command in (line.partition(" ") for line in found.stdout.splitlines())}


def stop_processes_of(user: str, grace: float = 15.0) -> dict[int, str]:
    """Stop the Podman user's processes, each by its id: the rootless service and what it keeps beside it (the
    pause process that holds its user namespace). SIGTERM, then SIGKILL to any still there after ``grace`` seconds.
    Returns what is left (nothing, unless a process outlived SIGKILL)."""
    for signal in (SIGTERM, SIGKILL):
        for pid in processes_of(user):
            with suppress(ProcessLookupError):
                os.kill(pid, signal)
        deadline = time.monotonic() + grace
        while processes_of(user) and time.monotonic() < deadline:
            time.sleep(0.2)
        if not processes_of(user):
            break
    return processes_of(user)


@pytest.fixture(scope="module")
def podman(host: str) -> docker.DockerClient:
    client = connect({"DOCKER_HOST": host})
    assert "podman" in str(client.version()).lower(), f"{host} is not a Podman engine"
    return client


@pytest.fixture(scope="module")
def reference(podman: docker.DockerClient, reference_image: ImageRecord) -> str:
    """The reference image in Podman's store: loaded from the Docker Engine when it is not there yet."""
    tag = reference_image.tag
    found = podman.images.list(filters={"label": f"runner.build={reference_image.build_key}"})
    if not found and not os.environ.get("RUNNER_TEST_PODMAN_HOST"):
        save = subprocess.Popen(["docker", "save", tag], stdout=subprocess.PIPE)
        user = pwd.getpwnam(PODMAN_USER)
        as_user = ["runuser", "-u", PODMAN_USER, "--", "env", "-i", "PATH=/usr/local/bin:/usr/bin:/bin",
                   f"HOME={user.pw_dir}", f"XDG_RUNTIME_DIR=/run/user/{user.pw_uid}"]
        load = subprocess.run([*as_user, "podman", "load"], stdin=save.stdout, capture_output=True, text=True,
                              timeout=600, cwd=user.pw_dir)  # podman re-enters its cwd: a mktemp -d checkout bars it
        assert save.wait(timeout=60) == 0 and load.returncode == 0, load.stderr
        found = podman.images.list(filters={"label": f"runner.build={reference_image.build_key}"})
    if not found:
        pytest.fail(f"the reference image ({tag}) is not in Podman's store: load it there (docker save | podman load)")
    return str(found[0].id)



def test_the_probe_names_what_podman_refuses_before_any_turn(
    tmp_path: Path, host: str, podman: docker.DockerClient, reference: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DOCKER_HOST", host)
    spec = ContainerSpec(reference, ["true"], tmp_path, {"runner.run": "podman-test", "runner.cell": "probe"})
    with pytest.raises((probe.HardeningRefused, probe.LimitsNotEnforced)):
        # a probe of its own, and no cache: nothing another test taught this process
        probe.WiringProbe().check(podman, spec, cache=None)


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


def test_a_socket_its_dead_service_left_is_served_again_before_its_address_is_printed(host: str) -> None:
    """A Podman service gone with its socket file left behind (killed, or a reboot on a host whose /run persists):
    on CI the script printed that file's address because the file existed, and the first request was refused. The
    script now prints it only once the API answers there. Last in this module: it restarts the service under the
    tests above."""
    if os.environ.get("RUNNER_TEST_PODMAN_HOST"):
        pytest.skip("the Podman RUNNER_TEST_PODMAN_HOST names is not this test's to stop")
    socket_path = Path(host.removeprefix("unix://"))
    subprocess.run(["pkill", "-KILL", "-u", PODMAN_USER], check=False)
    for _ in range(50):
        if subprocess.run(["pgrep", "-u", PODMAN_USER], capture_output=True).returncode != 0:
            break
        time.sleep(0.1)
    assert socket_path.is_socket(), f"the killed service took its socket {socket_path} with it: nothing stale to test"
    with pytest.raises(docker.errors.DockerException, match="refused"):
        docker.DockerClient(base_url=host, version="auto", timeout=10)
    done = subprocess.run([str(PODMAN_SCRIPT)], capture_output=True, text=True, timeout=600,
                          env={**os.environ, "RUNNER_PODMAN_USER": PODMAN_USER})
    assert done.returncode == 0, done.stderr
    assert f"export DOCKER_HOST={host}" in done.stdout.splitlines()
    again = docker.DockerClient(base_url=host, version="auto", timeout=120)  # at once, as a caller of the script does
    assert "podman" in str(again.version()).lower()
