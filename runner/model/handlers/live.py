"""Live mode's answers: every request is forwarded to the vendor API and its answer streamed back.

The URL and header rules and the credential are :mod:`runner.model.live`'s
(:class:`~runner.model.live.LiveForwarder`); this module sends the request, streams the upstream's
answer back chunk by chunk as it arrives (copying it into the log), and answers ``502`` when the
upstream cannot be reached.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx2
from starlette.responses import Response

from runner.core.outcomes import JsonValue
from runner.model.exchange_log import Capture, redact_headers
from runner.model.handlers.base import (
    JSON_TYPE,
    Exchange,
    ModelEndpointHandle,
    ModelHandler,
    ObservedStream,
    json_response,
)
from runner.model.live import LiveForwarder, forward_response_headers


class LiveHandler(ModelHandler):
    def __init__(self, forwarder: LiveForwarder, handle: ModelEndpointHandle) -> None:
        self.forwarder = forwarder
        self.handle = handle

    async def answer(self, exchange: Exchange) -> Response:
        request, dialect, record, finish = exchange.request, exchange.dialect, exchange.record, exchange.finish
        forwarder = self.forwarder
        method, path, query = request.method, request.url.path, request.url.query
        record["upstream"] = {
            "url": forwarder.url_for(path, query), "auth": forwarder.live.auth,
            "credential_variable": forwarder.credential_var,
        }
        try:
            upstream = await forwarder.open(method, path, query, exchange.headers, exchange.raw)
        except httpx2.HTTPError as err:
            self.handle.upstream_errors += 1
            message = f"runner live model: the upstream could not be reached: {type(err).__name__}: {err}"
            error: JsonValue = dialect.error_body(502, message) if dialect else {"error": {"message": message}}
            finish({"status": 502, **JSON_TYPE, "body": error}, "upstream_error")
            return json_response(502, error)
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
                    "headers": {**redact_headers(response_headers)}, "stream": capture.sse, **capture.to_json()}, ended)

        return ObservedStream(
            source(), done, status_code=upstream.status_code, headers=response_headers, close=upstream.aclose
        )
