"""The host-side model endpoint: one HTTP server that speaks every dialect the vendor CLIs use.

A vendor CLI in a network-less container reaches it through a loopback listener (socat) forwarded
to ``model.sock`` in the per-turn directory. The server is a Starlette app run by uvicorn on a
socket this module binds itself (a unix socket for a turn, TCP for tests and standalone use).

Routing: the request's dialect is found by its path (:func:`runner.model.dialects.dialect_for`),
whatever prefix precedes the dialect's own suffix. ``HEAD``/``GET .../api/hello`` (Claude Code's
preconnect) is answered 200. Every other request is answered by the endpoint's one handler
(:mod:`runner.model.handlers`): in scripted mode anything but a dialect's endpoint is a 404
(:mod:`~runner.model.handlers.scripted`); in live mode only the column's dialect's model calls are forwarded
and everything else is answered here (:mod:`~runner.model.handlers.live`, the allowlist in
:mod:`runner.model.live_policy`); in replay mode every request is answered from the
recording (:mod:`~runner.model.handlers.replay`, the rule in :mod:`runner.model.replay`). Before any of that,
the body is read as it arrives and no further than :data:`~runner.model.exchange_log.MAX_REQUEST_BYTES`, then
inflated and parsed through the intake (:func:`~runner.model.exchange_log.read_body`): a body over a bound,
or nested too deep, is answered by runner itself (413 or 400, in the dialect's error shape, saying why) in
every mode, and logged with the cause. Every
exchange is appended to the exchange log, stamped (``at``, ``t``) when its request arrived on the clock of the
turn's timeline (when one is given: each request then also goes on it as ``model_request``; otherwise on a
clock started with the endpoint). A scripted model can be told to fail on purpose (an
error, a stall, a stream cut short: :mod:`runner.model.faults`).
"""

from __future__ import annotations

import contextlib
import os
import socket
import stat
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.to_thread
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from runner.core.outcomes import JsonValue
from runner.core.timeline import Timeline, TimelineEvent, TurnClock
from runner.model.config import ModelEndpointConfig, ModelMode
from runner.model.dialects import BY_NAME, Dialect, RequestInfo, dialect_for, guess_dialect
from runner.model.exchange_log import (
    MAX_REQUEST_BYTES,
    ExchangeLog,
    RequestBody,
    body_for_log,
    classify_auth,
    read_body,
    redact_headers,
)
from runner.model.handlers.base import (
    JSON_TYPE,
    Exchange,
    Finish,
    ModelEndpointHandle,
    ModelHandler,
    json_response,
)
from runner.model.handlers.live import LiveHandler
from runner.model.handlers.replay import ReplayHandler
from runner.model.handlers.scripted import ScriptedHandler
from runner.model.live import LiveForwarder
from runner.model.names import carries_server_tools
from runner.model.replay import Replayer, is_preconnect

