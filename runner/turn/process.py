"""The CLI's process as the turn sees it: a small interface, with the Docker container as the default.

The turn never builds its process itself: it asks a :data:`ProcessFactory` for one, given the
:class:`~runner.sandbox.container.ContainerSpec`, and drives it through :class:`CliProcess` only.
:class:`DockerProcesses` makes the hardened container of :mod:`runner.sandbox.container`; a test
hands in a fake and settles a turn without an engine (``tests/unit/test_turn_settlement.py``).

Calling the factory blocks (the default one may run the wiring probe), and so does every method, as
docker-py does; the turn calls them from its own worker threads (:data:`runner.turn.drive.THREADS`),
so the MCP server keeps answering meanwhile.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from runner.core.scrub import Scrubber
from runner.sandbox.container import ContainerSpec, SandboxedProcess
from runner.sandbox.engine import engine_address
from runner.sandbox.probe import MountsNotVisible, check_wiring
from runner.sandbox.stream import StreamSandboxedProcess
from runner.sandbox.transport import Transport
from runner.turn.collect import copy_session_transcript

if TYPE_CHECKING:
    import docker

OutputSink = Callable[[int, bytes], None]  # (stream: STDOUT or STDERR, chunk)


class CliProcess(Protocol):
    """One CLI for one turn: start it, stream its output, wait for it, signal it, collect, remove."""

    @property
    def id(self) -> str | None:
        """What the engine calls it (the container id) once started; None before."""

    def start(self) -> None:
        """Start the CLI and hand over its stdin; :class:`~runner.sandbox.container.ContainerStartError`
        when it could not be started (the turn then ends as an infrastructure error)."""

    def close_stdin(self) -> None:
        """End the CLI's input (the profile keeps it open until the first terminal frame)."""

    def pump(self, on_output: OutputSink) -> None:
        """Hand every stdout/stderr chunk to ``on_output`` until the output ends."""

    def wait(self) -> int | None:
        """Block until the CLI exits; its exit code (None when nobody can say). The turn bounds it with
        the deadline. :class:`~runner.sandbox.engine.EngineError` when the engine keeps failing."""

    def signal(self, name: str) -> None:
        """Send ``name`` (``SIGTERM``, ``SIGKILL``) to the CLI's whole process group."""

    def collect(self, relative: str, dest: Path, scrubber: Scrubber) -> list[str]:
        """Copy what the CLI left at ``relative`` (a path in the turn dir) to ``dest``, scrubbed; the
        files copied, relative to ``dest`` (none when it left nothing there)."""

    def remove(self) -> None:
        """Let go of the process and everything the engine holds for it. Must not raise."""


ProcessFactory = Callable[[ContainerSpec], CliProcess]


class DockerProcess(SandboxedProcess):
    """The hardened container, which sees the turn dir through its bind mount."""

    transport = "mount"

    def collect(self, relative: str, dest: Path, scrubber: Scrubber) -> list[str]:
        return copy_session_transcript(self.spec.turn_dir / relative, dest, scrubber)


class StreamProcess(StreamSandboxedProcess):
    """The hardened container with no host path: files and connections over the engine API."""

    def collect(self, relative: str, dest: Path, scrubber: Scrubber) -> list[str]:
        with tempfile.TemporaryDirectory(prefix="runner-collect-") as scratch:
            fetched = self.fetch(relative, Path(scratch))
            return copy_session_transcript(fetched, dest, scrubber) if fetched is not None else []


# (engine, image) where this process's probe found the mount not reaching the container: a failure is not cached
# by the probe (it may be fixed), but within one run auto need not probe the mount again before every turn
_MOUNT_NOT_VISIBLE: set[tuple[str, str]] = set()


class DockerProcesses:
    """The default factory: one container per turn on ``client``, over ``transport``.

    ``mount`` (the turn dir bind-mounted) runs once the engine and the image are known to carry a turn
    (:func:`~runner.sandbox.probe.check_wiring`, cached; it raises a named
    :class:`~runner.sandbox.probe.WiringError` with the fix, so a turn that could not work is never graded).
    ``stream`` needs only the engine API (:mod:`runner.sandbox.stream`). ``auto`` is ``mount`` where the
    probe finds the mount reaching the container, else ``stream``; a process that found it does not goes
    straight to ``stream`` for that engine and image. The process's ``transport`` says which ran.
    """

    def __init__(self, client: docker.DockerClient, transport: Transport = Transport.AUTO) -> None:
        self.client = client
        self.transport = transport

    def __call__(self, spec: ContainerSpec) -> CliProcess:
        transport = self.transport
        where = (engine_address(), spec.image_id)
        if transport is Transport.AUTO and where in _MOUNT_NOT_VISIBLE:
            transport = Transport.STREAM
        try:
            check_wiring(self.client, spec, mount=transport is not Transport.STREAM)
        except MountsNotVisible:
            if transport is Transport.MOUNT:
                raise
            _MOUNT_NOT_VISIBLE.add(where)
            check_wiring(self.client, spec, mount=False)
            transport = Transport.STREAM
        return StreamProcess(self.client, spec) if transport is Transport.STREAM else DockerProcess(self.client, spec)
