"""The sandbox backend: the one object that owns a container's lifecycle, from connecting to an engine to removing
what a run left, and the registry of the backends runner knows.

A command connects one backend at its edge (:func:`connect_backend`) and hands it down: the matrix asks it for a
column's image, the turn for its sandbox factory, the command line for the run's lease and, however the run ends,
for the removal of the run's sandboxes; ``runner gc`` asks it for what gone runs left. Nobody below the edge holds
an engine client or a process-wide probe: what a backend has learnt (the wiring probe's verdicts, on Docker) lives
in the backend, for as long as the command holds it.

:class:`SandboxBackend` is the interface (a :class:`~typing.Protocol`: an implementation needs no base class) and
:data:`BACKENDS` its providers by name, after inspect_ai's ``SandboxEnvironment`` and its registry. Another engine (a
remote one, a cluster) is a module implementing the protocol and one entry here; Podman needs none, its
Docker-compatible API is served by the Docker backend (:mod:`runner.sandbox.docker_backend`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from runner.errors import UnknownName

if TYPE_CHECKING:
    from runner.images import ImageRecord, ImageSettings, Progress
    from runner.sandbox.interface import Runtime, SandboxFactory, TransportChoice
    from runner.sandbox.leftovers import Collected

DEFAULT_BACKEND = "docker"


class RunGuard(Protocol):
    """What outlives the runner for its run (on Docker, the reaper process): told, once the run removed its own
    sandboxes, that nothing is left to do, or, when it could not, to remove them itself."""

    def release(self) -> None: ...

    def abandon(self) -> None: ...


class SandboxBackend(Protocol):
    """One engine's sandboxes, for the life of one command: everything runner does with containers goes through it.

    Every method blocks (an engine's client does): an async caller calls them from a worker thread. Engine failures
    are :class:`~runner.engine.EngineError` (exit 5), retried inside where the call is idempotent."""

    @property
    def address(self) -> str:
        """Where the engine answers, as messages name it."""
        ...

    def check_runtime(self, runtime: Runtime) -> None:
        """A :class:`~runner.sandbox.probe.RuntimeMissing` naming the fix unless the engine runs ``runtime``."""
        ...

    def prepare_image(self, image: str, settings: ImageSettings, progress: Progress | None = None) -> ImageRecord:
        """The pinned image ``image``, found or built, ready for a turn."""
        ...

    def sandboxes(self, transport: TransportChoice, runtime: Runtime, probe_cache: Path | None) -> SandboxFactory:
        """The factory of one turn's sandbox over ``transport`` under ``runtime`` (``probe_cache``: runner's cache
        directory, where what the backend learns of an image may be kept across processes)."""
        ...

    def guard_run(self, run_id: str, enabled: bool = True) -> RunGuard:
        """The guard that removes the run's sandboxes should this process die where no teardown runs (SIGKILL)."""
        ...

    def reap(self, run_id: str) -> list[str]:
        """Remove every sandbox of run ``run_id``; their ids."""
        ...

    def gc(self, runs: set[str] | None = None) -> Collected:
        """Remove the sandboxes of runs that are gone (of ``runs`` only, when given); what was removed and left."""
        ...

    def close(self) -> None:
        """Let the engine connection go."""
        ...


Connect = Callable[[Mapping[str, str]], SandboxBackend]  # the host's variables (read at the edge) -> a backend


def _docker(environ: Mapping[str, str]) -> SandboxBackend:
    from runner.sandbox.docker_backend import DockerBackend  # imported when used: it loads docker-py

    return DockerBackend.connect(environ)


BACKENDS: dict[str, Connect] = {"docker": _docker}


def connect_backend(environ: Mapping[str, str], name: str = DEFAULT_BACKEND, runtime: Runtime | None = None
                    ) -> SandboxBackend:
    """The backend ``name`` on the engine ``environ`` names, once it answers and, when ``runtime`` is given, runs
    containers under it (the backend's own error naming the fix, before any turn). An unknown name is
    :class:`~runner.errors.UnknownName` listing the known ones."""
    try:
        connect = BACKENDS[name]
    except KeyError:
        raise UnknownName(f"no sandbox backend named {name!r} (known: {', '.join(sorted(BACKENDS))})") from None
    backend = connect(environ)
    if runtime is not None:
        try:
            backend.check_runtime(runtime)
        except BaseException:
            backend.close()
            raise
    return backend
