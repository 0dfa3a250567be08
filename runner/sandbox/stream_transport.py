"""The stream transport: a turn over the engine API alone, for engines that cannot see runner's files.

Under Docker-out-of-Docker, a remote ``DOCKER_HOST`` or Docker Desktop, a bind mount of the per-turn
directory reaches the container empty (:mod:`runner.sandbox.probe` detects it). This transport mounts
no host path at all; the container keeps network ``none``:

- **Files in**: ``/run/runner`` is an anonymous volume (removed with the container). Before start,
  the archive API (``put_archive``) fills it with the turn directory's files (``script.json``, HOME
  with the rendered config files, owned by uid 1000), the relay, and two symlinks, ``mcp.sock`` and
  ``model.sock``, pointing at the relay's sockets in ``/tmp/.runner-relay/`` (the volume's root is
  the engine's, not writable by uid 1000; connect() follows symlinks, so the CLIs' paths are unchanged).
- **Connections**: after start, an exec runs the relay (:mod:`runner/sandbox/relay`, node or python3,
  whichever the image has) as uid 1000. It listens on those sockets and carries every connection
  over the exec's hijacked stream, multiplexed in frames (see relay.py). Here each channel it opens
  becomes a connection to the host-side socket in the turn directory, where the MCP server and the
  model endpoint listen exactly as under the mount transport: their counts, the latch and the
  scrubbing do not know which transport ran. The CLI's command waits (at most 20 s) for the relay.
- **Files out**: ``get_archive`` copies what the CLI left (its session transcript) out of the volume
  after exit, into a scratch directory on the host for as long as the caller reads it (:meth:`read_tree`).
"""

from __future__ import annotations

import contextlib
import io
import logging
import socket
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

from runner.sandbox.container import (
    TURN_MOUNT,
    USER,
    ContainerStartError,
    SandboxedProcess,
    create_kwargs,
    demultiplexed,
)
from runner.sandbox.engine import call_with_retry
from runner.sandbox.interface import ContainerSpec, Transport

HEADER = struct.Struct(">BII")
OPEN, DATA, EOF, CLOSE = 1, 2, 3, 4
RELAY_DIR = "/tmp/.runner-relay"
RELAY_FILES = Path(__file__).parent / "relay"
SOCKETS = ("mcp", "model")
UID = 1000
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
        call_with_retry(container.put_archive, TURN_MOUNT, turn_archive(self.spec.turn_dir))
        return container

    def start(self) -> None:
        super().start()  # create and fill, attach, start, hand over stdin (the CLI waits for the relay)
        try:
            self.bridge = Bridge(self.client, self.container, self.spec.turn_dir)
        except Exception as err:
            raise ContainerStartError(f"the stream relay could not be started: {err}") from err

    @contextlib.contextmanager
    def read_tree(self, relative: str) -> Iterator[Path | None]:
        """Copy ``relative`` out of the container's volume into a scratch directory, removed after the ``with``."""
        with tempfile.TemporaryDirectory(prefix="runner-collect-") as scratch:
            yield self.fetch(relative, Path(scratch))

    def fetch(self, relative: str, dest_root: Path) -> Path | None:
        """Copy ``relative`` (a path in the turn dir) out of the container's volume into ``dest_root``; where it
        landed, or None when the container is not there or holds nothing at ``relative``."""
        if self.container is None:
            return None
        try:
            chunks, _stat = self.container.get_archive(f"{TURN_MOUNT}/{relative}")
        except docker.errors.NotFound:
            return None
        data = b"".join(chunks)
        with tarfile.open(fileobj=io.BytesIO(data)) as tar:
            # only files and directories, and none that leaves dest_root (what tarfile's "data" filter does,
            # which Python 3.11 before 3.11.4 does not have)
            members = [m for m in tar.getmembers() if (m.isfile() or m.isdir()) and _inside(m.name)]
            for member in members:
                member.mode = (member.mode & 0o755) | (0o700 if member.isdir() else 0o600)
            tar.extractall(dest_root, members=members)
        return dest_root / Path(relative).name

    def remove(self) -> None:
        if self.bridge is not None:
            self.bridge.close()
        super().remove()


def _inside(name: str) -> bool:
    parts = Path(name).parts
    return not Path(name).is_absolute() and ".." not in parts


def turn_archive(turn_dir: Path) -> bytes:
    """The turn dir's files (sockets left out), the relay, and the socket symlinks: a tar owned by uid 1000."""
    buf = io.BytesIO()

    def own(info: tarfile.TarInfo) -> tarfile.TarInfo:
        info.uid = info.gid = UID
        info.uname = info.gname = ""
        return info

    with tarfile.open(fileobj=buf, mode="w") as tar:
        for path in sorted(turn_dir.rglob("*")):
            if path.is_socket() or not (path.is_file() or path.is_dir()):
                continue
            tar.add(path, arcname=str(path.relative_to(turn_dir)), recursive=False, filter=own)
        for name in ("relay.py", "relay.js"):
            tar.add(RELAY_FILES / name, arcname=f".relay/{name}", filter=own)
        for name in SOCKETS:
            link = tarfile.TarInfo(f"{name}.sock")
            link.type = tarfile.SYMTYPE
            link.linkname = f"{RELAY_DIR}/{name}.sock"
            tar.addfile(own(link))
    return buf.getvalue()


class Bridge:
    """The runner's end of the relay: one exec stream, demultiplexed into connections to the host-side sockets."""

    def __init__(self, client: docker.DockerClient, container: Container, turn_dir: Path) -> None:
        self.turn_dir = turn_dir
        exec_id = call_with_retry(
            client.api.exec_create, container.id, ["sh", "-c", RELAY_COMMAND, "relay", RELAY_DIR, *SOCKETS],
            stdin=True, stdout=True, stderr=True, user=USER,
        )["Id"]
        self._sock = client.api.exec_start(exec_id, socket=True)
        self._raw: Any = getattr(self._sock, "_sock", self._sock)
        self._lock = threading.Lock()
        self._conns: dict[int, socket.socket] = {}
        self._closed = False
        self._reader = threading.Thread(target=self._read, name="stream-bridge", daemon=True)
        self._reader.start()

    def _send(self, kind: int, channel: int, payload: bytes = b"") -> None:
        with self._lock:
            if self._closed:
                return
            try:
                self._raw.sendall(HEADER.pack(kind, channel, len(payload)) + payload)
            except OSError:
                self._closed = True

    def _read(self) -> None:
        pending = b""
        try:
            for stream, data in demultiplexed(self._sock):
                if stream != 1:
                    logger.warning("stream relay: %s", data.decode("utf-8", "replace").rstrip())
                    continue
                pending += data
                while len(pending) >= HEADER.size:
                    kind, channel, length = HEADER.unpack_from(pending)
                    if len(pending) < HEADER.size + length:
                        break
                    payload = pending[HEADER.size:HEADER.size + length]
                    pending = pending[HEADER.size + length:]
                    self._handle(kind, channel, payload)
        except (OSError, ValueError):
            pass
        for conn in list(self._conns.values()):
            with contextlib.suppress(OSError):
                conn.close()

    def _handle(self, kind: int, channel: int, payload: bytes) -> None:
        if kind == OPEN:
            name = payload.decode("ascii", "replace")
            conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                conn.connect(str(self.turn_dir / f"{name}.sock"))
            except OSError:
                conn.close()
                self._send(CLOSE, channel)
                return
            self._conns[channel] = conn
            threading.Thread(target=self._pump, args=(channel, conn), name=f"stream-{name}", daemon=True).start()
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
