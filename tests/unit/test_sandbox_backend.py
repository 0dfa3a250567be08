"""The sandbox backend's registry and what the Docker backend owns without an engine: its name lookup, the runtime
check at connection, and its wiring probe shared by every turn it makes sandboxes for (the engine-backed cases are
in tests/integration/test_sandbox.py, test_wiring.py and test_cell_alone.py)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest

from runner.engine import DEFAULT_SOCKET, EngineUnavailable
from runner.errors import Exit, UnknownName
from runner.sandbox import probe
from runner.sandbox.backend import BACKENDS, DEFAULT_BACKEND, Connect, SandboxBackend, connect_backend
from runner.sandbox.docker_backend import DockerBackend
from runner.sandbox.interface import ContainerSpec, Runtime, Transport, TransportChoice


class Engine:
    """The engine as the backend's probe sees it before it starts a container (the probe container is stood in for)."""

    address = DEFAULT_SOCKET


def spec(tmp_path: Path) -> ContainerSpec:
    return ContainerSpec("sha256:" + "0" * 64, ["true"], tmp_path, {"runner.run": "r", "runner.cell": "c"})


def test_an_unknown_backend_is_refused_naming_the_known_ones() -> None:
    with pytest.raises(UnknownName, match=r"no sandbox backend named 'kubernetes' \(known: docker\)") as raised:
        connect_backend({}, "kubernetes")
    assert raised.value.exit_code is Exit.UNKNOWN
    assert DEFAULT_BACKEND in BACKENDS


class Recorded:
    """A backend of the registry's own test: what was asked of it (the registry's logic, not an engine's)."""

    def __init__(self, environ: Mapping[str, str], missing: Runtime | None) -> None:
        self.environ, self.missing = environ, missing
        self.checked: list[Runtime] = []
        self.closed = False

    def check_runtime(self, runtime: Runtime) -> None:
        self.checked.append(runtime)
        if runtime is self.missing:
            raise probe.RuntimeMissing(f"no {runtime}")

    def close(self) -> None:
        self.closed = True


def test_a_registered_backend_is_connected_by_name_and_checked_for_the_runtime_before_it_is_handed_out(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    made: list[Recorded] = []

    def make(missing: Runtime | None) -> Connect:
        def connect(environ: Mapping[str, str]) -> SandboxBackend:
            made.append(Recorded(environ, missing))
            return made[-1]  # type: ignore[return-value]  # only what connect_backend calls
        return connect

    monkeypatch.setitem(BACKENDS, "recorded", make(None))  # one entry: all another backend needs here
    monkeypatch.setitem(BACKENDS, "no-runsc", make(Runtime.RUNSC))
    got = connect_backend({"DOCKER_HOST": "tcp://elsewhere:2375"}, "recorded", Runtime.RUNSC)
    assert got is made[0] and made[0].environ == {"DOCKER_HOST": "tcp://elsewhere:2375"}
    assert made[0].checked == [Runtime.RUNSC] and not made[0].closed
    with pytest.raises(probe.RuntimeMissing):
        connect_backend({}, "no-runsc", Runtime.RUNSC)
    assert made[1].closed, "a backend refused for its runtime lets its connection go"
    connect_backend({}, "recorded")
    assert made[2].checked == [], "no runtime asked for: none checked (gc, images)"


def test_the_docker_backend_names_the_engine_that_does_not_answer() -> None:
    with pytest.raises(EngineUnavailable, match=r"no Docker Engine answers at unix:///nonexistent/docker\.sock"):
        connect_backend({"DOCKER_HOST": "unix:///nonexistent/docker.sock"})


def test_every_turn_of_one_backend_shares_its_wiring_probe_and_another_backend_learns_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    probed: list[bool] = []

    def run(_client: object, _spec: ContainerSpec, mount: bool) -> int:
        probed.append(mount)
        return 3 if mount else 0  # the mount does not reach the container; the stream passes

    monkeypatch.setattr(probe, "_probe", run)
    backend = DockerBackend(Engine())  # type: ignore[arg-type]
    typed: SandboxBackend = backend  # the protocol is all a caller holds
    for _ in range(3):  # three turns, each with its factory, as run_turn asks for one
        box = typed.sandboxes(TransportChoice.AUTO, Runtime.RUNC, probe_cache=None)(spec(tmp_path))
        assert box.transport is Transport.STREAM
    assert probed == [True, False], "the mount and the stream probed once for the backend's life"
    DockerBackend(Engine()).sandboxes(TransportChoice.AUTO, Runtime.RUNC, None)(spec(tmp_path))  # type: ignore[arg-type]
    assert probed == [True, False, True, False], "no process-wide probe: another backend knows nothing yet"


def test_the_docker_backend_checks_a_runtime_once_per_engine(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[Runtime] = []
    monkeypatch.setattr(probe, "check_runtime", lambda _client, runtime: asked.append(runtime))
    backend = DockerBackend(Engine())  # type: ignore[arg-type]
    for _ in range(2):
        backend.check_runtime(Runtime.RUNSC)
    assert asked == [Runtime.RUNSC]
