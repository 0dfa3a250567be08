"""The hardened container a CLI runs in, driven with docker-py (blocking calls; the turn runs them in threads).

Every container is: a non-root user (:mod:`runner.sandbox.ownership`: uid 1000, or runner's own when runner is
not root), all capabilities dropped, ``no-new-privileges``, a read-only
root with tmpfs for HOME and /tmp, pids and memory limits, network ``none``, an init process, and
labels naming the run and the cell. Under the ``mount`` transport (:class:`SandboxedProcess`) the only
host path it sees is the per-turn directory, mounted at ``/run/runner``: it holds the MCP socket, which
is the container's one channel to the host. The ``stream`` transport (:mod:`runner.sandbox.stream_transport`)
is the same container with that directory carried over the engine API instead. Its OCI runtime is the engine's
default (runc) or gVisor (``runtime=runsc``: a kernel of its own between the CLI and the host's; the pids limit is
then the whole sandbox's, :attr:`~runner.sandbox.interface.ResourceLimits.sandbox_pids`).

What the CLI writes where the host keeps it is bounded twice (docs/engines.md, "What the CLI can write where the host
keeps it"; the figures: docs/measurements.md): by the kernel, every file at ``ResourceLimits.file_bytes``
(``RLIMIT_FSIZE``: a hard bound, on every file system the container writes, under runc and runsc); and, under the
mount transport only, the whole turn dir at ``turn_dir_bytes`` and ``turn_dir_entries``, looked at while the CLI runs
(:meth:`SandboxedProcess.disk_look`): a budget, passed by what the CLI writes between two looks. The stream
transport's turn dir is the engine's volume, which runner cannot look at: there only the per-file bound holds, and
the volume is removed with the container. What runner reads back from the turn dir it reads through
:mod:`runner.intake.files` (:meth:`SandboxedProcess.read_tree`).

Signals go to the CLI's whole process group: Docker's init is tini, and ``TINI_KILL_PROCESS_GROUP``
makes it forward SIGTERM to the group rather than only its child (Gemini and Qwen spawn workers
that survive a plain kill).
"""

from __future__ import annotations

import contextlib
import logging
import socket
from collections.abc import Iterator
from typing import Any, TypedDict, cast

import docker
import docker.errors
import requests
from docker.types import LogConfig, Mount, Ulimit
from docker.utils.socket import frames_iter_no_tty

from runner.engine import EngineError, call_with_retry
from runner.intake.files import DEFAULT_BOUNDS, IntakeBounds, Tree, usage
from runner.sandbox import interface
from runner.sandbox.interface import HOME, ContainerSpec, DiskLook, OutputSink, Runtime, Sandbox, Signal, Transport

TURN_MOUNT = "/run/runner"
OWNER_LABEL = "runner.owner"
RUN_LABEL = "runner.run"
CELL_LABEL = "runner.cell"
STDOUT, STDERR = interface.STDOUT, interface.STDERR  # here too, for callers that drive a container directly
logger = logging.getLogger("runner.engine")


class CreateArgs(TypedDict, total=False):
    """The arguments of docker-py's ``containers.create`` (and ``run``) runner passes, typed as its stubs type them."""

    runtime: str
    image: str
    command: list[str]
    user: str
    working_dir: str
    environment: dict[str, str]
    network_mode: str
    cap_drop: list[str]
    security_opt: list[str]
    read_only: bool
    tmpfs: dict[str, str]
    pids_limit: int
    mem_limit: str
    memswap_limit: str
    nano_cpus: int
    init: bool
    labels: dict[str, str]
    mounts: list[Mount]
    stdin_open: bool
    tty: bool
    log_config: LogConfig
    ulimits: list[Ulimit]


def demultiplexed(sock: object) -> Iterator[tuple[int, bytes]]:
    """(STDOUT or STDERR, chunk) from an attach or exec socket without a tty: docker-py's demultiplexer, whose stubs
    type the stream number as a str."""
    return cast(Iterator[tuple[int, bytes]], frames_iter_no_tty(sock))


