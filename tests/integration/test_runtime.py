"""The turn's container under gVisor (``--runtime runsc``) keeps the default container's promises, on the real engine.

From inside the turn's container, by a profile of the test's own (the reference image, the same hardened spec as
every CLI): its kernel is gVisor's under runsc (``uname -r`` 4.4.0 and gVisor's boot log, which the host's 6.x
kernel cannot print) and the host's under runc; the hardening as the CLI sees it (uid 1000, no capability,
``no-new-privileges``, a read-only root, no interface but loopback). From the engine: the runtime it ran under, the
hardening it was created with, the limits in force on the sandbox, and no container left. Over both transports,
through the sandbox interface: output, exit code, the tree the CLI left, and the deadline's signal to the process
group. The scrubber and the reaper under runsc: ``test_credentials.py`` and ``test_interrupts.py``, each
parametrized by runtime.

The engine must have runsc registered (``make engine RUNTIME=runsc``; ``make integration`` does it).
"""

from __future__ import annotations

import json
import os
import subprocess
import uuid
from pathlib import Path

import docker
import docker.errors
import pytest

from runner.images import ImageRecord
from runner.intake.files import read_file
from runner.sandbox.container import CELL_LABEL, RUN_LABEL, TURN_MOUNT
from runner.sandbox.factory import DockerSandboxes
from runner.sandbox.interface import (
    RUNTIME_ENV,
    STDERR,
    STDOUT,
    ContainerSpec,
    ResourceLimits,
    Runtime,
    Sandbox,
    Transport,
    TransportChoice,
)
from runner.sandbox.probe import WiringProbe
from tests.support import RUNNER, gone, no_containers_left, runner_exec, sections

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

GVISOR_RELEASE = "4.4.0"  # the Linux release gVisor's kernel reports (Debian's runsc 0.0~20221219)

# What the CLI sees of its kernel and its hardening; sections are "== name" lines ("$$" is "$" to the template).
INSIDE = r"""
echo '== release'; uname -r
echo '== version'; cat /proc/version
echo '== boot'; dmesg 2>/dev/null | head -n 1
echo '== self'; id -u; grep -E '^CapEff:' /proc/self/status
python3 -c 'import ctypes; print("no_new_privs", ctypes.CDLL(None).prctl(39, 0, 0, 0, 0))'
echo '== root'; touch /written-to-root 2>/dev/null && echo writable || echo read-only
echo '== interfaces'; tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '
echo '== mcp'; [ -S /run/runner/mcp.sock ] && echo socket
"""


def inside_profile(tmp_path: Path) -> Path:
    profile = tmp_path / "inside.yaml"
    profile.write_text(
        f"id: inside\nlabel: Inside\nimage: reference\nargv: [/bin/sh, -c, {json.dumps(INSIDE)}]\n"
        "requires_mcp_session: false\ninterpreter: exit-code\n"
    )
    return profile


