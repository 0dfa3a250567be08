"""The host-side model endpoint: one HTTP server that speaks every dialect the vendor CLIs use.

A vendor CLI in a network-less container reaches it through a loopback listener (socat) forwarded
to ``model.sock`` in the per-turn directory. The server is a Starlette app run by uvicorn on a
socket this module binds itself (a unix socket for a turn, TCP for tests and standalone use).

Routing: the request's dialect is found by its path (:func:`runner.model.dialects.dialect_for`),
whatever prefix precedes the dialect's own suffix. ``HEAD``/``GET .../api/hello`` (Claude Code's
preconnect) is answered 200. In scripted mode anything else is a 404; in live mode every request is
forwarded (the dialect only labels it); in replay mode every request is answered from the recording
(:mod:`runner.model.replay`). Every exchange is appended to the exchange log. A scripted model
can be told to fail on purpose (an error, a stall, a stream cut short: :mod:`runner.model.faults`).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import socket
import stat
import time
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx2
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from runner.model.config import ModelEndpointConfig, ModelMode
from runner.model.dialects import Dialect, RenderContext, RequestInfo, dialect_for, guess_dialect
from runner.model.dialects.base import Rendered, estimate_tokens
from runner.model.exchange_log import (
    Capture,
    ExchangeLog,
    body_for_log,
    classify_auth,
    decode_body,
    redact_headers,
)
from runner.model.faults import ERROR_STATUS, FaultKind, FaultTrigger, ModelFault
from runner.model.live import LiveForwarder, forward_response_headers
from runner.model.replay import Divergence, Replayer, answer_for, is_preconnect
from runner.model.script import Decision, StallReply, plan_for
from runner.model.sse import SSE_HEADERS

logger = logging.getLogger(__name__)

STARTUP_TIMEOUT = 10.0
SHUTDOWN_GRACE = 2  # seconds in-flight answers get when the endpoint stops; then they are cancelled
METHODS = ["GET", "POST", "HEAD", "PUT", "PATCH", "DELETE", "OPTIONS"]
DIVERGENCE_STATUS = 409


@dataclass
class ModelEndpointHandle:
    """What the turn sees of a running endpoint: where it listens and what it has served."""

    mode: ModelMode
    url: str
    socket_path: Path | None = None
    log_path: Path | None = None
    requests: int = 0
    by_dialect: Counter[str] = field(default_factory=Counter)
    side_requests: int = 0
    stalls: int = 0
    skipped_calls: int = 0  # calls the latest non-side request's plan skipped
    upstream_errors: int = 0
    last_step: int | None = None
    replayed: int = 0  # replay: recorded exchanges served
    divergence: dict[str, Any] | None = None  # replay: {"step", "path", "what", "field"?} of the first divergence
    faults: int = 0  # scripted: requests answered with the injected fault
    stopping: anyio.Event = field(default_factory=anyio.Event, repr=False)


# --- the responses ------------------------------------------------------------------------------


class _ObservedStream(StreamingResponse):
    """A streaming answer that always closes its source and reports how it ended, exactly once.

    ``ended`` is ``complete`` when the source was exhausted and sent, ``client_disconnected`` when the
    client went away first, ``server_stopped`` when the endpoint's shutdown cancelled it,
    ``upstream_error`` when a live upstream broke off mid-answer, ``error`` otherwise."""

    def __init__(
        self,
        source: AsyncIterator[bytes],
        on_done: Callable[[str], None],
        *,
        status_code: int,
        headers: list[tuple[str, str]] | dict[str, str],
        media_type: str | None = None,
        close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self._source = source
        self._finished = False
        self._on_done = on_done
        self._close = close
        super().__init__(self._iterate(), status_code=status_code, media_type=media_type)
        # raw header pairs: repeated upstream headers (set-cookie, ...) survive as sent
        pairs = list(headers.items()) if isinstance(headers, dict) else list(headers)
        names = {n.lower() for n, _ in pairs}
        kept = [(k, v) for k, v in self.raw_headers if k.decode().lower() not in names]
        self.raw_headers = [*kept, *((n.lower().encode("latin-1"), v.encode("latin-1")) for n, v in pairs)]

    async def _iterate(self) -> AsyncIterator[bytes]:
        async for chunk in self._source:
            yield chunk
        self._finished = True

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        ended = "client_disconnected"
        try:
            await super().__call__(scope, receive, send)
        except anyio.get_cancelled_exc_class():
            ended = "server_stopped"
            raise
        except httpx2.HTTPError:
            ended = "upstream_error"
            raise
        except BaseException:
            ended = "error"
            raise
        finally:
            with anyio.CancelScope(shield=True):
                for iterator in (self.body_iterator, self._source):
                    with contextlib.suppress(Exception):
                        await iterator.aclose()  # type: ignore[attr-defined]
                if self._close is not None:
                    with contextlib.suppress(Exception):
                        await self._close()
                try:
                    self._on_done("complete" if self._finished else ended)
                except Exception:
                    logger.exception("could not log a model exchange")


def _parse_json(raw: bytes | None) -> Any:
    """The request's JSON (``raw`` already decoded), or None."""
    try:
        return json.loads(raw) if raw else None
    except ValueError:
        return None


