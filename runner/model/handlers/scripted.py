"""Scripted mode: play the turn's action list in the CLI's dialect, and inject a fault when asked.

Only a request to a dialect's endpoint is answered (anything else is a 404). The dialect's
auxiliary requests (model lists, token counts) are answered by the dialect; every other request's
step is its count of tool results, and the plan (:mod:`runner.model.script`) says the reply for that
step, reported with the usage :meth:`~runner.model.dialects.base.Dialect.scripted_usage` gives it (counted, as in
every mode, from what was sent). A fault (:mod:`runner.model.faults`) replaces the reply of the conversation request
its trigger picks (a side request is never faulted): an error status, a stall, or the start of the answer and
then a dropped connection.
"""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator

from starlette.responses import Response

from runner.core.outcomes import JsonValue
from runner.model.config import ModelEndpointConfig
from runner.model.dialects import Dialect, RenderContext, RequestInfo
from runner.model.dialects.base import Rendered
from runner.model.exchange_log import Capture
from runner.model.faults import ERROR_STATUS, FaultKind, FaultTrigger, ModelFault
from runner.model.handlers.base import (
    JSON_TYPE,
    Exchange,
    ModelEndpointHandle,
    ModelHandler,
    ObservedStream,
    count_answer,
    json_response,
    stalled,
)
from runner.model.script import Decision, StallReply, plan_for
from runner.model.sse import SSE_HEADERS
from runner.model.usage_meter import UsageMeter


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


class ScriptedHandler(ModelHandler):
    def __init__(self, config: ModelEndpointConfig, handle: ModelEndpointHandle, server_name: str) -> None:
        self.config = config
        self.handle = handle
        self.server_name = server_name
        fault = config.fault
        self.trigger = FaultTrigger(fault) if fault is not None else None
        if fault is not None:
            logging.getLogger("uvicorn.error").addFilter(_QUIET)  # idempotent: a filter is added once

    async def answer(self, exchange: Exchange) -> Response:
        request, body, dialect, record, finish = (
            exchange.request, exchange.body, exchange.dialect, exchange.record, exchange.finish
        )
        method, path = request.method, request.url.path
        if dialect is None:
            message = f"runner scripted model: no endpoint for {method} {path}"
            error: JsonValue = {"error": {"message": message, "type": "not_found"}}
            finish({"status": 404, **JSON_TYPE, "body": error}, "complete")
            return json_response(404, error)
        info = RequestInfo(method, path, dict(request.query_params))
        model = dialect.model_name(info, body, self.config.model)
        aux = dialect.auxiliary(info, body, model)
        if aux is not None:
            return self.send(aux, exchange)
        if not isinstance(body, dict):
            message = "runner scripted model: the request body must be a JSON object"
            return self.send(Rendered(status=400, body=dialect.error_body(400, message)), exchange)
        step = dialect.count_tool_results(body)
        plan = plan_for(self.config.actions, dialect.exposed_tools(body), self.server_name, invents=self.config.invents,
                        naming=self.config.naming)
        decision = Decision(step, plan.reply(step), plan)
        record["decision"] = decision.to_json()
        if plan.side:
            self.handle.side_requests += 1
        else:
            self.handle.skipped_calls = len(plan.skipped)
        usage = dialect.scripted_usage(body, decision.reply, step)
        ctx = RenderContext(model=model, step=step, usage=usage, body=body)
        stream = dialect.wants_stream(info, body)
        entry = self.trigger.check(step, plan) if self.trigger is not None else None
        if entry is not None and self.trigger is not None:
            record["fault"] = entry
            self.handle.faults += 1
            return await self.inject(self.trigger.fault, exchange, dialect, decision, ctx, stream, info)
        if isinstance(decision.reply, StallReply):
            return await stalled(self.handle, request, dialect, finish, "runner scripted model")
        rendered = dialect.render(decision.reply, ctx, stream=stream, info=info)
        return self.send(rendered, exchange)

    async def inject(
        self, fault: ModelFault, exchange: Exchange, dialect: Dialect, decision: Decision, ctx: RenderContext,
        stream: bool, info: RequestInfo,
    ) -> Response:
        """Answer with the fault instead of the scripted reply (see :mod:`runner.model.faults`)."""
        request, finish = exchange.request, exchange.finish
        who = f"runner scripted model, injected fault {fault.spec}"
        if fault.kind is FaultKind.STALL:
            return await stalled(self.handle, request, dialect, finish, who)
        if fault.kind is FaultKind.ERROR:
            body = dialect.error_body(ERROR_STATUS, f"{who}: the model API failed this request")
            count_answer(self.handle, exchange, ERROR_STATUS, None)
            finish({"status": ERROR_STATUS, **JSON_TYPE, "body": body}, "complete")
            return json_response(ERROR_STATUS, body)
        reply = decision.reply
        if isinstance(reply, StallReply):  # a held-back answer has nothing to cut short
            return await stalled(self.handle, request, dialect, finish, who)
        return cut_short(dialect.render(reply, ctx, stream=stream, info=info), exchange, self.handle, dialect)

    def send(self, rendered: Rendered, exchange: Exchange) -> Response:
        finish, dialect = exchange.finish, exchange.dialect
        assert dialect is not None  # only a dialect's request is rendered
        if rendered.events is None:
            response = json_response(rendered.status, rendered.body)
            meter = UsageMeter(dialect, sse=False)
            meter.add(bytes(response.body))
            count_answer(self.handle, exchange, rendered.status, meter.finish())
            finish({"status": rendered.status, **JSON_TYPE, "body": rendered.body}, "complete")
            return response
        events = rendered.events
        capture = Capture(sse=True)
        sse_meter = UsageMeter(dialect, sse=True)
        headers = {**SSE_HEADERS, **rendered.headers}

        async def source() -> AsyncIterator[bytes]:
            for event in events:
                data = event.encode()
                capture.add(data)
                sse_meter.add(data)
                yield data

        stream: ObservedStream

        def done(ended: str) -> None:
            count_answer(self.handle, exchange, rendered.status, sse_meter.finish())
            finish({"status": rendered.status, "content_type": stream.headers.get("content-type"),
                    "headers": {**headers}, "stream": True, **capture.to_json()}, ended)

        stream = ObservedStream(
            source(), done, status_code=rendered.status, headers=headers, media_type="text/event-stream",
        )
        return stream