@pytest.mark.parametrize("transport", list(Transport))
@pytest.mark.parametrize("runtime", list(Runtime))
def test_inside_the_turns_container_the_kernel_is_gvisors_under_runsc_and_the_hosts_otherwise(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord, runtime: Runtime, transport: Transport
) -> None:
    report = runner_exec(tmp_path, "--profile", str(inside_profile(tmp_path)), "--case", "escalation",
                         "--runtime", runtime.value, "--transport", transport.value, "--keep")
    container = engine.containers.get(report["containerId"])
    try:
        host = container.attrs["HostConfig"]
        assert host["Runtime"] == runtime.value
        assert container.attrs["Config"]["User"] == "1000:1000"
        assert host["CapDrop"] == ["ALL"] and not host.get("CapAdd") and not host.get("Privileged")
        assert host["SecurityOpt"] == ["no-new-privileges"]
        assert host["ReadonlyRootfs"] is True and host["NetworkMode"] == "none" and host["Init"] is True
        assert (host["PidsLimit"], host["Memory"]) == (ResourceLimits().pids_for(runtime),
                                                       docker.utils.parse_bytes(ResourceLimits().memory))
    finally:
        container.remove(force=True)
    assert report["exitCode"] == 0, Path(report["files"]["stderr"]).read_text()
    assert report["transport"] == transport.value
    assert report["pins"].get("runtime") == (runtime.value if runtime is Runtime.RUNSC else None)
    assert ("--runtime runsc" in report["repro"]) is (runtime is Runtime.RUNSC)
    seen = sections(Path(report["files"]["stdout"]).read_text())

    host_release = os.uname().release
    assert host_release != GVISOR_RELEASE  # else this test could not tell the kernels apart
    if runtime is Runtime.RUNSC:
        assert seen["release"] == [GVISOR_RELEASE]
        assert seen["boot"] == [seen["boot"][0]] and "Starting gVisor..." in seen["boot"][0]
        assert host_release not in seen["version"][0]
    else:
        assert seen["release"] == [host_release]
        assert host_release in seen["version"][0]
        assert not any("gVisor" in line for line in seen["boot"])
    uid, cap_eff, no_new_privs = seen["self"]
    assert uid == "1000" and cap_eff.split() == ["CapEff:", "0000000000000000"]
    assert no_new_privs == "no_new_privs 1"  # PR_GET_NO_NEW_PRIVS (gVisor's /proc/self/status has no NoNewPrivs)
    assert seen["root"] == ["read-only"]
    assert seen["interfaces"] == ["lo"]
    assert seen["mcp"] == ["socket"]


