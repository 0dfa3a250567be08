"""What every answering mode of the model endpoint shares: the handler interface, the exchange it
is given, the handle's counters, and the responses they are answered with.

The router (:mod:`runner.model.server`) reads a request, starts its exchange-log record and hands an
:class:`Exchange` to the endpoint's one :class:`ModelHandler`: :mod:`~runner.model.handlers.scripted`,
:mod:`~runner.model.handlers.replay` or :mod:`~runner.model.handlers.live`. The handler answers it,
adds what it decided to ``exchange.record``, counts it on the :class:`ModelEndpointHandle` and calls
``exchange.finish`` exactly once with the logged response and how it ended. An answer to a generation request
(``exchange.side`` not None) is also counted with :func:`count_answer`, before ``finish``, with the usage a
:class:`~runner.model.usage_meter.UsageMeter` read from what was sent.
"""

from __future__ import annotations

import contextlib
import logging
from abc import ABC, abstractmethod
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import httpx2
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.types import Receive, Scope, Send

from runner.core.outcomes import JsonValue
from runner.core.usage import Usage, UsageTotals
from runner.model.config import ModelMode
from runner.model.dialects import Dialect

logger = logging.getLogger("runner.model.server")  # the endpoint's one logger, whichever module logs

Finish = Callable[[dict[str, JsonValue], str], None]  # (the logged response, how the exchange ended)
JSON_TYPE = {"content_type": "application/json"}


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
    refused: int = 0  # live: requests the allowlist refused (answered here, never sent to the vendor)
    last_step: int | None = None
    replayed: int = 0  # replay: recorded exchanges served
    divergence: dict[str, JsonValue] | None = None  # replay: {"step", "path", "what", "field"?} of the first divergence
    faults: int = 0  # scripted: requests answered with the injected fault
    # generation requests (a dialect's model call, not a model list or a token count), and of them those whose tool
    # list carried the MCP server's tools (runner.model.names.carries_server_tools): the rest are side requests
    generation_requests: int = 0
    tool_requests: int = 0
    usage: UsageTotals = field(default_factory=UsageTotals)  # what the answers to them reported, split
    error_statuses: Counter[int] = field(default_factory=Counter)  # statuses >= 400 the CLI got for them
    last_status: int | None = None  # of the latest generation request's answer (None: none answered yet)
    stopping: anyio.Event = field(default_factory=anyio.Event, repr=False)

    @property
    def offered_tools(self) -> bool | None:
        """Whether any generation request carried the server's tools; None when the CLI made none."""
        return self.tool_requests > 0 if self.generation_requests else None


@dataclass(frozen=True)
class Exchange:
    """One request as the router read it, and the log record it started for it."""

    request: Request
    raw: bytes  # the body as received (still content-encoded, if it was)
    headers: list[tuple[str, str]]  # as received, decoded latin-1, in order
    body: JsonValue  # the (decoded) body's JSON, or None
    dialect: Dialect | None  # by the request's path
    record: dict[str, JsonValue]  # the exchange-log record; the handler adds what it decided
    finish: Finish  # write the record with its response; called exactly once
    side: bool | None = None  # a generation request: whether it lacked the server's tools; None: not one


def count_answer(handle: ModelEndpointHandle, exchange: Exchange, status: int | None, usage: Usage | None) -> None:
    """Count the answer to a generation request (nothing for any other): its status on the handle, and, answered
    2xx, its usage (None: it reported none) on the record (``usage``) and in the handle's totals, as a conversation
    or a side request. Call it before ``exchange.finish``, which writes the record."""
    if exchange.side is None:
        return
    handle.last_status = status
    if status is None:
        return
    if status >= 400:
        handle.error_statuses[status] += 1
    if 200 <= status < 300:
        exchange.record["usage"] = usage.to_json() if usage is not None else None
        handle.usage = handle.usage.with_answer(usage, side=exchange.side)


class ModelHandler(ABC):
    """One answering mode of the endpoint (preconnects are answered by the router, never here)."""

    @abstractmethod
    async def answer(self, exchange: Exchange) -> Response:
        """The response to ``exchange.request``; ``exchange.finish`` is called once it has ended."""


# --- the responses ------------------------------------------------------------------------------


class ObservedStream(StreamingResponse):
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
                        # both are async generators, which starlette and __init__ type as plain async iterators
                        await iterator.aclose()  # type: ignore[attr-defined]
                if self._close is not None:
                    with contextlib.suppress(Exception):
                        await self._close()
                try:
                    self._on_done("complete" if self._finished else ended)
                except Exception:
                    logger.exception("could not log a model exchange")


def json_response(status: int, body: JsonValue, headers: dict[str, str] | None = None) -> Response:
    return JSONResponse(body, status_code=status, headers=headers)


async def stalled(
    handle: ModelEndpointHandle, request: Request, dialect: Dialect | None, finish: Finish, who: str
) -> Response:
    """A held-back answer: nothing until the client goes away (then a 204 nobody reads) or the
    endpoint stops (then a 503)."""
    handle.stalls += 1
    ended = await _hold(handle, request)
    if ended == "server_stopped":
        message = f"{who}: the endpoint stopped while this answer was held back"
        error: JsonValue = dialect.error_body(503, message) if dialect else {"error": {"message": message}}
        finish({"status": 503, "stalled": True}, ended)
        return json_response(503, error)
    finish({"status": None, "stalled": True}, ended)
    return Response(status_code=204)  # nobody is listening any more


async def _hold(handle: ModelEndpointHandle, request: Request) -> str:
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
            await handle.stopping.wait()
            tg.cancel_scope.cancel()

        tg.start_soon(client_gone)
        tg.start_soon(stopping)
    return ended