STARTUP_TIMEOUT = 10.0
SHUTDOWN_GRACE = 2  # seconds in-flight answers get when the endpoint stops; then they are cancelled
METHODS = ["GET", "POST", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"]
# what of a body over the bound is read and dropped before runner answers it: enough for a client that sends it
# whole and then reads the answer, not enough for one that sends forever to hold the answer back
DRAIN_BYTES = 256 * 1024 * 1024
DRAIN_SECONDS = 10.0

__all__ = ["ModelEndpointHandle", "handler_for", "serve_model", "serve_model_tcp"]


async def _receive_body(request: Request, limit: int) -> bytes | None:
    """The request's body as received, read as it arrives; None once it is over ``limit`` bytes (or says it will
    be). What follows the bound is read and dropped, up to :data:`DRAIN_BYTES` or :data:`DRAIN_SECONDS`, so the
    client, still sending, gets runner's answer rather than a connection reset."""
    declared = request.headers.get("content-length", "")
    chunks = request.stream()
    if not (declared.isdigit() and int(declared) > limit):
        received = bytearray()
        async for chunk in chunks:
            received += chunk
            if len(received) > limit:
                break
        else:
            return bytes(received)
        del received
    dropped = 0
    with anyio.move_on_after(DRAIN_SECONDS):
        async for chunk in chunks:
            dropped += len(chunk)
            if dropped > DRAIN_BYTES:
                break
    return None


def handler_for(
    config: ModelEndpointConfig, handle: ModelEndpointHandle, log: ExchangeLog, server_name: str,
    forwarder: LiveForwarder | None,
) -> ModelHandler:
    """The endpoint's one answering mode: replay, live (``forwarder``), or scripted."""
    if config.mode is ModelMode.REPLAY:
        return ReplayHandler(Replayer(config.exchanges), handle, log)
    if forwarder is not None:
        if config.dialect is None:  # pragma: no cover - ModelEndpointConfig refuses this
            raise ValueError("live mode without the column's dialect")
        return LiveHandler(forwarder, handle, BY_NAME[config.dialect], forwarder.live.model or config.model)
    return ScriptedHandler(config, handle, server_name)


# --- the service --------------------------------------------------------------------------------


class _Service:
    """Routing: every request is read, counted and logged here, then answered by the handler."""

    def __init__(
        self, config: ModelEndpointConfig, handle: ModelEndpointHandle, log: ExchangeLog, handler: ModelHandler,
        timeline: Timeline | None = None, server_name: str = "sharedos",
    ) -> None:
        self.config = config
        self.handle = handle
        self.log = log
        self.handler = handler
        self.timeline = timeline
        self.server_name = server_name

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self.dispatch, methods=METHODS)])

    async def dispatch(self, request: Request) -> Response:
        started = time.monotonic()
        received = await _receive_body(request, MAX_REQUEST_BYTES)
        method, path, query = request.method, request.url.path, request.url.query
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        if received is None:
            read = RequestBody.over(MAX_REQUEST_BYTES)
        else:
            read = await anyio.to_thread.run_sync(read_body, received, request.headers.get("content-encoding", ""))
        raw, decoded, body = read.raw, read.decoded, read.json
        dialect = dialect_for(method, path)
        self.handle.requests += 1
        self.handle.by_dialect[dialect.name if dialect else "other"] += 1
        if self.timeline is not None:
            arrived = self.timeline.record(TimelineEvent.MODEL_REQUEST, n=self.handle.requests)
        else:
            arrived = self.log.clock.now()
        record: dict[str, JsonValue] = {
            **arrived.to_json(),
            "mode": self.config.mode.value,
            "request_seq": self.handle.requests,
            "dialect": dialect.name if dialect else None,
            "request": {
                "method": method, "path": path, "query": query, "headers": {**redact_headers(headers)},
                "client_auth": classify_auth(headers, self.config.placeholder_key),
                # a refused body is not read again for the log: its cause is what there is to know
                "body": {"refused": read.refused} if read.refused is not None else body_for_log(
                    raw if decoded is None else decoded, parsed=body),
            },
        }
        if dialect is None and body is not None:
            guessed = guess_dialect(body)
            record["shape"] = guessed.name if guessed else None
        elif dialect is not None and isinstance(body, dict) and method == "POST" and not dialect.looks_like(body):
            record["shape"] = "unexpected for this path"
        side: bool | None = None
        if dialect is not None and isinstance(body, dict):
            step = dialect.count_tool_results(body)
            record["step"] = step
            self.handle.last_step = step
            if dialect.generates(RequestInfo(method, path)):
                # a side request (a title, a summary, a sub-agent without our tools) or the conversation
                side = not carries_server_tools(dialect.exposed_tools(body), self.server_name, self.config.naming)
                record["side_request"] = side
                self.handle.generation_requests += 1
                self.handle.tool_requests += 0 if side else 1

        def finish(response: dict[str, JsonValue], ended: str) -> None:
            self.log.write({**record, "response": response, "ended": ended,
                            "duration_s": round(time.monotonic() - started, 4)})

        if read.refused is not None:
            return self.refuse(read, dialect, record, finish)
        if is_preconnect(method, path):
            finish({"status": 200}, "complete")
            return Response(status_code=200)
        return await self.handler.answer(Exchange(request, raw, headers, body, dialect, record, finish, side))

    @staticmethod
    def refuse(read: RequestBody, dialect: Dialect | None, record: dict[str, JsonValue], finish: Finish) -> Response:
        """A body the intake would not read, answered by runner (the connection closed: a body cut short cannot be
        followed by another request on it) and logged with its cause."""
        message = f"runner: {read.refused}"
        error: JsonValue = dialect.error_body(read.status, message) if dialect else {"error": {"message": message}}
        record["refused"] = read.refused
        finish({"status": read.status, **JSON_TYPE, "body": error}, "complete")
        return json_response(read.status, error, headers={"connection": "close"})


# --- running it ---------------------------------------------------------------------------------


