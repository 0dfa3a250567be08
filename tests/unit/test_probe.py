"""How the wiring probe names what it found and what it remembers, and how the factory picks the transport by it
(the engine-backed cases are in tests/integration/test_wiring.py and test_transport.py)."""

from __future__ import annotations

from pathlib import Path

import docker.errors
import pytest

from runner.engine import DEFAULT_SOCKET
from runner.sandbox import probe
from runner.sandbox.container import SandboxedProcess
from runner.sandbox.factory import DockerSandboxes
from runner.sandbox.interface import ContainerSpec, Transport, TransportChoice
from runner.sandbox.stream_transport import StreamSandboxedProcess

Probed = list[tuple[str, bool]]  # (image, through the mount) of each probe container run


def probing(monkeypatch: pytest.MonkeyPatch, answer: dict[bool, int]) -> Probed:
    """Stand in for the probe container: it exits ``answer[mount]``; the probes run, in order."""
    probed: Probed = []

    def run(_client: object, spec: ContainerSpec, mount: bool) -> int:
        probed.append((spec.image_id, mount))
        return answer[mount]

    monkeypatch.setattr(probe, "_probe", run)
    return probed


class Engine:
    """The engine as the probe sees it before it starts a container (the probe container itself is stood in for)."""

    address = DEFAULT_SOCKET


ENGINE = Engine()


def spec(tmp_path: Path, image_id: str = "sha256:" + "0" * 64) -> ContainerSpec:
    return ContainerSpec(image_id, ["true"], tmp_path, {"runner.run": "r", "runner.cell": "c"})


@pytest.mark.parametrize(("code", "error", "fix"), [
    (3, probe.MountsNotVisible, "TMPDIR"),
    (4, probe.RelayMissing, "base-cli"),
    (5, probe.LimitsNotEnforced, "Delegate="),
    (7, probe.WiringError, "exited 7"),
])
def test_each_probe_answer_is_a_named_error_with_its_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, error: type[Exception], fix: str
) -> None:
    probed = probing(monkeypatch, {True: code, False: code})
    wiring = probe.WiringProbe()
    for _ in range(2):
        with pytest.raises(error, match=fix):
            wiring.check(ENGINE, spec(tmp_path), cache=tmp_path / "cache")  # type: ignore[arg-type]
    assert len(probed) == 2, "a failure is probed again: it may have been fixed"
    assert not (tmp_path / "cache" / "probes").exists(), "nor is it written down"


def test_a_pass_is_remembered_and_not_probed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    probed = probing(monkeypatch, {True: 0, False: 0})
    cache = tmp_path / "cache"  # runner's cache directory, handed down from the edge (never the machine's here)
    probe.WiringProbe().check(ENGINE, spec(tmp_path), cache=cache)  # type: ignore[arg-type]
    probe.WiringProbe().check(ENGINE, spec(tmp_path), cache=cache)  # type: ignore[arg-type]  # a new process: the file
    assert len(probed) == 1
    [remembered] = (tmp_path / "cache" / "probes").glob("*.json")
    key = probe.ProbeKey.of(ENGINE.address, spec(tmp_path).image_id, Transport.MOUNT)
    assert remembered.name == f"{key.digest()}.json"


def test_a_pass_holds_for_its_own_image_and_transport_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    probed = probing(monkeypatch, {True: 0, False: 0})
    wiring, other = probe.WiringProbe(), spec(tmp_path, "sha256:" + "1" * 64)
    for _ in range(2):
        wiring.check(ENGINE, spec(tmp_path), Transport.MOUNT, cache=None)  # type: ignore[arg-type]
        wiring.check(ENGINE, spec(tmp_path), Transport.STREAM, cache=None)  # type: ignore[arg-type]
        wiring.check(ENGINE, other, Transport.MOUNT, cache=None)  # type: ignore[arg-type]
    assert probed == [(spec(tmp_path).image_id, True), (spec(tmp_path).image_id, False), (other.image_id, True)]
    keys = {probe.ProbeKey.of(ENGINE.address, image, transport).digest()
            for image in (spec(tmp_path).image_id, other.image_id) for transport in Transport}
    assert len(keys) == 4, "each (image, transport) has a file of its own"


def test_a_probe_on_another_engine_is_another_key() -> None:
    here = probe.ProbeKey.of(ENGINE.address, "sha256:" + "0" * 64, Transport.MOUNT)
    there = probe.ProbeKey.of("tcp://elsewhere:2375", "sha256:" + "0" * 64, Transport.MOUNT)
    assert there.engine == "tcp://elsewhere:2375" and there != here and there.digest() != here.digest()


@pytest.mark.parametrize(("message", "error"), [
    ('invalid mount config for type "bind": bind source path does not exist: /tmp/runner-probe-x', "MountsNotVisible"),
    ("crun: the requested cgroup controller `pids` is not available: OCI runtime error", "LimitsNotEnforced"),
    ("OCI runtime create failed: something else", "ContainerStartError"),
    ('container create: unknown mount option "uid=1000": invalid mount option', "HardeningRefused"),
])
def test_start_errors_are_told_apart(message: str, error: str) -> None:
    found = probe._classify_start_error(docker.errors.APIError(message), ENGINE.address)
    assert type(found).__name__ == error


def test_auto_probes_the_mount_once_per_process_where_it_does_not_reach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probed = probing(monkeypatch, {True: 3, False: 0})  # no nonce through the mount; the stream passes
    wiring, cache = probe.WiringProbe(), tmp_path / "cache"  # the cache: runner's, handed down from the edge
    made = [DockerSandboxes(ENGINE, TransportChoice.AUTO, wiring, probe_cache=cache)(spec(tmp_path))  # type: ignore[arg-type]
            for _ in range(3)]
    assert [type(box) for box in made] == [StreamSandboxedProcess] * 3
    assert [box.transport for box in made] == [Transport.STREAM] * 3
    assert [mount for _, mount in probed] == [True, False], "the mount once, the stream once (then remembered)"
    with pytest.raises(probe.MountsNotVisible):  # asked for by name, the mount is probed, and refused, again
        DockerSandboxes(ENGINE, TransportChoice.MOUNT, wiring, probe_cache=cache)(spec(tmp_path))  # type: ignore[arg-type]
    assert [mount for _, mount in probed] == [True, False, True]
    fresh = DockerSandboxes(ENGINE, TransportChoice.AUTO, probe.WiringProbe(), probe_cache=cache)(spec(tmp_path))  # type: ignore[arg-type]
    assert fresh.transport is Transport.STREAM
    # another probe knows nothing of the mount; the stream's pass it finds in the cache
    assert [mount for _, mount in probed] == [True, False, True, True]


def test_auto_is_the_mount_where_it_reaches_and_stream_never_probes_the_mount(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probed = probing(monkeypatch, {True: 0, False: 0})
    auto = DockerSandboxes(ENGINE, TransportChoice.AUTO, probe.WiringProbe())(spec(tmp_path))  # type: ignore[arg-type]
    assert type(auto) is SandboxedProcess and auto.transport is Transport.MOUNT
    stream = DockerSandboxes(ENGINE, TransportChoice.STREAM, probe.WiringProbe())(spec(tmp_path))  # type: ignore[arg-type]
    assert type(stream) is StreamSandboxedProcess and stream.transport is Transport.STREAM
    assert [mount for _, mount in probed] == [True, False]