def cut_short(rendered: Rendered, exchange: Exchange, handle: ModelEndpointHandle, dialect: Dialect) -> Response:
    """The start of ``rendered`` (the first half of its events, or of its only event's or body's
    bytes), then a dropped connection: no terminal event, no end of the chunked body. Its usage is what the part
    sent reported (usually none)."""
    finish = exchange.finish
    if rendered.events is not None:
        pieces = [event.encode() for event in rendered.events]
        headers, media_type = {**SSE_HEADERS, **rendered.headers}, "text/event-stream"
    else:
        pieces = [json.dumps(rendered.body, separators=(",", ":"), ensure_ascii=False).encode()]
        headers, media_type = dict(rendered.headers), "application/json"
    sent = pieces[: len(pieces) // 2] if len(pieces) > 1 else [pieces[0][: len(pieces[0]) // 2]]
    capture = Capture(sse=rendered.events is not None)
    meter = UsageMeter(dialect, sse=rendered.events is not None)
    cut = (f"{len(sent)} of {len(pieces)} events" if len(pieces) > 1
           else f"{len(sent[0])} of {len(pieces[0])} bytes")

    async def source() -> AsyncIterator[bytes]:
        for piece in sent:
            capture.add(piece)
            meter.add(piece)
            yield piece
        raise InjectedClose("the injected early-close fault drops the connection here")

    def done(ended: str) -> None:
        count_answer(handle, exchange, rendered.status, meter.finish())
        finish({"status": rendered.status, "content_type": media_type, "headers": {**headers},
                "stream": rendered.events is not None, **capture.to_json(),
                "cut_after": cut},
               "closed_early" if ended in ("error", "complete") else ended)

    return ObservedStream(source(), done, status_code=rendered.status, headers=headers, media_type=media_type)
