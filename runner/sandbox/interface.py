"""A turn's sandbox, as the turn sees it: one abstract interface, two transports, one factory type.

The turn never builds its sandbox itself and never asks which class it got: it calls a
:data:`SandboxFactory` with the :class:`ContainerSpec` and drives what comes
back through :class:`Sandbox` alone. Two classes implement it, one per :class:`Transport`:

- :class:`~runner.sandbox.container.SandboxedProcess` (``mount``): the hardened container, with the
  per-turn directory bind-mounted; the MCP and model sockets in it are the container's channel to the host.
- :class:`~runner.sandbox.stream_transport.StreamSandboxedProcess` (``stream``): the same container with no host
  path, its files carried in and out with the archive API and its connections relayed over a
  multiplexed exec stream, for an engine that does not share runner's filesystem.

The default factory, the sandbox backend's (:class:`~runner.sandbox.backend.SandboxBackend`; on Docker
:class:`~runner.sandbox.factory.DockerSandboxes`), picks the transport (``auto`` asks the wiring probe,
:mod:`runner.sandbox.probe`); a unit test hands the turn a fake factory instead.

Every method blocks (docker-py does); the turn calls them from its own worker threads, so its MCP
server keeps answering meanwhile. This module imports no engine library: the command line parses a
transport's name into :class:`TransportChoice` before it connects to anything.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Literal

from runner.intake.files import DEFAULT_BOUNDS, IntakeBounds, Tree
from runner.sandbox.ownership import ContainerUser, container_user

STDOUT, STDERR = 1, 2  # the stream numbers a sandbox hands its output with (those of Docker's multiplexed stream)
OutputSink = Callable[[int, bytes], None]  # (STDOUT or STDERR, chunk)
Signal = Literal["SIGTERM", "SIGKILL"]  # what the deadline sends: SIGTERM, then after the grace period SIGKILL


class Transport(StrEnum):
    """How the turn's files and sockets reach the container."""

    MOUNT = "mount"  # the per-turn directory bind-mounted at /run/runner
    STREAM = "stream"  # the engine API only: the archive API for files, a relay over an exec stream for sockets


class TransportChoice(StrEnum):
    """The transport a command asks for: one by name, or ``auto``, ``mount`` where the wiring probe finds the
    mount reaching the container, else ``stream``."""

    AUTO = "auto"
    MOUNT = "mount"
    STREAM = "stream"


class Runtime(StrEnum):
    """The OCI runtime the turn's container runs under (``--runtime``, ``RUNNER_RUNTIME``).

    ``runc``: the engine's default runtime, the host's kernel behind the container's hardening. ``runsc``:
    gVisor, a kernel of its own between the CLI and the host's (registered with the engine by
    ``runner setup engine --runtime runsc``, ``make engine RUNTIME=runsc``). The result pins which one ran.
    """

    RUNC = "runc"
    RUNSC = "runsc"


RUNTIME_ENV = "RUNNER_RUNTIME"  # the environment variable --runtime defaults to
MiB = 1024 * 1024
HOME = "/home/runner"  # the CLI's HOME in the container (a tmpfs) and its working directory unless the spec says


@dataclass(frozen=True)
class ResourceLimits:
    """What the engine lets one CLI's container use: memory, tasks, CPU, its two tmpfs, and what it may write where the
    host keeps it.

    Writes: every file the CLI writes, anywhere, is capped by the kernel at :attr:`file_bytes` (``RLIMIT_FSIZE``, the
    engine's ``ulimits``: a write past it fails with ``EFBIG`` after ``SIGXFSZ``; runc and runsc both enforce it). A
    HOME in the turn dir (``/run/runner``) is on the host's disk (mount transport) or the engine's (stream
    transport), not on a tmpfs with a size: under the mount transport the turn watches what the turn dir holds while
    the CLI runs (every :attr:`disk_poll_seconds`, every :attr:`disk_poll_near_seconds` once past half its budget)
    and stops the CLI once it holds more than :attr:`turn_dir_bytes` or :attr:`turn_dir_entries` (see
    :meth:`Sandbox.disk_look`); what it can write between two looks (and, under runsc, what gVisor has not yet
    written back to the host: the sandbox caches writes in its memory) passes the
    budget by that much. Under the stream transport the engine's volume cannot be seen from here: only the per-file
    cap holds there (the volume goes with the container).
    """

    memory: str = "1g"
    pids: int = 256
    nano_cpus: int = 2_000_000_000
    tmp_size: str = "256m"
    home_size: str = "512m"
    # under runsc the pids limit is the host cgroup's of the whole sandbox: gVisor's own threads and, on its ptrace
    # platform, host tasks for every task of the CLI, so it is larger than under runc (what an idle sandbox and a
    # busy turn hold, and how 256 failed: docs/measurements.md, "gVisor")
    sandbox_pids: int = 1024
    file_bytes: int = 128 * MiB  # the largest file the CLI may write, anywhere (RLIMIT_FSIZE)
    turn_dir_bytes: int = 512 * MiB  # what the turn dir may hold on the host's disk: as much as a tmpfs HOME
    turn_dir_entries: int = 50_000
    disk_poll_seconds: float = 0.25
    disk_poll_near_seconds: float = 0.05  # once past half the budget: what it writes between looks is what passes it

    def pids_for(self, runtime: Runtime) -> int:
        """The pids limit the engine enforces under ``runtime``: the CLI's tasks (runc), or the sandbox's (runsc)."""
        return self.sandbox_pids if runtime is Runtime.RUNSC else self.pids