def create_kwargs(spec: ContainerSpec) -> CreateArgs:
    """The engine's create arguments for ``spec``: the hardened container (see the module's docstring)."""
    tmpfs_opts = "rw,nosuid,nodev,noexec"
    kwargs: CreateArgs = {
        "image": spec.image_id,
        "command": spec.argv,
        "user": str(spec.user),
        "working_dir": spec.workdir,
        "environment": {"HOME": HOME, "TINI_KILL_PROCESS_GROUP": "1", **spec.env},
        "network_mode": "none",
        "cap_drop": ["ALL"],
        "security_opt": ["no-new-privileges"],
        "read_only": True,
        "tmpfs": {
            "/tmp": f"{tmpfs_opts},size={spec.limits.tmp_size},mode=1777",
            HOME: f"rw,nosuid,nodev,size={spec.limits.home_size},uid={spec.user.uid},gid={spec.user.gid},mode=0700",
        },
        "pids_limit": spec.limits.pids_for(spec.runtime),
        "mem_limit": spec.limits.memory,
        "memswap_limit": spec.limits.memory,
        "nano_cpus": spec.limits.nano_cpus,
        "init": True,
        "labels": {OWNER_LABEL: "runner", **spec.labels},
        "mounts": [Mount(TURN_MOUNT, str(spec.turn_dir), type="bind", read_only=False)],
        "stdin_open": True,
        "tty": False,
        # stdout is captured through the attach stream; the engine keeps no copy of a flood
        "log_config": LogConfig(type=LogConfig.types.NONE),
        # no file the CLI writes, in the turn dir on the host's disk included, grows past this (EFBIG)
        "ulimits": [Ulimit(name="fsize", soft=spec.limits.file_bytes, hard=spec.limits.file_bytes)],
    }
    if spec.runtime is not Runtime.RUNC:
        kwargs["runtime"] = spec.runtime.value
    return kwargs


class ContainerStartError(EngineError):
    """The engine could not create or start the container: the CLI never started."""


class ContainerRemoved(EngineError):
    """Someone else removed the container while its turn ran: an infrastructure error, never the CLI's conduct."""


