"""The stream transport: a turn over the engine API alone, for engines that cannot see runner's files.

Under Docker-out-of-Docker, a remote ``DOCKER_HOST`` or Docker Desktop, a bind mount of the per-turn
directory reaches the container empty (:mod:`runner.sandbox.probe` detects it). This transport mounts
no host path at all; the container keeps network ``none``:

- **Files in**: ``/run/runner`` is an anonymous volume (removed with the container). Before start,
  the archive API (``put_archive``) fills it with the turn directory's files (``script.json``, HOME
  with the rendered config files, owned by the container's uid), the relay, and two symlinks, ``mcp.sock`` and
  ``model.sock``, pointing at the relay's sockets in ``/tmp/.runner-relay/`` (the volume's root is
  the engine's, not writable by the container's uid; connect() follows symlinks, so the CLIs' paths are unchanged).
- **Connections**: after start, an exec runs the relay (:mod:`runner/sandbox/relay`, node or python3,
  whichever the image has) as the container's uid. It listens on those sockets and carries every connection
  over the exec's hijacked stream, multiplexed in frames (see relay.py). Here each channel it opens
  becomes a connection to the host-side socket in the turn directory, where the MCP server and the
  model endpoint listen exactly as under the mount transport: their counts, the latch and the
  scrubbing do not know which transport ran. The CLI's command waits (at most 20 s) for the relay.
- **Files out**: ``get_archive`` copies what the CLI left (its session transcript) out of the volume
  after exit, into a scratch directory on the host for as long as the caller reads it (:meth:`read_tree`). The
  archive is the CLI's: it is read as it streams in, bounded in bytes while it is read (never held whole), and
  extracted through :func:`runner.intake.files.extract_tar` (regular files and directories only, every name confined
  below the scratch directory, nothing followed).

Everything that comes back over the relay's stream is hostile too: any process of the container's uid can write
frames into the relay's stdout (``/proc/<relay>/fd/1``). The :class:`Bridge` takes a channel's name only from a fixed
set (``mcp``, ``model``: each mapped to its socket in the turn dir, never a path joined from what the frame says;
anything else is answered CLOSE and logged), refuses a frame longer than :data:`MAX_FRAME` (the stream is then not
the relay's: the bridge closes), skips unknown kinds, ignores a second OPEN of a live channel and holds at most
:data:`MAX_CHANNELS` connections at once.
"""

from __future__ import annotations

import contextlib
import io
import logging
import socket
import stat
import struct
import tarfile
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
from docker.models.containers import Container
from docker.types import Mount

from runner.engine import call_with_retry
from runner.intake.files import DEFAULT_BOUNDS, BoundedStream, IntakeBounds, Tree, extract_tar, read_bounded, walk
from runner.sandbox.container import (
    TURN_MOUNT,
    ContainerStartError,
    SandboxedProcess,
    create_kwargs,
    demultiplexed,
)
from runner.sandbox.interface import ContainerSpec, DiskLook, Transport
from runner.sandbox.ownership import ContainerUser

HEADER = struct.Struct(">BII")
OPEN, DATA, EOF, CLOSE = 1, 2, 3, 4
RELAY_DIR = "/tmp/.runner-relay"
RELAY_FILES = Path(__file__).parent / "relay"
SOCKETS = ("mcp", "model")
MAX_FRAME = 1024 * 1024  # a relay's DATA frame carries one recv() of at most 64 KiB: anything near this is forged
MAX_CHANNELS = 64  # connections open at once over one relay (a CLI opens one or two: MCP, the model)
ARCHIVE_OVERHEAD = 4096  # tar bytes per member besides its content, at most (header, padding, long-name records)
TURN_FILES = IntakeBounds(bytes=64 * 1024 * 1024, entries=1000)  # what runner puts in a turn dir (config files, script)
WAIT = (
    f"i=0; until [ -e {RELAY_DIR}/ready ]; do i=$((i+1)); "
    '[ "$i" -le 400 ] || { echo "runner: the stream relay never came up" >&2; exit 125; }; sleep 0.05; done; '
    'exec "$@"'
)
RELAY_COMMAND = (
    f"if command -v node >/dev/null 2>&1; then exec node {TURN_MOUNT}/.relay/relay.js \"$@\"; "
    f"elif command -v python3 >/dev/null 2>&1; then exec python3 {TURN_MOUNT}/.relay/relay.py \"$@\"; "
    'else echo "runner: no node or python3 in the image for the stream relay" >&2; exit 127; fi'
)
logger = logging.getLogger("runner.engine")


