"""How the wiring probe names what it found (the engine-backed cases are in tests/integration/test_wiring.py)."""

from __future__ import annotations

from pathlib import Path

import docker.errors
import pytest

from runner.sandbox import probe
from runner.sandbox.container import ContainerSpec
from runner.sandbox.transport import Transport
from runner.turn import process


@pytest.fixture(autouse=True)
def _fresh_memory(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test starts as a new process would: a pass another test left in memory would skip the probe."""
    monkeypatch.setattr(probe, "_passed", set())
    monkeypatch.setattr(process, "_MOUNT_NOT_VISIBLE", set())


def spec(tmp_path: Path) -> ContainerSpec:
    return ContainerSpec("sha256:" + "0" * 64, ["true"], tmp_path, {"runner.run": "r", "runner.cell": "c"})


@pytest.mark.parametrize(("code", "error", "fix"), [
    (3, probe.MountsNotVisible, "TMPDIR"),
    (4, probe.RelayMissing, "base-cli"),
    (5, probe.LimitsNotEnforced, "Delegate="),
    (7, probe.WiringError, "exited 7"),
])
def test_each_probe_answer_is_a_named_error_with_its_fix(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, code: int, error: type[Exception], fix: str
) -> None:
    monkeypatch.setenv("RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(probe, "_probe", lambda _client, _spec, _mount: code)
    with pytest.raises(error, match=fix):
        probe.check_wiring(None, spec(tmp_path))  # type: ignore[arg-type]


def test_a_pass_is_remembered_and_not_probed_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    calls: list[int] = []
    monkeypatch.setattr(probe, "_probe", lambda _client, _spec, _mount: calls.append(1) or 0)
    probe.check_wiring(None, spec(tmp_path))  # type: ignore[arg-type]
    probe._passed.clear()  # a new process: only the file remains
    probe.check_wiring(None, spec(tmp_path))  # type: ignore[arg-type]
    assert calls == [1]


@pytest.mark.parametrize(("message", "error"), [
    ('invalid mount config for type "bind": bind source path does not exist: /tmp/runner-probe-x', "MountsNotVisible"),
    ("crun: the requested cgroup controller `pids` is not available: OCI runtime error", "LimitsNotEnforced"),
    ("OCI runtime create failed: something else", "ContainerStartError"),
    ('container create: unknown mount option "uid=1000": invalid mount option', "HardeningRefused"),
])
def test_start_errors_are_told_apart(message: str, error: str) -> None:
    found = probe._classify_start_error(docker.errors.APIError(message))
    assert type(found).__name__ == error


def test_auto_probes_the_mount_once_per_process_where_it_does_not_reach(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probed: list[bool] = []

    def check_wiring(_client: object, _spec: ContainerSpec, mount: bool = True) -> None:
        probed.append(mount)
        if mount:
            raise probe.MountsNotVisible("no nonce")

    monkeypatch.setattr(process, "check_wiring", check_wiring)
    monkeypatch.setattr(process.StreamProcess, "__init__", lambda self, client, spec: None)
    factory = process.DockerProcesses(None, transport=Transport.AUTO)  # type: ignore[arg-type]
    assert [factory(spec(tmp_path)).transport for _ in range(3)] == ["stream"] * 3
    assert probed == [True, False, False, False]  # the mount once; the stream's own check (cached) each turn
    with pytest.raises(probe.MountsNotVisible):  # asked for by name, the mount is probed, and refused, again
        process.DockerProcesses(None, transport=Transport.MOUNT)(spec(tmp_path))  # type: ignore[arg-type]