class _Server(uvicorn.Server):
    """uvicorn, minus its signal handlers (the runner owns SIGINT/SIGTERM, not the model endpoint), and stopped as
    soon as it is told to: uvicorn notices ``should_exit`` only at its main loop's next tick, then sleeps and polls
    its connections on a timer, which costs every turn's end a wait although the CLI, gone by then, holds no
    connection (what it cost: docs/measurements.md, "The model endpoint's shutdown"). Here :meth:`stop` wakes the
    main loop at once and the shutdown polls every 5 ms; an answer still in flight gets the same grace period
    (``timeout_graceful_shutdown``) as before."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self._stop = anyio.Event()

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield

    def stop(self) -> None:
        self.should_exit = True
        self._stop.set()

    async def main_loop(self) -> None:
        counter = 0
        should_exit = await self.on_tick(counter)
        while not should_exit:
            counter = (counter + 1) % 864000
            with anyio.move_on_after(0.1):  # the tick still keeps the Date header current
                await self._stop.wait()
            should_exit = await self.on_tick(counter)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        state = self.server_state
        for connection in list(state.connections):
            connection.shutdown()  # idle: closed now; answering: closed once its answer is sent
        with anyio.move_on_after(self.config.timeout_graceful_shutdown) as grace:  # None: no limit, as uvicorn
            while (state.connections or state.tasks) and not self.force_exit:
                await anyio.sleep(0.005)
        if grace.cancelled_caught:
            for task in state.tasks:
                task.cancel(msg="Task cancelled, timeout graceful shutdown exceeded")
        for server in self.servers:
            await server.wait_closed()
        if not self.force_exit:
            await self.lifespan.shutdown()


def _unix_socket(path: Path) -> socket.socket:
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISSOCK(path.lstat().st_mode):
            path.unlink()  # a stale socket from an earlier run in the same directory
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        os.chmod(path, 0o600)  # this uid's alone; a client of another uid is handed a socket made for it
    except BaseException:
        sock.close()
        raise
    return sock


def _tcp_socket(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


@asynccontextmanager
async def _serve(
    sock: socket.socket, endpoint: ModelEndpointConfig, log_path: Path, server_name: str,
    handle: ModelEndpointHandle, timeline: Timeline | None,
) -> AsyncIterator[ModelEndpointHandle]:
    forwarder: LiveForwarder | None = None
    if endpoint.mode is ModelMode.LIVE:
        if endpoint.live is None:  # pragma: no cover - ModelEndpointConfig refuses this
            raise ValueError("live mode without live settings")
        forwarder = LiveForwarder(endpoint.live, endpoint.environ)  # reads the credential now
    clock = timeline.clock if timeline is not None else TurnClock(time.monotonic, time.time)
    log = ExchangeLog(log_path, endpoint.scrubber, forwarder.secrets if forwarder else None, clock=clock)
    service = _Service(endpoint, handle, log, handler_for(endpoint, handle, log, server_name, forwarder), timeline,
                       server_name)
    config = uvicorn.Config(
        service.app(), http="h11", lifespan="off", log_config=None, log_level="warning", access_log=False,
        server_header=False,
        timeout_graceful_shutdown=SHUTDOWN_GRACE, timeout_keep_alive=30,
    )
    server = _Server(config)
    try:
        async with anyio.create_task_group() as tg:
            failure: list[BaseException] = []

            async def run() -> None:
                try:
                    await server.serve(sockets=[sock])
                except Exception as err:  # surfaced below as a startup failure
                    failure.append(err)

            tg.start_soon(run)
            with anyio.move_on_after(STARTUP_TIMEOUT):
                while not server.started and not failure and not server.should_exit:
                    await anyio.sleep(0.01)
            if not server.started:
                server.should_exit = True
                raise RuntimeError(f"the model endpoint did not start: {failure[0] if failure else 'timed out'}")
            try:
                yield handle
            finally:
                handle.stopping.set()
                server.stop()
    finally:
        with anyio.CancelScope(shield=True):
            if forwarder is not None:
                await forwarder.aclose()
            log.close()
            sock.close()


@asynccontextmanager
async def serve_model(
    socket_path: Path, endpoint: ModelEndpointConfig, log_path: Path, *, server_name: str = "sharedos",
    timeline: Timeline | None = None,
    sock: socket.socket | None = None,
) -> AsyncIterator[ModelEndpointHandle]:
    """Serve the model endpoint on the unix socket ``socket_path`` until the block exits; each request goes on
    ``timeline`` when one is given, and the exchange log is stamped on its clock.

    Yields a :class:`ModelEndpointHandle` (counters). On exit, held-back (``hang``) answers are
    released, in-flight streams get :data:`SHUTDOWN_GRACE` seconds, and the socket is removed. ``sock``: that
    path's socket, already bound (and perhaps listening), taken over here."""
    sock = sock if sock is not None else _unix_socket(socket_path)
    handle = ModelEndpointHandle(endpoint.mode, "http://model.sock", socket_path=socket_path, log_path=log_path)
    try:
        async with _serve(sock, endpoint, log_path, server_name, handle, timeline):
            yield handle
    finally:
        socket_path.unlink(missing_ok=True)


@asynccontextmanager
async def serve_model_tcp(
    endpoint: ModelEndpointConfig, log_path: Path, *, host: str = "127.0.0.1", port: int = 0,
    server_name: str = "sharedos", timeline: Timeline | None = None,
) -> AsyncIterator[ModelEndpointHandle]:
    """The same endpoint on TCP (``port=0``: any free port); ``handle.url`` is its base URL."""
    sock = _tcp_socket(host, port)
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    handle = ModelEndpointHandle(endpoint.mode, f"http://{shown}:{bound[1]}", log_path=log_path)
    async with _serve(sock, endpoint, log_path, server_name, handle, timeline):
        yield handle
