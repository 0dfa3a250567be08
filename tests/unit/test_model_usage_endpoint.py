"""Usage counted by the running endpoint (uvicorn on a unix socket, httpx2 clients), per request in the exchange log
and per turn on the handle, split into conversation and side requests:

- scripted: every simulated CLI's whole conversation, plus a side request: the handle's totals are the sum of
  what the log says each answer reported, and each is what the dialect's scripted rule gives;
- live: a local upstream (a plain Starlette app on 127.0.0.1, not runner's scripted model) answers with known
  usage, shaped as each vendor sends it, streamed and not, gzipped once, and once with no usage at all: runner
  records exactly what it sent;
- faults: an error answer counts its status and no usage; a stream cut short counts as an answer that reported
  none."""

from __future__ import annotations

import gzip
import json
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from runner.core.scrub import Scrubber
from runner.core.usage import Usage, UsageTotals
from runner.model import DEFAULT_PLACEHOLDER_KEY, ModelEndpointConfig, serve_model
from runner.model.dialects import BY_NAME
from runner.model.dialects.base import estimate_tokens
from runner.model.settings import ModelFault, ModelMode
from runner.model.types import LiveModel
from tests.simulated_clis import CLIS, SimulatedCli, parse_answer
from tests.unit.test_model_endpoint import TOOLS, converse, escalation_actions, records, scripted, uds_client

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

HOST_VAR = "RUNNER_TEST_VENDOR_KEY"
HOST_SECRET = "sk-host-credential-0e7c1d"


def logged_usage(log: Path) -> list[tuple[bool, Usage | None]]:
    """(side, usage) of every generation request's answer in the log, in the order they were written."""
    return [(r["side_request"], Usage.from_json(r["usage"]) if r["usage"] is not None else None)
            for r in records(log) if "side_request" in r and "usage" in r]


# --- scripted -------------------------------------------------------------------------------------


