"""How the wiring probe names what it found (the engine-backed cases are in tests/integration/test_wiring.py)."""

from __future__ import annotations

from pathlib import Path

import docker.errors
import pytest

from runner.sandbox import probe
from runner.sandbox.container import ContainerSpec


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