@dataclass(frozen=True)
class DiskLook:
    """One look at what the CLI has written where the host keeps it: the share of its budget in use (the larger of
    the bytes' and the entries'), and why it is over its budget (None: within it)."""

    share: float
    over: str | None = None


@dataclass(frozen=True)
class ContainerSpec:
    """Everything a sandbox is made from (a :data:`SandboxFactory` takes it): the image, the CLI's command line, the
    per-turn directory, labels, environment, stdin, limits, OCI runtime and user. What the engine is asked for from
    it is :func:`runner.sandbox.container.create_kwargs`."""

    image_id: str
    argv: list[str]
    turn_dir: Path
    labels: dict[str, str]
    env: dict[str, str] = field(default_factory=dict)
    stdin: bytes | None = None
    keep_stdin_open: bool = False
    limits: ResourceLimits = ResourceLimits()
    workdir: str = HOME
    runtime: Runtime = Runtime.RUNC  # runc: the engine's default runtime; runsc: gVisor (the engine must have it)
    # who the CLI runs as: the images' 1000:1000 when runner is root, else runner's own (runner.sandbox.ownership)
    user: ContainerUser = field(default_factory=container_user)


class Sandbox(ABC):
    """One CLI in one container for one turn: start it, stream its output, wait for it, signal it, read what
    it left, remove it. Which :class:`Transport` carries its files and sockets is :attr:`transport`."""

    # whether the engine says it OOM-killed the container (its ``State.OOMKilled``), read by :meth:`wait` once the CLI
    # has exited; None where the sandbox cannot say (not exited yet, or a sandbox that does not read it)
    oom_killed: bool | None = None

    @property
    @abstractmethod
    def id(self) -> str | None:
        """What the engine calls it (the container id) once started; None before."""

    @property
    @abstractmethod
    def transport(self) -> Transport:
        """How its files and sockets reach the container (fixed when it is made)."""

    @abstractmethod
    def start(self) -> None:
        """Start the CLI and hand over its stdin; :class:`~runner.sandbox.container.ContainerStartError`
        when it could not be started (the turn then ends as an infrastructure error)."""

    @abstractmethod
    def close_stdin(self) -> None:
        """End the CLI's input (a profile may keep it open until the first terminal frame)."""

    @abstractmethod
    def pump(self, on_output: OutputSink) -> None:
        """Hand every stdout/stderr chunk to ``on_output`` until the output ends (the attach stream)."""

    @abstractmethod
    def wait(self) -> int | None:
        """Block until the CLI exits; its exit code (None when nobody can say). The turn bounds it with its
        deadline. :class:`~runner.engine.EngineError` when the engine keeps failing."""

    @abstractmethod
    def signal(self, name: Signal) -> None:
        """Send ``name`` to the CLI's whole process group (the container's init forwards it to the group)."""

    @abstractmethod
    def read_tree(self, relative: str, bounds: IntakeBounds = DEFAULT_BOUNDS) -> AbstractContextManager[Tree | None]:
        """The files the CLI left at ``relative`` (a path in the turn dir, a file or a folder), on the host for the
        length of the ``with``, as a :class:`~runner.intake.files.Tree` to be read through :mod:`runner.intake.files`
        alone (its root is runner's, everything below it the CLI's: never followed), taking in at most ``bounds``;
        None when there is nothing the sandbox can hand over. Read them only once the CLI has exited; what the caller
        keeps of them, it copies out before the ``with`` ends."""

    def disk_look(self) -> DiskLook | None:
        """What the CLI has written where the host keeps it, against its budget (``ResourceLimits.turn_dir_bytes`` and
        ``turn_dir_entries``); None when it is out of sight (the default: then nobody looks again). Asked while the
        CLI runs (``ResourceLimits.disk_poll_seconds``), from a worker thread."""
        return None

    @abstractmethod
    def remove(self) -> None:
        """Let go of the container and everything the engine holds for it. Must not raise."""


SandboxFactory = Callable[[ContainerSpec], Sandbox]  # may block: the default one may run the wiring probe