@pytest.mark.parametrize("cli", CLIS)
async def test_scripted_turn_totals_are_the_sum_of_what_each_answer_reported(tmp_path: Path, cli: str) -> None:
    sock, log = tmp_path / "model.sock", tmp_path / "exchanges.jsonl"
    sim = SimulatedCli(cli, TOOLS)
    dialect = BY_NAME[sim.dialect]
    async with serve_model(sock, scripted(escalation_actions()), log) as handle, uds_client(sock) as client:
        async with client.sse(sim.path, method="POST", json=sim.side_request(),
                              headers=sim.headers(DEFAULT_PLACEHOLDER_KEY)) as source:
            side_events = [json.loads(e.data) async for e in source if e.data != "[DONE]"]
        reached, _ = await converse(client, sim)
    answers = logged_usage(log)
    conversation_requests = len(reached) + 1  # one per call, and the final text
    assert [side for side, _ in answers] == [True] + [False] * conversation_requests
    assert all(usage is not None for _, usage in answers)
    side = answers[0][1]
    assert side is not None and dialect.usage_of(side_events) == side  # what the CLI read is what was counted
    conversation = [u for s, u in answers if not s and u is not None]
    expected = UsageTotals(conversation=sum(conversation, Usage()), side=side, answers=1 + conversation_requests)
    assert handle.usage == expected
    assert (handle.generation_requests, handle.tool_requests) == (1 + conversation_requests, conversation_requests)
    assert handle.offered_tools is True
    assert conversation[0].cached_input == 0 and all(u.cached_input == u.input // 2 for u in conversation[1:])
    for record in records(log):  # each answer reports the scripted rule's input for its own request
        if "usage" in record:
            assert record["usage"]["input"] == estimate_tokens(record["request"]["body"])


async def test_a_request_for_a_model_list_or_a_token_count_is_no_answer(tmp_path: Path) -> None:
    sock, log = tmp_path / "model.sock", tmp_path / "exchanges.jsonl"
    async with serve_model(sock, scripted(escalation_actions()), log) as handle, uds_client(sock) as client:
        assert (await client.get("/v1/models")).status_code == 200
        gemini = SimulatedCli("gemini", TOOLS)
        assert (await client.post("/v1beta/models/m:countTokens", json=gemini.request())).status_code == 200
        assert (await client.post("/v1/messages/count_tokens", json=SimulatedCli("claude", TOOLS).request())
                ).status_code == 200
    assert handle.usage == UsageTotals() and handle.generation_requests == 0 and handle.offered_tools is None
    assert all("usage" not in r and "side_request" not in r for r in records(log))


async def test_an_injected_error_counts_its_status_and_a_cut_stream_an_answer_without_usage(tmp_path: Path) -> None:
    sim = SimulatedCli("qwen", TOOLS)
    for spec, status in (("error@1", 500), ("early-close@1", 200)):
        sock, log = tmp_path / f"{status}.sock", tmp_path / f"{status}.jsonl"
        config = scripted(escalation_actions(), fault=ModelFault.parse(spec))
        async with serve_model(sock, config, log) as handle, uds_client(sock) as client:
            try:
                response = await client.post(sim.path, json=sim.request(), headers=sim.headers("k"))
                assert response.status_code == status
            except httpx2.HTTPError:
                assert status == 200  # the early close drops the connection under the client
            await _settled(handle)
        if status == 500:
            assert handle.error_statuses == {500: 1} and handle.usage == UsageTotals() and handle.last_status == 500
        else:
            assert handle.usage == UsageTotals(answers=1, unreported=1) and handle.last_status == 200
            assert logged_usage(log) == [(False, None)]


async def _settled(handle: Any) -> None:
    with anyio.fail_after(5):
        while handle.last_status is None:
            await anyio.sleep(0.01)


# --- live, against a local upstream that answers with known usage ---------------------------------


class _Upstream(uvicorn.Server):
    """uvicorn without its signal handlers (the test process owns them)."""

    @contextmanager
    def capture_signals(self) -> Iterator[None]:
        yield


@asynccontextmanager
async def upstream(app: Starlette) -> AsyncIterator[str]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = _Upstream(uvicorn.Config(app, lifespan="off", log_config=None, log_level="warning"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        with anyio.fail_after(10):
            while not server.started:
                await anyio.sleep(0.01)
        try:
            yield f"http://127.0.0.1:{port}"
        finally:
            server.should_exit = True


def sse(events: list[tuple[str | None, dict[str, Any]]], tail: bytes = b"") -> bytes:
    out = b""
    for name, payload in events:
        out += (f"event: {name}\n" if name else "").encode() + b"data: " + json.dumps(payload).encode() + b"\n\n"
    return out + tail


# What each vendor sends (its API reference's shapes), with the usage a reader must come to.
ANTHROPIC_USAGE = Usage(input=1200 + 30 + 500, cached_input=500, output=77)
ANTHROPIC_STREAM = sse([
    ("message_start", {"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "content": [], "model": "claude", "stop_reason": None,
        "usage": {"input_tokens": 1200, "cache_creation_input_tokens": 30, "cache_read_input_tokens": 500,
                  "output_tokens": 1}}}),
    ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    ("ping", {"type": "ping"}),
    ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
    ("content_block_stop", {"type": "content_block_stop", "index": 0}),
    ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 77}}),
    ("message_stop", {"type": "message_stop"}),
])
ANTHROPIC_BODY = {"id": "msg_1", "type": "message", "role": "assistant", "content": [{"type": "text", "text": "Hi"}],
                  "stop_reason": "end_turn", "usage": {"input_tokens": 1200, "cache_creation_input_tokens": 30,
                                                       "cache_read_input_tokens": 500, "output_tokens": 77}}
CHAT_USAGE = Usage(input=2006, cached_input=1920, output=300, reasoning=64)
_CHAT_REPORTED = {"prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
                  "prompt_tokens_details": {"cached_tokens": 1920},
                  "completion_tokens_details": {"reasoning_tokens": 64}}
