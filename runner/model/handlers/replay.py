"""Replay mode's answers: each request is answered from the recording, until the first divergence.

The rule (what is compared, what is sent back, what stops the replay) is :mod:`runner.model.replay`;
this module sends it: the recorded body or events, a recorded stall as a stall, a stream the upstream
broke off broken off again, and from the first divergence on a ``409`` naming it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from starlette.responses import Response

from runner.core.outcomes import JsonValue
from runner.model.exchange_log import Capture, ExchangeLog
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
from runner.model.replay import Divergence, Replayer, answer_for
from runner.model.usage_meter import UsageMeter

DIVERGENCE_STATUS = 409


class ReplayedBreak(Exception):
    """Raised inside a replayed stream to break it off where the recorded one broke off."""


class ReplayHandler(ModelHandler):
    def __init__(self, replayer: Replayer, handle: ModelEndpointHandle, log: ExchangeLog) -> None:
        self.replayer = replayer
        self.handle = handle
        self.log = log

    async def answer(self, exchange: Exchange) -> Response:
        request, dialect, record, finish = exchange.request, exchange.dialect, exchange.record, exchange.finish
        replayer = self.replayer
        logged = record["request"]
        if not isinstance(logged, dict):  # never: the router logs every request as an object (server.py)
            raise TypeError("the exchange record holds no request object")
        received = self.log.scrub_value({k: logged[k] for k in ("method", "path", "query", "body")})
        outcome = replayer.take(received, dialect.name if dialect else None)
        if isinstance(outcome, Divergence):
            divergence = outcome.to_json()
            self.handle.divergence = divergence
            record["divergence"] = divergence
            message = (f"runner replay: request {outcome.step} ({outcome.path}) diverged from the recording, "
                       f"so the replay stopped: {outcome.what}")
            error: JsonValue = dialect.error_body(DIVERGENCE_STATUS, message) if dialect else {
                "error": {"message": message, "type": "replay_divergence"}}
            count_answer(self.handle, exchange, DIVERGENCE_STATUS, None)
            finish({"status": DIVERGENCE_STATUS, **JSON_TYPE, "body": error}, "complete")
            return json_response(DIVERGENCE_STATUS, error, {"x-should-retry": "false"})
        record["replay"] = {"exchange": outcome.number, "of": len(replayer.exchanges), "line": outcome.line}
        self.handle.replayed += 1
        if outcome.side:
            self.handle.side_requests += 1
        if outcome.stalled:
            return await stalled(self.handle, request, dialect, finish, "runner replay")
        answer = answer_for(outcome)
        if answer.events is None:
            capture = Capture(sse=False)
            capture.add(answer.body)
            if dialect is not None:
                meter = UsageMeter(dialect, sse=False)
                meter.add(answer.body)
                count_answer(self.handle, exchange, answer.status, meter.finish())
            finish({"status": answer.status, "content_type": answer.content_type,
                    **({"headers": dict(answer.headers)} if answer.headers else {}), **capture.to_json()},
                   "complete")
            return Response(content=answer.body, status_code=answer.status, headers=dict(answer.headers),
                            media_type=answer.content_type)
        events, broken = answer.events, answer.broken
        stream_capture = Capture(sse=True)
        stream_meter = UsageMeter(dialect, sse=True) if dialect is not None else None

        async def source() -> AsyncIterator[bytes]:
            for event in events:
                data = event.encode()
                stream_capture.add(data)
                if stream_meter is not None:
                    stream_meter.add(data)
                yield data
            if broken:
                raise ReplayedBreak("the recorded upstream broke off this stream here")

        def done(ended: str) -> None:
            if stream_meter is not None:
                count_answer(self.handle, exchange, answer.status, stream_meter.finish())
            finish({"status": answer.status, "content_type": answer.content_type, "headers": dict(answer.headers),
                    "stream": True, **stream_capture.to_json()}, "upstream_error" if broken else ended)

        return ObservedStream(source(), done, status_code=answer.status, headers=[
            ("content-type", answer.content_type or "text/event-stream"), *answer.headers])
