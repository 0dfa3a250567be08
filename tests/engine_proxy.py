"""A fault-injecting proxy in front of the real Docker Engine socket, for the daemon-fault tests.

The engine behind it is the real one; the proxy only decides, request by request, whether to pass a
request through or to fail it the way a sick daemon does:

- ``refuse``: answer ``500`` with a JSON message, as dockerd does for an internal error;
- ``drop``: close the connection without forwarding the request (the engine never sees it);
- ``lose``: forward the request, then close the connection before the answer comes back (the engine
  did the work, the client cannot know).

Every forwarded request gets ``Connection: close``, so each request has its own connection and is
inspected on its own (docker-py would otherwise reuse a kept-alive connection). Upgraded requests
(attach) are passed through untouched.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

FaultKind = Literal["refuse", "drop", "lose"]
_VERSION_PREFIX = re.compile(r"^/v\d+(\.\d+)?")
_LOSE_AFTER = 0.3  # seconds the engine gets to act on a request whose answer is then lost


@dataclass
class Fault:
    """Fail ``times`` requests (None: all) whose method is ``method`` and path matches ``path``."""

    method: str
    path: str  # a regular expression, matched in full against the path without /v1.xx and query
    kind: FaultKind
    times: int | None = 1
    served: int = 0

    def matches(self, method: str, path: str) -> bool:
        if method != self.method or not re.fullmatch(self.path, path):
            return False
        return self.times is None or self.served < self.times


class EngineProxy:
    """Listen on ``socket_path`` and relay to ``upstream``, failing requests as ``faults`` say."""

    def __init__(self, socket_path: Path, faults: list[Fault], upstream: str = "/var/run/docker.sock") -> None:
        self.socket_path = socket_path
        self.faults = faults
        self.upstream = upstream
        self.seen: list[str] = []  # "POST /containers/create", in arrival order
        self.created_labels: list[dict[str, str]] = []  # the labels of every create asked for

    @property
    def docker_host(self) -> str:
        return f"unix://{self.socket_path}"

    def count(self, method: str, path: str) -> int:
        return sum(1 for line in self.seen if re.fullmatch(f"{method} {path}", line))

    async def _handle(self, client_r: asyncio.StreamReader, client_w: asyncio.StreamWriter) -> None:
        try:
            head = await client_r.readuntil(b"\r\n\r\n")
        except (asyncio.IncompleteReadError, asyncio.LimitOverrunError, ConnectionError):
            client_w.close()
            return
        method, target = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ")[:2]
        path = _VERSION_PREFIX.sub("", urlsplit(target).path)
        self.seen.append(f"{method} {path}")
        length = re.search(rb"\r\ncontent-length:\s*(\d+)", head.lower())
        body = await client_r.readexactly(int(length.group(1))) if length else b""
        if method == "POST" and path == "/containers/create":
            self.created_labels.append(json.loads(body).get("Labels") or {})
        fault = next((f for f in self.faults if f.matches(method, path)), None)
        if fault is not None:
            fault.served += 1
        if fault is not None and fault.kind == "refuse":
            body = json.dumps({"message": f"injected fault: {method} {path} refused"}).encode()
            client_w.write(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                           b"Content-Length: %d\r\nConnection: close\r\n\r\n%s" % (len(body), body))
            await _close(client_w)
            return
        if fault is not None and fault.kind == "drop":
            await _close(client_w)
            return
        up_r, up_w = await asyncio.open_unix_connection(self.upstream)
        up_w.write((head if b"\r\nupgrade:" in head.lower() else _connection_close(head)) + body)
        to_engine = asyncio.ensure_future(_pipe(client_r, up_w))
        if fault is not None:  # lose: the engine acts, the answer never arrives
            await asyncio.sleep(_LOSE_AFTER)
            to_engine.cancel()
            await _close(client_w)
            await _close(up_w)
            return
        await _pipe(up_r, client_w)
        to_engine.cancel()
        await _close(up_w)
        await _close(client_w)

    @contextmanager
    def running(self) -> Iterator[EngineProxy]:
        """Serve in a background thread for the length of the block."""
        loop = asyncio.new_event_loop()
        ready = threading.Event()
        server: list[asyncio.AbstractServer] = []

        async def start() -> None:
            server.append(await asyncio.start_unix_server(self._handle, path=str(self.socket_path)))
            ready.set()

        def serve() -> None:
            asyncio.set_event_loop(loop)
            loop.run_until_complete(start())
            loop.run_forever()

        thread = threading.Thread(target=serve, name="engine-proxy", daemon=True)
        thread.start()
        if not ready.wait(10):
            raise RuntimeError("the engine proxy did not start")
        try:
            yield self
        finally:
            loop.call_soon_threadsafe(server[0].close)
            loop.call_soon_threadsafe(loop.stop)
            thread.join(10)
            self.socket_path.unlink(missing_ok=True)


def _connection_close(head: bytes) -> bytes:
    lines = [line for line in head[:-4].split(b"\r\n") if not line.lower().startswith(b"connection:")]
    return b"\r\n".join([*lines, b"Connection: close"]) + b"\r\n\r\n"


async def _pipe(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
    try:
        while chunk := await source.read(65536):
            sink.write(chunk)
            await sink.drain()
        if sink.can_write_eof():
            sink.write_eof()  # a half-close (stdin closed on an attach) travels on
    except OSError:
        pass


async def _close(writer: asyncio.StreamWriter) -> None:
    writer.close()
    with suppress(OSError):
        await writer.wait_closed()