CHAT_STREAM = sse([
    (None, {"id": "c", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": "Hi"}}],
            "usage": None}),
    (None, {"id": "c", "object": "chat.completion.chunk",
            "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": None}),
    (None, {"id": "c", "object": "chat.completion.chunk", "choices": [], "usage": _CHAT_REPORTED}),
], b"data: [DONE]\n\n")
CHAT_BODY = {"id": "c", "object": "chat.completion", "usage": _CHAT_REPORTED,
             "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}]}
RESPONSES_USAGE = Usage(input=328, cached_input=128, output=52, reasoning=32)
_RESPONSES_REPORTED = {"input_tokens": 328, "input_tokens_details": {"cached_tokens": 128}, "output_tokens": 52,
                       "output_tokens_details": {"reasoning_tokens": 32}, "total_tokens": 380}
_OUTPUT = [{"type": "message", "id": "m", "status": "completed", "role": "assistant",
            "content": [{"type": "output_text", "text": "Hi", "annotations": []}]}]
RESPONSES_STREAM = sse([
    ("response.created", {"type": "response.created", "response": {"id": "r", "status": "in_progress",
                                                                    "output": [], "usage": None}}),
    ("response.output_text.delta", {"type": "response.output_text.delta", "delta": "Hi"}),
    ("response.completed", {"type": "response.completed", "response": {
        "id": "r", "status": "completed", "output": _OUTPUT, "usage": _RESPONSES_REPORTED}}),
])
RESPONSES_BODY = {"id": "r", "object": "response", "status": "completed", "output": _OUTPUT,
                  "usage": _RESPONSES_REPORTED}
GEMINI_USAGE = Usage(input=1000 + 30, cached_input=600, output=50 + 200, reasoning=200)
_GEMINI_CHUNK = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}, "index": 0}],
                 "usageMetadata": {"promptTokenCount": 1000, "totalTokenCount": 1000}}
_GEMINI_LAST = {"candidates": [{"content": {"role": "model", "parts": [{"text": "!"}]}, "finishReason": "STOP"}],
                "usageMetadata": {"promptTokenCount": 1000, "cachedContentTokenCount": 600,
                                  "candidatesTokenCount": 50, "thoughtsTokenCount": 200,
                                  "toolUsePromptTokenCount": 30, "totalTokenCount": 1280}}
GEMINI_STREAM = sse([(None, _GEMINI_CHUNK), (None, _GEMINI_LAST)])
GEMINI_BODY = {"candidates": [{"content": {"role": "model", "parts": [{"text": "Hi"}]}, "finishReason": "STOP"}],
               "usageMetadata": _GEMINI_LAST["usageMetadata"]}  # :generateContent answers one response

VENDORS: dict[str, tuple[str, Usage, bytes, Any]] = {
    # cli: (base URL suffix, the usage, the stream, the body); auth per SimulatedCli.headers
    "claude": ("", ANTHROPIC_USAGE, ANTHROPIC_STREAM, ANTHROPIC_BODY),
    "qwen": ("/v1", CHAT_USAGE, CHAT_STREAM, CHAT_BODY),
    "codex": ("/v1", RESPONSES_USAGE, RESPONSES_STREAM, RESPONSES_BODY),
    "gemini": ("", GEMINI_USAGE, GEMINI_STREAM, GEMINI_BODY),
}
AUTH = {"claude": "x-api-key", "qwen": "bearer", "codex": "bearer", "gemini": "x-goog-api-key"}


def vendor_app(stream: bytes, body: Any, *, gzipped: bool = False) -> Starlette:
    """Answers every model call: SSE when the request streams (``stream: true``, or Gemini's ``alt=sse``), the JSON
    body otherwise; ``gzipped``: with ``content-encoding: gzip``, as a vendor may although asked for identity."""

    async def answer(request: Request) -> Response:
        sent = json.loads(await request.body() or b"{}")
        streams = request.query_params.get("alt") == "sse" or sent.get("stream") is True
        if not streams:
            if gzipped:
                return Response(gzip.compress(json.dumps(body).encode()), media_type="application/json",
                                headers={"content-encoding": "gzip"})
            return JSONResponse(body)

        async def chunks() -> AsyncIterator[bytes]:
            data = gzip.compress(stream) if gzipped else stream
            for start in range(0, len(data), 37):  # in pieces that cut events and lines anywhere
                yield data[start:start + 37]

        headers = {"content-encoding": "gzip"} if gzipped else {}
        return StreamingResponse(chunks(), media_type="text/event-stream", headers=headers)

    return Starlette(routes=[Route("/{path:path}", answer, methods=["POST"])])