class SandboxedProcess(Sandbox):
    """One CLI in one container, the turn dir bind-mounted (the ``mount`` transport). Every method blocks; call
    them from a worker thread. :class:`~runner.sandbox.stream_transport.StreamSandboxedProcess` (``stream``) extends
    it."""

    def __init__(self, client: docker.DockerClient, spec: ContainerSpec) -> None:
        self.client = client
        self.spec = spec
        self.container: Any = None
        self._sock: Any = None
        self._raw: socket.socket | None = None

    @property
    def id(self) -> str | None:
        return self.container.id if self.container is not None else None

    @property
    def transport(self) -> Transport:
        return Transport.MOUNT

    def start(self) -> None:
        """Create, attach before start (so no output is missed), start, and hand over stdin."""
        try:
            self.container = self._create()
            self._sock = call_with_retry(
                self.container.attach_socket, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1}
            )
            self._raw = getattr(self._sock, "_sock", self._sock)
            call_with_retry(self.container.start)
        except (EngineError, docker.errors.DockerException, requests.exceptions.RequestException) as err:
            raise ContainerStartError(f"the container could not be started: {err}") from err
        try:
            if self.spec.stdin:
                assert self._raw is not None
                self._raw.sendall(self.spec.stdin)
        except OSError:
            pass  # the CLI exited already; its exit is what gets reported
        if not self.spec.keep_stdin_open:
            self.close_stdin()

    def _create(self) -> Any:
        """Create the container (the stream transport also fills it before it starts)."""
        return call_with_retry(self.client.containers.create, **create_kwargs(self.spec))

    def close_stdin(self) -> None:
        try:
            if self._raw is not None:
                self._raw.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def pump(self, on_output: OutputSink) -> None:
        """Read the multiplexed stdout/stderr stream until the container's output ends. A stream closed under the
        read (at teardown) ends it; what ``on_output`` raises (runner could not write the transcript: a full disk) is
        raised, never taken for the stream's end: a pump that stopped reading would leave the CLI blocked on a full
        pipe until the deadline."""
        frames = demultiplexed(self._sock)
        while True:
            try:
                stream, data = next(frames)
            except StopIteration:
                return
            except (OSError, ValueError):
                return  # the stream was closed under us at teardown
            on_output(stream, data)

    def wait(self) -> int | None:
        """Block until the container exits; its exit code (None when the engine does not say).
        :class:`ContainerRemoved` when someone else removed it meanwhile: the engine then answers with the kill's
        code (137), which is not the CLI's doing. Sets :attr:`oom_killed` from the engine's inspect (the reload)."""
        removed = (f"container {self.id} was removed from the engine while its turn ran (by `runner gc --run`, or by "
                   "hand): how the CLI would have ended is unknown")
        try:
            result = call_with_retry(self.container.wait)  # idempotent: a dropped wait is simply asked again
            call_with_retry(self.container.reload)  # runner removes it only after this returns
        except docker.errors.NotFound as err:
            raise ContainerRemoved(removed) from err
        if self.container.status == "removing":  # the engine flags a removal before it kills the container
            raise ContainerRemoved(removed)
        state = self.container.attrs.get("State") or {}
        self.oom_killed = bool(state.get("OOMKilled"))  # the engine's word: the memory cgroup killed a process in it
        code = result.get("StatusCode")
        return int(code) if code is not None else None

    def signal(self, name: Signal) -> None:
        """Signal the CLI's process group; a container that is gone (it exited and was removed, or someone removed
        it under its turn: :meth:`wait` says which) has nothing left to signal."""
        try:
            call_with_retry(self.container.kill, signal=name)
        except docker.errors.NotFound:
            return
        except docker.errors.APIError as err:
            if "is not running" not in str(err):
                raise

    @contextlib.contextmanager
    def read_tree(self, relative: str, bounds: IntakeBounds = DEFAULT_BOUNDS) -> Iterator[Tree | None]:
        """The CLI's files are in the mounted turn dir already: read them in place, from the turn dir's descriptor
        (runner's), nothing below it followed."""
        yield Tree(self.spec.turn_dir, relative)

    def disk_look(self) -> DiskLook | None:
        """The turn dir is on the host's disk, written by the CLI through the mount: what it holds, counted without
        following a link and only up to the budget."""
        limits = self.spec.limits
        budget = IntakeBounds(bytes=limits.turn_dir_bytes, entries=limits.turn_dir_entries)
        held = usage(Tree(self.spec.turn_dir), budget)
        share = max(held.bytes / limits.turn_dir_bytes, held.entries / limits.turn_dir_entries)
        over = None if held.over is None else f"the turn dir holds {held.over} (the CLI's writes through {TURN_MOUNT})"
        return DiskLook(share, over)

    def remove(self) -> None:
        # shut down before closing: a close does not wake the pump's thread blocked in a read on this socket (the
        # engine usually ends the stream when the container goes, but not always: measured, a Ctrl-C then left
        # runner waiting on that thread for ever, 1 run in 4)
        with contextlib.suppress(OSError):
            if self._raw is not None:
                self._raw.shutdown(socket.SHUT_RDWR)
        for closer in (self._sock, self._raw):
            try:
                if closer is not None:
                    closer.close()
            except OSError:
                pass
        # A create whose answer was lost (the engine made the container, the connection dropped, the
        # retry made another) leaves a twin with the same labels: remove it too.
        cell = [f"{key}={self.spec.labels[key]}" for key in (RUN_LABEL, CELL_LABEL) if key in self.spec.labels]
        try:
            if self.container is not None:
                try:
                    call_with_retry(self.container.remove, force=True, v=True)
                except docker.errors.APIError as err:
                    if err.status_code not in (404, 409):  # gone already, or removed by someone else right now
                        raise
            if len(cell) == 2:
                remove_labelled(self.client, cell)
        except EngineError as err:
            # the turn's result stands; the leftover carries its labels, so the run's own cleanup or
            # `runner gc` removes it once the engine answers again
            logger.warning("could not remove container %s (%s); `runner gc` removes it later", self.id, err)


def remove_labelled(client: docker.DockerClient, label: str | list[str]) -> list[str]:
    """Remove every container carrying ``label`` (``key`` or ``key=value``; a list means all of them).

    Returns their ids. Each engine call is retried; EngineCallFailed when the engine keeps failing. The list is the
    engine's own (``sparse``): docker-py otherwise inspects each container it lists, one call at a time, and a container
    removed meanwhile (by its turn's own teardown, or by hand) made the listing itself raise ``NotFound``.
    """
    removed = []
    for container in call_with_retry(client.containers.list, all=True, sparse=True, filters={"label": label}):
        try:
            call_with_retry(container.remove, force=True, v=True)  # v: its anonymous volume (stream transport)
            removed.append(str(container.id))
        except docker.errors.APIError as err:
            if err.status_code not in (404, 409):  # gone already, or its removal is under way
                raise
    return removed