class StreamSandboxedProcess(SandboxedProcess):
    """The hardened container, its turn's files and sockets carried over the engine API (the ``stream`` transport)."""

    def __init__(self, client: docker.DockerClient, spec: ContainerSpec) -> None:
        super().__init__(client, spec)
        self.bridge: Bridge | None = None

    @property
    def transport(self) -> Transport:
        return Transport.STREAM

    def _create(self) -> Any:
        kwargs = create_kwargs(self.spec)
        kwargs["mounts"] = [Mount(TURN_MOUNT, None, type="volume")]  # anonymous: removed with the container
        kwargs["command"] = ["sh", "-c", WAIT, "runner-wait", *self.spec.argv]
        container = call_with_retry(self.client.containers.create, **kwargs)
        self.container = container  # so that a failure below still removes it
        call_with_retry(container.put_archive, TURN_MOUNT, turn_archive(self.spec.turn_dir, self.spec.user))
        return container

    def start(self) -> None:
        super().start()  # create and fill, attach, start, hand over stdin (the CLI waits for the relay)
        try:
            self.bridge = Bridge.start(self.client, self.container, self.spec.turn_dir, self.spec.user)
        except Exception as err:
            raise ContainerStartError(f"the stream relay could not be started: {err}") from err

    @contextlib.contextmanager
    def read_tree(self, relative: str, bounds: IntakeBounds = DEFAULT_BOUNDS) -> Iterator[Tree | None]:
        """Copy ``relative`` out of the container's volume into a scratch directory, removed after the ``with``."""
        with tempfile.TemporaryDirectory(prefix="runner-collect-") as scratch:
            landed = self.fetch(relative, Path(scratch), bounds)
            yield Tree(Path(scratch), landed) if landed is not None else None

    def fetch(self, relative: str, dest_root: Path, bounds: IntakeBounds = DEFAULT_BOUNDS) -> str | None:
        """Copy ``relative`` (a path in the turn dir) out of the container's volume into ``dest_root`` (runner's),
        taking in at most ``bounds``; where it landed (relative to ``dest_root``), or None when the container is not
        there or holds nothing at ``relative``."""
        if self.container is None:
            return None
        try:
            chunks, _stat = self.container.get_archive(f"{TURN_MOUNT}/{relative}")
        except docker.errors.NotFound:
            return None
        stream = BoundedStream(chunks, bounds.bytes + ARCHIVE_OVERHEAD * (bounds.entries + 1))
        try:
            extracted = extract_tar(stream, dest_root, bounds)
        finally:
            with contextlib.suppress(Exception):
                chunks.close()  # an archive cut at its bound is not read to its end
        level = logging.INFO if extracted.complete else logging.WARNING  # a bound cut it short: say so
        for skipped in extracted.skipped[:20]:
            logger.log(level, "the CLI's %s: %r not taken in: %s", relative, skipped.path[:200], skipped.why)
        return Path(relative).name

    def disk_look(self) -> DiskLook | None:
        """The turn dir the CLI writes is the engine's volume, out of sight from here: only the per-file cap
        (``ResourceLimits.file_bytes``) holds there."""
        return None

    def remove(self) -> None:
        if self.bridge is not None:
            self.bridge.close()
        super().remove()