@asynccontextmanager
async def live_endpoint(tmp_path: Path, cli: str, app: Starlette) -> AsyncIterator[tuple[Any, Path, Path]]:
    sim = SimulatedCli(cli, TOOLS)
    suffix = VENDORS[cli][0]
    async with upstream(app) as url:
        live = LiveModel(base_url=url + suffix, credentials=[HOST_VAR], auth=AUTH[cli])  # type: ignore[arg-type]
        config = ModelEndpointConfig(mode=ModelMode.LIVE, live=live, scrubber=Scrubber({HOST_VAR: HOST_SECRET},
                                                                                       [HOST_VAR]),
                                     environ={HOST_VAR: HOST_SECRET}, dialect=sim.dialect)
        sock, log = tmp_path / "model.sock", tmp_path / "live.jsonl"
        async with serve_model(sock, config, log) as handle:
            yield handle, sock, log


def _without_stream(cli: str, body: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    sim = SimulatedCli(cli, TOOLS)
    if cli == "gemini":
        return "/v1beta/models/fake-model:generateContent", body
    return sim.path, {**body, "stream": False}


@pytest.mark.parametrize("cli", sorted(VENDORS))
@pytest.mark.parametrize("gzipped", [False, True], ids=["identity", "gzip"])
async def test_live_records_exactly_the_usage_the_upstream_sent(tmp_path: Path, cli: str, gzipped: bool) -> None:
    _, usage, stream, body = VENDORS[cli]
    sim = SimulatedCli(cli, TOOLS)
    app = vendor_app(stream, body, gzipped=gzipped)
    async with live_endpoint(tmp_path, cli, app) as (handle, sock, log), uds_client(sock) as client:
        headers = sim.headers(DEFAULT_PLACEHOLDER_KEY)
        async with client.stream("POST", sim.path, json=sim.request(), headers=headers) as response:
            assert response.status_code == 200
            streamed = b"".join([chunk async for chunk in response.aiter_raw()])
        assert (gzip.decompress(streamed) if gzipped else streamed) == stream  # passed through unchanged
        path, plain = _without_stream(cli, sim.side_request())
        answered = await client.post(path, json=plain, headers=headers)
        assert answered.status_code == 200
        assert parse_answer(sim.dialect, body=answered.json()).text == "Hi"
    assert logged_usage(log) == [(False, usage), (True, usage)]
    assert handle.usage == UsageTotals(conversation=usage, side=usage, answers=2, unreported=0)
    assert (handle.generation_requests, handle.tool_requests) == (2, 1)
    assert HOST_SECRET not in log.read_text()


async def test_live_counts_an_answer_without_usage_and_an_upstream_error(tmp_path: Path) -> None:
    no_usage = sse([(None, {"choices": [{"index": 0, "delta": {"content": "Hi"}, "finish_reason": "stop"}]})],
                   b"data: [DONE]\n\n")
    sim = SimulatedCli("qwen", TOOLS)

    async def answer(request: Request) -> Response:
        if json.loads(await request.body()).get("stream"):
            return Response(no_usage, media_type="text/event-stream")
        return JSONResponse({"error": {"message": "Rate limit reached", "type": "requests"}}, status_code=429)

    app = Starlette(routes=[Route("/{path:path}", answer, methods=["POST"])])
    async with live_endpoint(tmp_path, "qwen", app) as (handle, sock, log), uds_client(sock) as client:
        headers = sim.headers(DEFAULT_PLACEHOLDER_KEY)
        assert (await client.post(sim.path, json=sim.request(), headers=headers)).status_code == 200
        limited = await client.post(sim.path, json={**sim.request(), "stream": False}, headers=headers)
        assert limited.status_code == 429
    assert handle.usage == UsageTotals(answers=1, unreported=1)
    assert handle.error_statuses == {429: 1} and handle.last_status == 429
    assert logged_usage(log) == [(False, None)]


def test_the_vendor_payloads_here_read_as_the_usage_they_claim() -> None:
    """The fixtures' own check: each stream, read by its dialect alone, gives the usage the live test expects."""
    reader: Callable[[bytes], list[Any]] = lambda data: [  # noqa: E731
        json.loads(line[6:]) for line in data.decode().splitlines() if line.startswith("data: {")]
    for cli, (_, usage, stream, body) in VENDORS.items():
        dialect = BY_NAME[SimulatedCli(cli, TOOLS).dialect]
        assert dialect.usage_of(reader(stream)) == usage
        assert dialect.usage_of(body if isinstance(body, list) else [body]) == usage