def test_the_runtime_comes_from_the_environment_variable(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    report = runner_exec(tmp_path, "--profile", str(inside_profile(tmp_path)), "--case", "escalation",
                         env={RUNTIME_ENV: "runsc"})
    assert sections(Path(report["files"]["stdout"]).read_text())["release"] == [GVISOR_RELEASE]
    assert report["pins"]["runtime"] == "runsc"
    no_containers_left(engine, report)


def test_the_reference_escalation_turn_under_runsc_escalates_and_leaves_no_container(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    report = runner_exec(tmp_path, "--harness", "reference", "--case", "escalation", "--runtime", "runsc")
    assert report["status"] == "escalated" and report["pins"]["runtime"] == "runsc"
    assert report["mcp"]["sessionsInitialized"] == 1
    no_containers_left(engine, report)


def test_runner_repro_of_a_runsc_cell_reruns_it_under_runsc(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    """``runner repro`` reads the runtime back from the cell's pins, as its repro.sh says it: the rerun's kernel is
    gVisor's (it reran under runc, and said ``pin not matched: runtime``, before the settings were one table)."""
    profiles = tmp_path / "profiles"
    profiles.mkdir()
    report = runner_exec(tmp_path, "--profile", str(inside_profile(profiles)), "--case", "escalation",
                         "--runtime", "runsc")
    cell, rerun = tmp_path / "out", tmp_path / "rerun"
    assert report["pins"]["runtime"] == "runsc" and report["repro"].endswith("--runtime runsc")
    proc = subprocess.run([RUNNER, "repro", str(cell), "--json", "--out", str(rerun)], capture_output=True,
                          text=True, timeout=240, env={**os.environ, "RUNNER_PROFILES_DIR": str(profiles),
                                                       "TMPDIR": str(tmp_path / "tmp")})
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["unmatchedPins"] == []
    reran = json.loads((rerun / "result.json").read_text())
    assert reran["pins"]["runtime"] == "runsc"
    stdout = Path(report["files"]["stdout"]).relative_to(cell)
    assert sections((rerun / stdout).read_text())["release"] == [GVISOR_RELEASE]


def made(engine: docker.DockerClient, image: ImageRecord, tmp_path: Path, transport: Transport,
         argv: list[str], probe: WiringProbe, probe_cache: Path | None = None) -> Sandbox:
    turn_dir = tmp_path / "turn"
    (turn_dir / "home").mkdir(parents=True)
    os.chmod(turn_dir, 0o755)
    os.chown(turn_dir / "home", 1000, 1000)
    labels = {RUN_LABEL: f"pytest-runsc-{uuid.uuid4().hex[:12]}", CELL_LABEL: f"runsc.{transport}"}
    factory = DockerSandboxes(engine, TransportChoice(transport.value), probe=probe, runtime=Runtime.RUNSC,
                              probe_cache=probe_cache)
    return factory(ContainerSpec(image.image_id, argv, turn_dir, labels))


LEAVES = (
    f"mkdir -p {TURN_MOUNT}/home/session && printf one > {TURN_MOUNT}/home/session/a.txt && "
    "uname -r && echo err >&2; exit 7"
)


@pytest.mark.parametrize("transport", list(Transport))
def test_under_runsc_a_sandbox_hands_back_output_exit_and_tree_and_a_signal_ends_the_group(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord, transport: Transport,
) -> None:
    # a fresh probe and an empty probe cache: the probe itself runs under gVisor here (its limits read from the
    # engine's stats of the sandbox: a pids limit of ResourceLimits.sandbox_pids and the memory limit, or
    # LimitsNotEnforced)
    probe = WiringProbe()
    box = made(engine, reference_image, tmp_path / "a", transport, ["sh", "-c", LEAVES], probe, tmp_path / "cache")
    output: dict[int, bytearray] = {STDOUT: bytearray(), STDERR: bytearray()}
    try:
        assert list((tmp_path / "cache" / "probes").glob("*.json")), "the probe ran under runsc and passed"
        box.start()
        assert engine.containers.get(str(box.id)).attrs["HostConfig"]["Runtime"] == "runsc"
        box.pump(lambda stream, data: output[stream].extend(data))
        assert box.wait() == 7
        assert (bytes(output[STDOUT]), bytes(output[STDERR])) == (f"{GVISOR_RELEASE}\n".encode(), b"err\n")
        with box.read_tree("home/session") as tree:
            assert tree is not None and read_file(tree.root, f"{tree.relative}/a.txt", 100) == b"one"
    finally:
        box.remove()
    assert gone(engine, box)

    # the deadline's SIGTERM reaches the whole group: a child in the background ends with its parent
    box = made(engine, reference_image, tmp_path / "b", transport, ["sh", "-c", "echo up; sleep 300 & wait"], probe)
    seen = bytearray()

    def on_output(_stream: int, data: bytes) -> None:
        if not seen:
            box.signal("SIGTERM")
        seen.extend(data)

    try:
        box.start()
        box.pump(on_output)  # ends only when the group does: within the test's timeout, not 300 s
        assert box.wait() == 143 and bytes(seen) == b"up\n"
    finally:
        box.remove()
    assert gone(engine, box)


SCRIPT = Path(__file__).resolve().parents[2] / "runner" / "engine" / "host" / "ensure-runtime.sh"


def test_the_set_up_step_leaves_an_engine_that_has_runsc_as_it_is(engine: docker.DockerClient) -> None:
    before = engine.info()["Runtimes"]["runsc"]
    done = subprocess.run([str(SCRIPT), "runsc"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "the engine has the runsc runtime" in done.stderr and "installing" not in done.stderr
    assert engine.info()["Runtimes"]["runsc"] == before
    assert set(before["runtimeArgs"]) >= {"--network=none", "--host-uds=open"}


def test_the_set_up_step_names_what_to_do_for_an_engine_it_cannot_reach() -> None:
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    done = subprocess.run([str(SCRIPT), "runsc"], capture_output=True, text=True, timeout=60, env=env)
    assert done.returncode == 1
    assert "has no runsc runtime" in done.stderr and "runner setup engine --runtime runsc" in done.stderr