def turn_archive(turn_dir: Path, user: ContainerUser) -> bytes:
    """The turn dir's files (sockets left out), the relay, and the socket symlinks: a tar owned by the container's
    ``user``.

    The turn dir is runner's own (made for this turn, never mounted into a container under this transport), and
    still read as the CLI's files are, from its descriptor, links not followed, bounded: a directory the host
    shares with other users is not a place to follow names in."""
    buf = io.BytesIO()

    def own(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid, info.gid = user.uid, user.gid
        info.uname = info.gname = ""
        return info

    with tarfile.open(fileobj=buf, mode="w") as tar:
        for entry in walk(Tree(turn_dir), TURN_FILES):
            if not entry.path:
                continue
            info = own(tarfile.TarInfo(entry.path))
            info.mode = stat.S_IMODE(entry.stat.st_mode)
            info.mtime = int(entry.stat.st_mtime)
            if entry.is_dir:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif entry.fd is not None:
                data = read_bounded(entry.fd, TURN_FILES.bytes)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
        for name in ("relay.py", "relay.js"):
            tar.add(RELAY_FILES / name, arcname=f".relay/{name}", filter=own)
        for name in SOCKETS:
            link = tarfile.TarInfo(f"{name}.sock")
            link.type = tarfile.SYMTYPE
            link.linkname = f"{RELAY_DIR}/{name}.sock"
            tar.addfile(own(link))
    return buf.getvalue()


class Bridge:
    """The runner's end of the relay: one exec stream, demultiplexed into connections to the host-side sockets.

    The stream is the container's to write (see the module's docstring): a channel connects only to one of the fixed
    sockets, by name, and a frame that no relay sends ends or is dropped, never trusted."""

    def __init__(self, sock: object, turn_dir: Path) -> None:
        """Carry the relay's exec stream ``sock`` (what docker-py's ``exec_start(socket=True)`` hands back, or any
        socket: Docker's multiplexed stdout/stderr one way, frames on stdin the other) to the sockets in
        ``turn_dir``."""
        self.turn_dir = turn_dir
        self.sockets = {name: turn_dir / f"{name}.sock" for name in SOCKETS}  # the only places a channel reaches
        self._sock: Any = sock
        self._raw: Any = getattr(self._sock, "_sock", self._sock)
        self._lock = threading.Lock()
        self._conns: dict[int, socket.socket] = {}
        self._closed = False
        self.refused: list[str] = []  # what the bridge turned down, said once each (also logged)
        self._reader = threading.Thread(target=self._read, name="stream-bridge", daemon=True)
        self._reader.start()

    @classmethod
    def start(cls, client: docker.DockerClient, container: Container, turn_dir: Path, user: ContainerUser) -> Bridge:
        """Run the relay in ``container`` (an exec as the CLI's ``user``) and bridge its stream."""
        exec_id = call_with_retry(
            client.api.exec_create, container.id, ["sh", "-c", RELAY_COMMAND, "relay", RELAY_DIR, *SOCKETS],
            stdin=True, stdout=True, stderr=True, user=str(user),
        )["Id"]
        return cls(client.api.exec_start(exec_id, socket=True), turn_dir)

    def _send(self, kind: int, channel: int, payload: bytes = b"") -> None:
        with self._lock:
            if self._closed:
                return
            try:
                self._raw.sendall(HEADER.pack(kind, channel, len(payload)) + payload)
            except OSError:
                self._closed = True

    def _refuse(self, what: str) -> None:
        if len(self.refused) < 100:
            self.refused.append(what)
            logger.warning("stream relay: %s", what)

    def _read(self) -> None:
        pending = bytearray()
        try:
            for stream, data in demultiplexed(self._sock):
                if stream != 1:
                    self._refuse(f"the relay's stderr: {data[:200].decode('ascii', 'replace')!r}")
                    continue
                pending += data
                while len(pending) >= HEADER.size:
                    kind, channel, length = HEADER.unpack_from(pending)
                    if length > MAX_FRAME:
                        self._refuse(f"a frame of {length} bytes on channel {channel} (at most {MAX_FRAME}): the "
                                     "stream is not the relay's, the bridge closes")
                        self.close()
                        return
                    if len(pending) < HEADER.size + length:
                        break
                    payload = bytes(pending[HEADER.size:HEADER.size + length])
                    del pending[:HEADER.size + length]
                    self._handle(kind, channel, payload)
        except (OSError, ValueError):
            pass
        finally:
            for conn in list(self._conns.values()):
                with contextlib.suppress(OSError):
                    conn.shutdown(socket.SHUT_RDWR)  # wakes its pump, blocked in a read on it
                with contextlib.suppress(OSError):
                    conn.close()

    def _handle(self, kind: int, channel: int, payload: bytes) -> None:
        if kind == OPEN:
            self._open(channel, payload)
            return
        if kind not in (DATA, EOF, CLOSE):
            self._refuse(f"a frame of unknown kind {kind} on channel {channel}: dropped")
            return
        known = self._conns.get(channel)
        if known is None:
            return
        try:
            if kind == DATA:
                known.sendall(payload)
            elif kind == EOF:
                known.shutdown(socket.SHUT_WR)
            elif kind == CLOSE:
                self._conns.pop(channel, None)
                known.close()
        except OSError:
            pass

    def _open(self, channel: int, payload: bytes) -> None:
        """A channel to one of the fixed sockets, chosen by its name; anything else is answered CLOSE."""
        name = payload.decode("ascii", "replace")
        target = self.sockets.get(name)
        if channel in self._conns:  # a CLOSE would end the live connection in the relay: say nothing to it
            self._refuse(f"a second OPEN of live channel {channel} ({name[:64]!r}): ignored")
            return
        if target is None:
            self._refuse(f"an OPEN of channel {channel} for {name[:64]!r}, not one of {', '.join(SOCKETS)}: refused")
            self._send(CLOSE, channel)
            return
        if len(self._conns) >= MAX_CHANNELS:
            self._refuse(f"an OPEN of channel {channel} past {MAX_CHANNELS} open connections: refused")
            self._send(CLOSE, channel)
            return
        conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            conn.connect(str(target))
        except OSError:
            conn.close()
            self._send(CLOSE, channel)
            return
        self._conns[channel] = conn
        threading.Thread(target=self._pump, args=(channel, conn), name=f"stream-{name}", daemon=True).start()

    def _pump(self, channel: int, conn: socket.socket) -> None:
        try:
            while data := conn.recv(65536):
                self._send(DATA, channel, data)
        except OSError:
            pass
        self._send(EOF, channel)

    def close(self) -> None:
        with self._lock:
            self._closed = True
        for closer in (self._sock, self._raw):
            with contextlib.suppress(OSError):
                closer.close()
