"""Live mode's answers: a model call is forwarded to the vendor API and its answer streamed back; anything else is
answered here and never reaches the vendor.

What is forwarded, answered here or refused is :mod:`runner.model.live_policy`'s decision, for the column's dialect;
the URL and header rules and the credential are :mod:`runner.model.live`'s
(:class:`~runner.model.live.LiveForwarder`). This module refuses what the policy refuses (``403`` in the column's
dialect's error shape, logged ``ended: refused`` with the reason), answers a side request the policy keeps local (a
model list: the column's live model, as the scripted endpoint answers it), sends a model call with the query and
headers the policy left (naming what it dropped in the log's ``upstream.dropped``), streams the upstream's answer
back chunk by chunk as it arrives (copying it into the log, and reading the usage it reports on the way:
:class:`~runner.model.usage_meter.UsageMeter`, bounded, never holding the stream), answers ``502`` when the
upstream cannot be reached, and ``503`` (logged ``server_stopped``) when the endpoint stops before the upstream
began to answer.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable

import anyio
import httpx2
from starlette.responses import Response

from runner.core.outcomes import JsonValue
from runner.model.dialects import Dialect, RequestInfo
from runner.model.exchange_log import Capture, redact_headers
from runner.model.handlers.base import (
    JSON_TYPE,
    Exchange,
    ModelEndpointHandle,
    ModelHandler,
    ObservedStream,
    count_answer,
    json_response,
)
from runner.model.live import LiveForwarder, forward_response_headers
from runner.model.live_policy import REFUSED_STATUS, Decision, decide
from runner.model.usage_meter import UsageMeter


class LiveHandler(ModelHandler):
    """``dialect``: the column's (its allowlist, its error shape); ``local_model``: the model id a model list
    answered here names."""

    def __init__(
        self, forwarder: LiveForwarder, handle: ModelEndpointHandle, dialect: Dialect, local_model: str
    ) -> None:
        self.forwarder = forwarder
        self.handle = handle
        self.dialect = dialect
        self.local_model = local_model

    async def answer(self, exchange: Exchange) -> Response:
        request, record, finish = exchange.request, exchange.record, exchange.finish
        dialect, forwarder = self.dialect, self.forwarder
        method, path = request.method, request.url.path
        decision = decide(dialect.name, method, path, request.url.query, exchange.headers)
        if decision.route is None:
            return self.refuse(decision, exchange)
        if decision.route.local:
            return self.local(decision, exchange)
        query = decision.query
        record["upstream"] = {
            "url": forwarder.url_for(path, query), "auth": forwarder.live.auth,
            "credential_variable": forwarder.credential_var, "route": decision.route.shown,
            **({"dropped": decision.dropped()} if decision.dropped() else {}),
        }
        try:
            upstream = await self._open_unless_stopped(forwarder.open(method, path, query, decision.headers,
                                                                      exchange.raw))
        except httpx2.HTTPError as err:
            self.handle.upstream_errors += 1
            message = f"runner live model: the upstream could not be reached: {type(err).__name__}: {err}"
            error: JsonValue = dialect.error_body(502, message)
            count_answer(self.handle, exchange, 502, None)
            finish({"status": 502, **JSON_TYPE, "body": error}, "upstream_error")
            return json_response(502, error)
        if upstream is None:  # the endpoint stopped (the turn ended) while the vendor had not begun to answer
            message = "runner live model: the endpoint stopped while the vendor's answer was pending"
            count_answer(self.handle, exchange, None, None)
            finish({"status": 503, **JSON_TYPE, "body": dialect.error_body(503, message)}, "server_stopped")
            return json_response(503, dialect.error_body(503, message))
        content_type = upstream.headers.get("content-type", "")
        sse, encoding = content_type.startswith("text/event-stream"), upstream.headers.get("content-encoding", "")
        capture = Capture(sse=sse, encoding=encoding)
        meter = UsageMeter(dialect, sse=sse, encoding=encoding)
        response_headers = forward_response_headers(upstream.headers.multi_items())

        async def source() -> AsyncIterator[bytes]:
            async for chunk in upstream.aiter_raw():
                capture.add(chunk)
                meter.add(chunk)
                yield chunk

        def done(ended: str) -> None:
            count_answer(self.handle, exchange, upstream.status_code, meter.finish())
            if meter.unread is not None:
                record["usage_unread"] = meter.unread
            finish({"status": upstream.status_code, "content_type": content_type or None,
                    "headers": {**redact_headers(response_headers)}, "stream": capture.sse, **capture.to_json()}, ended)

        return ObservedStream(
            source(), done, status_code=upstream.status_code, headers=response_headers, close=upstream.aclose
        )

    async def _open_unless_stopped(self, opening: Awaitable[httpx2.Response]) -> httpx2.Response | None:
        """The upstream's answer once it begins, or None when the endpoint stops first: a vendor that has not
        answered when the turn ends leaves its exchange logged ``server_stopped`` (what says a model answer was still
        pending, :mod:`runner.turn.measure`), never a request cancelled unlogged at the server's shutdown."""
        opened: list[httpx2.Response] = []
        failed: list[httpx2.HTTPError] = []  # raised after the task group, which would wrap it in a group
        async with anyio.create_task_group() as tg:

            async def stopping() -> None:
                await self.handle.stopping.wait()
                tg.cancel_scope.cancel()

            tg.start_soon(stopping)
            try:
                opened.append(await opening)
            except httpx2.HTTPError as err:
                failed.append(err)
            tg.cancel_scope.cancel()
        if failed:
            raise failed[0]
        return opened[0] if opened else None

    def refuse(self, decision: Decision, exchange: Exchange) -> Response:
        """The request is answered here, in the column's error shape, and never sent to the vendor."""
        self.handle.refused += 1
        message = f"runner live model: refused, not sent to the vendor: {decision.reason}"
        body = self.dialect.error_body(REFUSED_STATUS, message)
        exchange.record["refused"] = decision.reason
        count_answer(self.handle, exchange, REFUSED_STATUS, None)
        exchange.finish({"status": REFUSED_STATUS, **JSON_TYPE, "body": body}, "refused")
        return json_response(REFUSED_STATUS, body)

    def local(self, decision: Decision, exchange: Exchange) -> Response:
        """A side request the policy answers here (a model list names the column's live model only)."""
        request = exchange.request
        assert decision.route is not None
        exchange.record["local"] = decision.route.shown
        info = RequestInfo(request.method, request.url.path, dict(request.query_params))
        rendered = self.dialect.auxiliary(info, exchange.body, self.local_model)
        if rendered is None:
            exchange.finish({"status": 200}, "complete")
            return Response(status_code=200)
        exchange.finish({"status": rendered.status, **JSON_TYPE, "body": rendered.body}, "complete")
        return json_response(rendered.status, rendered.body)