def _json_response(status: int, body: Any, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse(body, status_code=status, headers=headers)


JSON_TYPE = {"content_type": "application/json"}


class ReplayedBreak(Exception):
    """Raised inside a replayed stream to break it off where the recorded one broke off."""


class InjectedClose(Exception):
    """Raised inside a stream to drop the connection mid-answer (the ``early-close`` fault)."""


def _is_injected(error: BaseException | None) -> bool:
    if isinstance(error, InjectedClose):
        return True
    if isinstance(error, BaseExceptionGroup):  # raised through the response's task group
        return all(_is_injected(e) for e in error.exceptions)
    return False


class _QuietInjectedClose(logging.Filter):
    """uvicorn logs every exception escaping a started response with its traceback; an injected close
    is the fault working as asked, not a crash, so its traceback is kept off the runner's stderr."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and _is_injected(record.exc_info[1]))


_QUIET = _QuietInjectedClose()


# --- the service --------------------------------------------------------------------------------


class _Service:
    def __init__(
        self, config: ModelEndpointConfig, handle: ModelEndpointHandle, log: ExchangeLog, server_name: str,
        forwarder: LiveForwarder | None,
    ) -> None:
        self.config = config
        self.handle = handle
        self.log = log
        self.server_name = server_name
        self.forwarder = forwarder
        self.replayer = Replayer(config.exchanges) if config.kind is ModelMode.REPLAY else None
        fault = config.injected_fault
        self.trigger = FaultTrigger(fault) if fault is not None else None

    def app(self) -> Starlette:
        return Starlette(routes=[Route("/{path:path}", self.dispatch, methods=METHODS)])

    async def dispatch(self, request: Request) -> Response:
        started = time.monotonic()
        raw = await request.body()
        method, path, query = request.method, request.url.path, request.url.query
        headers = [(k.decode("latin-1"), v.decode("latin-1")) for k, v in request.headers.raw]
        decoded = decode_body(raw, request.headers.get("content-encoding", ""))
        body = _parse_json(decoded)
        dialect = dialect_for(method, path)
        self.handle.requests += 1
        self.handle.by_dialect[dialect.name if dialect else "other"] += 1
        record: dict[str, Any] = {
            "mode": self.config.kind.value,
            "request_seq": self.handle.requests,
            "dialect": dialect.name if dialect else None,
            "request": {
                "method": method, "path": path, "query": query, "headers": redact_headers(headers),
                "client_auth": classify_auth(headers, self.config.placeholder_key),
                "body": body_for_log(raw if decoded is None else decoded),
            },
        }
        if dialect is None and body is not None:
            guessed = guess_dialect(body)
            record["shape"] = guessed.name if guessed else None
        elif dialect is not None and isinstance(body, dict) and method == "POST" and not dialect.looks_like(body):
            record["shape"] = "unexpected for this path"
        if dialect is not None and isinstance(body, dict):
            step = dialect.count_tool_results(body)
            record["step"] = step
            self.handle.last_step = step

        def finish(response: dict[str, Any], ended: str) -> None:
            self.log.write({**record, "response": response, "ended": ended,
                            "duration_s": round(time.monotonic() - started, 4)})

        if is_preconnect(method, path):
            finish({"status": 200}, "complete")
            return Response(status_code=200)
        if self.replayer is not None:
            return await self.replay(request, dialect, record, finish)
        if self.forwarder is not None:
            return await self.forward(request, raw, headers, dialect, record, finish)
        return await self.scripted(request, body, dialect, record, finish)

    # --- scripted -----------------------------------------------------------------------------

    async def scripted(
        self, request: Request, body: Any, dialect: Dialect | None, record: dict[str, Any],
        finish: Callable[[dict[str, Any], str], None],
    ) -> Response:
        method, path = request.method, request.url.path
        if dialect is None:
            message = f"runner scripted model: no endpoint for {method} {path}"
            error = {"error": {"message": message, "type": "not_found"}}
            finish({"status": 404, **JSON_TYPE, "body": error}, "complete")
            return _json_response(404, error)
        info = RequestInfo(method, path, dict(request.query_params))
        model = dialect.model_name(info, body, self.config.model)
        aux = dialect.auxiliary(info, body, model)
        if aux is not None:
            return self.send(aux, finish)
        if not isinstance(body, dict):
            message = "runner scripted model: the request body must be a JSON object"
            return self.send(Rendered(status=400, body=dialect.error_body(400, message)), finish)
        step = dialect.count_tool_results(body)
        plan = plan_for(self.config.actions, dialect.exposed_tools(body), self.server_name)
        decision = Decision(step, plan.reply(step), plan)
        record["decision"] = decision.to_json()
        if plan.side:
            self.handle.side_requests += 1
        else:
            self.handle.skipped_calls = len(plan.skipped)
        ctx = RenderContext(model=model, step=step, input_tokens=estimate_tokens(body), body=body)
        stream = dialect.wants_stream(info, body)
        entry = self.trigger.check(step, plan) if self.trigger is not None else None
        if entry is not None and self.trigger is not None:
            record["fault"] = entry
            self.handle.faults += 1
            return await self.inject(self.trigger.fault, request, dialect, decision, ctx, stream, info, finish)
        if isinstance(decision.reply, StallReply):
            return await self.stalled(request, dialect, finish, "runner scripted model")
        rendered = dialect.render(decision.reply, ctx, stream=stream, info=info)
        return self.send(rendered, finish)

    async def inject(
        self, fault: ModelFault, request: Request, dialect: Dialect, decision: Decision, ctx: RenderContext,
        stream: bool, info: RequestInfo, finish: Callable[[dict[str, Any], str], None],
    ) -> Response:
        """Answer with the fault instead of the scripted reply (see :mod:`runner.model.faults`)."""
        who = f"runner scripted model, injected fault {fault.spec}"
        if fault.kind is FaultKind.STALL:
            return await self.stalled(request, dialect, finish, who)
        if fault.kind is FaultKind.ERROR:
            body = dialect.error_body(ERROR_STATUS, f"{who}: the model API failed this request")
            finish({"status": ERROR_STATUS, **JSON_TYPE, "body": body}, "complete")
            return _json_response(ERROR_STATUS, body)
        reply = decision.reply
        if isinstance(reply, StallReply):  # a held-back answer has nothing to cut short
            return await self.stalled(request, dialect, finish, who)
        return self.cut_short(dialect.render(reply, ctx, stream=stream, info=info), finish)

    def cut_short(self, rendered: Rendered, finish: Callable[[dict[str, Any], str], None]) -> Response:
        """The start of ``rendered`` (the first half of its events, or of its only event's or body's
        bytes), then a dropped connection: no terminal event, no end of the chunked body."""
        if rendered.events is not None:
            pieces = [event.encode() for event in rendered.events]
            headers, media_type = {**SSE_HEADERS, **rendered.headers}, "text/event-stream"
        else:
            pieces = [json.dumps(rendered.body, separators=(",", ":"), ensure_ascii=False).encode()]
            headers, media_type = dict(rendered.headers), "application/json"
        sent = pieces[: len(pieces) // 2] if len(pieces) > 1 else [pieces[0][: len(pieces[0]) // 2]]
        capture = Capture(sse=rendered.events is not None)
        cut = (f"{len(sent)} of {len(pieces)} events" if len(pieces) > 1
               else f"{len(sent[0])} of {len(pieces[0])} bytes")

        async def source() -> AsyncIterator[bytes]:
            for piece in sent:
                capture.add(piece)
                yield piece
            raise InjectedClose("the injected early-close fault drops the connection here")

        def done(ended: str) -> None:
            finish({"status": rendered.status, "content_type": media_type, "headers": headers,
                    "stream": rendered.events is not None, **capture.to_json(),
                    "cut_after": cut},
                   "closed_early" if ended in ("error", "complete") else ended)

        return _ObservedStream(source(), done, status_code=rendered.status, headers=headers, media_type=media_type)

    async def stalled(
        self, request: Request, dialect: Dialect | None, finish: Callable[[dict[str, Any], str], None], who: str
    ) -> Response:
        """A held-back answer: nothing until the client goes away (then a 204 nobody reads) or the
        endpoint stops (then a 503)."""
        self.handle.stalls += 1
        ended = await self.stall(request)
        if ended == "server_stopped":
            message = f"{who}: the endpoint stopped while this answer was held back"
            error = dialect.error_body(503, message) if dialect else {"error": {"message": message}}
            finish({"status": 503, "stalled": True}, ended)
            return _json_response(503, error)
        finish({"status": None, "stalled": True}, ended)
        return Response(status_code=204)  # nobody is listening any more

    def send(self, rendered: Rendered, finish: Callable[[dict[str, Any], str], None]) -> Response:
        if rendered.events is None:
            finish({"status": rendered.status, **JSON_TYPE, "body": rendered.body}, "complete")
            return _json_response(rendered.status, rendered.body)
        events = rendered.events
        capture = Capture(sse=True)
        headers = {**SSE_HEADERS, **rendered.headers}

        async def source() -> AsyncIterator[bytes]:
            for event in events:
                data = event.encode()
                capture.add(data)
                yield data

        response: _ObservedStream

        def done(ended: str) -> None:
            finish({"status": rendered.status, "content_type": response.headers.get("content-type"),
                    "headers": headers, "stream": True, **capture.to_json()}, ended)

        response = _ObservedStream(
            source(), done, status_code=rendered.status, headers=headers, media_type="text/event-stream",
        )
        return response

    async def stall(self, request: Request) -> str:
        """Hold the answer until the client goes away or the endpoint stops; say which came first."""
        ended = "server_stopped"
        async with anyio.create_task_group() as tg:

            async def client_gone() -> None:
                nonlocal ended
                while (await request.receive())["type"] != "http.disconnect":
                    pass
                ended = "client_disconnected"
                tg.cancel_scope.cancel()

            async def stopping() -> None:
                await self.handle.stopping.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(client_gone)
            tg.start_soon(stopping)
        return ended

    # --- replay -------------------------------------------------------------------------------

    async def replay(
        self, request: Request, dialect: Dialect | None, record: dict[str, Any],
        finish: Callable[[dict[str, Any], str], None],
    ) -> Response:
        replayer = self.replayer
        assert replayer is not None
        received = self.log.scrub_value({k: record["request"][k] for k in ("method", "path", "query", "body")})
        outcome = replayer.take(received, dialect.name if dialect else None)
        if isinstance(outcome, Divergence):
            divergence = outcome.to_json()
            self.handle.divergence = divergence
            record["divergence"] = divergence
            message = (f"runner replay: request {outcome.step} ({outcome.path}) diverged from the recording, "
                       f"so the replay stopped: {outcome.what}")
            error = dialect.error_body(DIVERGENCE_STATUS, message) if dialect else {
                "error": {"message": message, "type": "replay_divergence"}}
            finish({"status": DIVERGENCE_STATUS, **JSON_TYPE, "body": error}, "complete")
            return _json_response(DIVERGENCE_STATUS, error, {"x-should-retry": "false"})
        record["replay"] = {"exchange": outcome.number, "of": len(replayer.exchanges), "line": outcome.line}
        self.handle.replayed += 1
        if outcome.side:
            self.handle.side_requests += 1
        if outcome.stalled:
            return await self.stalled(request, dialect, finish, "runner replay")
        answer = answer_for(outcome)
        if answer.events is None:
            capture = Capture(sse=False)
            capture.add(answer.body)
            finish({"status": answer.status, "content_type": answer.content_type,
                    **({"headers": dict(answer.headers)} if answer.headers else {}), **capture.to_json()},
                   "complete")
            return Response(content=answer.body, status_code=answer.status, headers=dict(answer.headers),
                            media_type=answer.content_type)
        events, broken = answer.events, answer.broken
        stream_capture = Capture(sse=True)

        async def source() -> AsyncIterator[bytes]:
            for event in events:
                data = event.encode()
                stream_capture.add(data)
                yield data
            if broken:
                raise ReplayedBreak("the recorded upstream broke off this stream here")

        def done(ended: str) -> None:
            finish({"status": answer.status, "content_type": answer.content_type, "headers": dict(answer.headers),
                    "stream": True, **stream_capture.to_json()}, "upstream_error" if broken else ended)

        return _ObservedStream(source(), done, status_code=answer.status, headers=[
            ("content-type", answer.content_type or "text/event-stream"), *answer.headers])

    # --- live ---------------------------------------------------------------------------------

    async def forward(
        self, request: Request, raw: bytes, headers: list[tuple[str, str]], dialect: Dialect | None,
        record: dict[str, Any], finish: Callable[[dict[str, Any], str], None],
    ) -> Response:
        forwarder = self.forwarder
        assert forwarder is not None
        method, path, query = request.method, request.url.path, request.url.query
        record["upstream"] = {
            "url": forwarder.url_for(path, query), "auth": forwarder.live.auth,
            "credential_variable": forwarder.credential_var,
        }
        try:
            upstream = await forwarder.open(method, path, query, headers, raw)
        except httpx2.HTTPError as err:
            self.handle.upstream_errors += 1
            message = f"runner live model: the upstream could not be reached: {type(err).__name__}: {err}"
            error = dialect.error_body(502, message) if dialect else {"error": {"message": message}}
            finish({"status": 502, **JSON_TYPE, "body": error}, "upstream_error")
            return _json_response(502, error)
        content_type = upstream.headers.get("content-type", "")
        capture = Capture(
            sse=content_type.startswith("text/event-stream"), encoding=upstream.headers.get("content-encoding", "")
        )
        response_headers = forward_response_headers(upstream.headers.multi_items())

        async def source() -> AsyncIterator[bytes]:
            async for chunk in upstream.aiter_raw():
                capture.add(chunk)
                yield chunk

        def done(ended: str) -> None:
            finish({"status": upstream.status_code, "content_type": content_type or None,
                    "headers": redact_headers(response_headers), "stream": capture.sse, **capture.to_json()}, ended)

        return _ObservedStream(
            source(), done, status_code=upstream.status_code, headers=response_headers, close=upstream.aclose
        )


# --- running it ---------------------------------------------------------------------------------


class _Server(uvicorn.Server):
    """uvicorn, minus its signal handlers: the runner owns SIGINT/SIGTERM, not the model endpoint."""

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


def _unix_socket(path: Path) -> socket.socket:
    with contextlib.suppress(FileNotFoundError):
        if stat.S_ISSOCK(path.lstat().st_mode):
            path.unlink()  # a stale socket from an earlier run in the same directory
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))
        os.chmod(path, 0o666)  # a non-root container user connects through the bind mount
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
    handle: ModelEndpointHandle,
) -> AsyncIterator[ModelEndpointHandle]:
    forwarder: LiveForwarder | None = None
    if endpoint.kind is ModelMode.LIVE:
        if endpoint.live is None:  # pragma: no cover - ModelEndpointConfig refuses this
            raise ValueError("live mode without live settings")
        forwarder = LiveForwarder(endpoint.live, endpoint.host_environ)  # reads the credential now
    log = ExchangeLog(log_path, endpoint.scrubber, forwarder.secrets if forwarder else None)
    if endpoint.injected_fault is not None:
        logging.getLogger("uvicorn.error").addFilter(_QUIET)  # idempotent: a filter is added once
    service = _Service(endpoint, handle, log, server_name, forwarder)
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
                server.should_exit = True
    finally:
        with anyio.CancelScope(shield=True):
            if forwarder is not None:
                await forwarder.aclose()
            log.close()
            sock.close()


@asynccontextmanager
async def serve_model(
    socket_path: Path, endpoint: ModelEndpointConfig, log_path: Path, *, server_name: str = "sharedos"
) -> AsyncIterator[ModelEndpointHandle]:
    """Serve the model endpoint on the unix socket ``socket_path`` until the block exits.

    Yields a :class:`ModelEndpointHandle` (counters). On exit, held-back (``hang``) answers are
    released, in-flight streams get :data:`SHUTDOWN_GRACE` seconds, and the socket is removed."""
    sock = _unix_socket(socket_path)
    handle = ModelEndpointHandle(endpoint.kind, "http://model.sock", socket_path=socket_path, log_path=log_path)
    try:
        async with _serve(sock, endpoint, log_path, server_name, handle):
            yield handle
    finally:
        socket_path.unlink(missing_ok=True)


@asynccontextmanager
async def serve_model_tcp(
    endpoint: ModelEndpointConfig, log_path: Path, *, host: str = "127.0.0.1", port: int = 0,
    server_name: str = "sharedos",
) -> AsyncIterator[ModelEndpointHandle]:
    """The same endpoint on TCP (``port=0``: any free port); ``handle.url`` is its base URL."""
    sock = _tcp_socket(host, port)
    bound = sock.getsockname()
    shown = f"[{bound[0]}]" if ":" in bound[0] else bound[0]
    handle = ModelEndpointHandle(endpoint.kind, f"http://{shown}:{bound[1]}", log_path=log_path)
    async with _serve(sock, endpoint, log_path, server_name, handle):
        yield handle
