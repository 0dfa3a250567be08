"""Replay mode as a real HTTP server on a unix socket: a scripted (or live) conversation is recorded,
then replayed to the same client; then a tampered recording stops the replay at the tampered step.

The client is :class:`runner.model.simulate.SimulatedCli` over httpx2; every answer is read as raw
bytes, so "the same answer" below means the same bytes, event for event."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from runner.conformance.behaviours import FINAL_TEXT, Behaviour, actions_for
from runner.conformance.cases import get_case
from runner.core.scrub import Scrubber
from runner.model import DEFAULT_PLACEHOLDER_KEY, ModelEndpointConfig, ModelEndpointHandle, serve_model, serve_model_tcp
from runner.model.settings import ModelMode
from runner.model.sse import SseEvent, SseParser
from runner.model.types import LiveModel
from tests.simulated_clis import SimulatedCli, parse_answer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

TOOLS = ["files.read", "files.list", "sharedos.escalate"]
TIMEOUT = httpx2.Timeout(10.0)
CLIS = ("codex", "claude", "gemini", "qwen", "opencode")  # every dialect; opencode adds a side request
# where the first tool call's echoed argument path[1] sits in request 2 of each CLI's conversation
ARGUMENT_PATHS = {
    "codex": "body.input[2].arguments<json>.path[1]",
    "claude": "body.messages[2].content[0].input.path[1]",
    "gemini": "body.contents[1].parts[0].functionCall.args.path[1]",
    "qwen": "body.messages[2].tool_calls[0].function.arguments<json>.path[1]",
    "opencode": "body.messages[2].tool_calls[0].function.arguments<json>.path[1]",
}


def escalation_actions(behaviour: Behaviour = Behaviour.COOPERATIVE) -> list[dict[str, Any]]:
    return [a.to_json() for a in actions_for(get_case("escalation"), behaviour, issue_uncatalogued=True)]


def scripted(actions: list[dict[str, Any]]) -> ModelEndpointConfig:
    return ModelEndpointConfig(mode=ModelMode.SCRIPTED, actions=actions, scrubber=Scrubber({}))


def replay(recording: Path) -> ModelEndpointConfig:
    return ModelEndpointConfig(mode=ModelMode.REPLAY, recording=recording, scrubber=Scrubber({}))


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def uds_client(path: Path, timeout: httpx2.Timeout = TIMEOUT) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(uds=str(path)), base_url="http://model",
                              timeout=timeout)


@dataclass
class Answer:
    status: int
    content_type: str
    raw: bytes

    @property
    def events(self) -> list[SseEvent]:
        return SseParser().feed(self.raw.decode())

    def json(self) -> Any:
        return json.loads(self.raw)


async def send(client: httpx2.AsyncClient, sim: SimulatedCli, body: dict[str, Any], path: str | None = None) -> Answer:
    response = await client.post(path or sim.path, json=body, headers=sim.headers(DEFAULT_PLACEHOLDER_KEY))
    return Answer(response.status_code, response.headers.get("content-type", ""), response.content)


def vary(cli: str, body: dict[str, Any], run: int) -> dict[str, Any]:
    """What changes between two runs of the same cell (the volatile fields, with values of their
    real shapes): the date in the prompt, and each dialect's session ids."""
    body = json.loads(json.dumps(body).replace("2026-12-01", f"2026-12-0{run}"))
    if cli == "claude":
        body["metadata"]["user_id"] = json.dumps({"device_id": f"{run}" * 64, "session_id": f"session-{run}"})
    elif cli == "codex":
        body["prompt_cache_key"] = f"01a23098-8050-7611-8d5d-d7c3abd7762{run}"
        body["client_metadata"] = {"session_id": body["prompt_cache_key"], "turn_started_at_unix_ms": str(run)}
    return body


async def conversation(
    client: httpx2.AsyncClient, cli: str, run: int, *, tamper: Callable[[int], None] | None = None
) -> list[Answer]:
    """One CLI's whole conversation (opencode: its title request first), every answer as sent."""
    sim = SimulatedCli(cli, TOOLS, prompt="Do the task. Today's date is 2026-12-01.")
    answers: list[Answer] = []
    if cli == "opencode":
        answers.append(await send(client, sim, vary(cli, sim.side_request(), run)))
    for _ in range(6):
        answer = await send(client, sim, vary(cli, sim.request(), run))
        answers.append(answer)
        if answer.status != 200:
            return answers
        data = [json.loads(e.data) for e in answer.events if e.data != "[DONE]"]
        parsed = parse_answer(sim.dialect, events=data)
        if not parsed.calls:
            assert parsed.text == FINAL_TEXT
            return answers
        sim.absorb(parsed, [f"result of {sim.mcp_call(parsed.calls[0])[0]}"])
    raise AssertionError("the conversation did not end")


async def record_conversation(tmp_path: Path, cli: str) -> tuple[Path, list[Answer]]:
    sock, log = tmp_path / "record.sock", tmp_path / "recorded.jsonl"
    async with serve_model(sock, scripted(escalation_actions()), log), uds_client(sock) as client:
        answers = await conversation(client, cli, run=1)
    return log, answers


@pytest.mark.parametrize("cli", CLIS)
async def test_a_replay_sends_the_recorded_answers_byte_for_byte(tmp_path: Path, cli: str) -> None:
    log, recorded = await record_conversation(tmp_path, cli)
    assert all(a.status == 200 and a.content_type.startswith("text/event-stream") for a in recorded)

    await anyio.sleep(1.1)  # the scripted model's "created" stamps would differ now; the replay's cannot
    sock, replay_log = tmp_path / "replay.sock", tmp_path / "replayed.jsonl"
    async with serve_model(sock, replay(log), replay_log) as handle, uds_client(sock) as client:
        replayed = await conversation(client, cli, run=2)  # another day, another session
        assert handle.divergence is None
        assert handle.replayed == len(recorded) == handle.requests
        assert handle.side_requests == (1 if cli == "opencode" else 0)
    assert [(a.status, a.content_type) for a in replayed] == [(a.status, a.content_type) for a in recorded]
    assert [a.raw for a in replayed] == [a.raw for a in recorded]
    assert [a.events for a in replayed] == [a.events for a in recorded]

    # the replay's own log is a recording too: its answers are logged exactly as the original's were
    original, again = records(log), records(replay_log)
    assert [r["response"]["events"] for r in again] == [r["response"]["events"] for r in original]
    assert [r["replay"]["exchange"] for r in again] == list(range(1, len(recorded) + 1))
    assert all(r["mode"] == "replay" and "divergence" not in r for r in again)


@pytest.mark.parametrize("cli", CLIS)
async def test_a_tampered_recording_stops_the_replay_at_that_step(tmp_path: Path, cli: str) -> None:
    log, recorded = await record_conversation(tmp_path, cli)
    lines = records(log)
    step = 3 if cli == "opencode" else 2  # the request that echoes the first tool call (after opencode's title)
    tampered = lines[step - 1]["request"]["body"]
    text = json.dumps(tampered)
    assert text.count('\\"policy.md\\"') + text.count('"policy.md"') >= 1
    _set_argument(cli, tampered, "secret.md")
    tampered_log = tmp_path / "tampered.jsonl"
    tampered_log.write_text("".join(json.dumps(r) + "\n" for r in lines))

    sock = tmp_path / "replay.sock"
    async with serve_model(sock, replay(tampered_log), tmp_path / "replayed.jsonl") as handle, \
            uds_client(sock) as client:
        replayed = await conversation(client, cli, run=1)
        assert [a.status for a in replayed] == [200] * (step - 1) + [409]
        assert [a.raw for a in replayed[:-1]] == [a.raw for a in recorded[: step - 1]]
        stopped = replayed[-1]
        assert stopped.content_type == "application/json"
        path = SimulatedCli(cli, TOOLS).path.split("?")[0]
        expected_what = f'{ARGUMENT_PATHS[cli]} differs: recorded "secret.md", received "policy.md"'
        assert handle.divergence == {"step": step, "path": path, "what": expected_what, "field": ARGUMENT_PATHS[cli]}
        message = _error_message(cli, stopped.json())
        assert f"request {step} ({path}) diverged from the recording" in message and expected_what in message

        # every later request is answered the same way, even the recorded one
        sim = SimulatedCli(cli, TOOLS, prompt="Do the task. Today's date is 2026-12-01.")
        again = await send(client, sim, vary(cli, sim.request(), 1))
        assert (again.status, again.raw) == (409, stopped.raw)
        assert handle.divergence["step"] == step and handle.replayed == step - 1
    logged = records(tmp_path / "replayed.jsonl")
    assert logged[step - 1]["divergence"]["field"] == ARGUMENT_PATHS[cli]
    assert logged[step - 1]["response"]["status"] == 409


def _set_argument(cli: str, body: dict[str, Any], value: str) -> None:
    if cli == "claude":
        body["messages"][2]["content"][0]["input"]["path"][1] = value
    elif cli == "gemini":
        body["contents"][1]["parts"][0]["functionCall"]["args"]["path"][1] = value
    elif cli == "codex":
        body["input"][2]["arguments"] = json.dumps({"path": ["Workspace", value]})
    else:
        body["messages"][2]["tool_calls"][0]["function"]["arguments"] = json.dumps({"path": ["Workspace", value]})


def _error_message(cli: str, body: dict[str, Any]) -> str:
    """The message of an error body, read the way each dialect's SDK reads it."""
    if cli == "claude":
        assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    if cli == "gemini":
        assert body["error"]["code"] == 409 and body["error"]["status"] == "ABORTED"
    return str(body["error"]["message"])


async def test_a_request_past_the_end_is_a_divergence(tmp_path: Path) -> None:
    log, recorded = await record_conversation(tmp_path, "claude")
    sock = tmp_path / "replay.sock"
    async with serve_model(sock, replay(log), tmp_path / "replayed.jsonl") as handle, uds_client(sock) as client:
        await conversation(client, "claude", run=2)
        sim = SimulatedCli("claude", TOOLS)
        response = await client.post(sim.path, json=sim.request(), headers=sim.headers(DEFAULT_PLACEHOLDER_KEY))
        assert response.status_code == 409 and response.headers["x-should-retry"] == "false"
        what = f"the recording has {len(recorded)} exchanges; the CLI made a request {len(recorded) + 1}"
        assert handle.divergence == {"step": len(recorded) + 1, "path": "/v1/messages", "what": what}
        assert what in response.json()["error"]["message"]


async def test_non_streaming_answers_and_other_endpoints(tmp_path: Path) -> None:
    """JSON answers, auxiliary endpoints, a 404 and a 400 replay as recorded; the preconnect is
    answered whenever it comes, outside the sequence."""
    claude, gemini = SimulatedCli("claude", TOOLS), SimulatedCli("gemini", TOOLS)

    async def session(client: httpx2.AsyncClient, hello_first: bool) -> list[tuple[int, str, bytes]]:
        out = []
        if hello_first:
            assert (await client.head("/api/hello")).status_code == 200
        for method, path, body in [
            ("POST", "/v1/messages?beta=true", claude.request() | {"stream": False}),
            ("POST", "/v1beta/models/fake-model:generateContent", gemini.request()),
            ("POST", "/v1beta/models/fake-model:streamGenerateContent", gemini.request()),  # a JSON array
            ("POST", "/v1beta/models/fake-model:countTokens", gemini.request()),
            ("GET", "/v1/models", None),
            ("POST", "/v1/completions", {"prompt": "x"}),
            ("POST", "/v1/responses", b"not json"),
        ]:
            kwargs: dict[str, Any] = {"content": body} if isinstance(body, bytes) else {"json": body}
            response = await client.request(method, path, **({} if body is None else kwargs))
            out.append((response.status_code, response.headers.get("content-type", ""), response.content))
        if not hello_first:
            assert (await client.head("/api/hello")).status_code == 200
        return out

    log = tmp_path / "recorded.jsonl"
    async with serve_model(tmp_path / "a.sock", scripted(escalation_actions()), log), \
            uds_client(tmp_path / "a.sock") as client:
        recorded = await session(client, hello_first=True)
    assert [r[0] for r in recorded] == [200, 200, 200, 200, 200, 404, 400]
    async with serve_model(tmp_path / "b.sock", replay(log), tmp_path / "replayed.jsonl") as handle, \
            uds_client(tmp_path / "b.sock") as client:
        replayed = await session(client, hello_first=False)
        assert handle.divergence is None and handle.replayed == 7
    assert replayed == recorded


async def test_a_held_back_answer_is_held_back_again(tmp_path: Path) -> None:
    log = tmp_path / "recorded.jsonl"
    sim = SimulatedCli("claude", TOOLS)

    async def until_the_stall(client_sock: Path) -> None:
        async with uds_client(client_sock) as client:
            for _ in range(2):
                answer = await send(client, sim, sim.request())
                parsed = parse_answer("anthropic-messages", events=[json.loads(e.data) for e in answer.events])
                sim.absorb(parsed, ["ok"])
        async with uds_client(client_sock, httpx2.Timeout(10.0, read=0.5)) as client:
            with anyio.fail_after(5), pytest.raises(httpx2.ReadTimeout):
                await send(client, sim, sim.request())

    async with serve_model(tmp_path / "a.sock", scripted(escalation_actions(Behaviour.HANG_AFTER_ASK)), log):
        await until_the_stall(tmp_path / "a.sock")
    sim = SimulatedCli("claude", TOOLS)
    async with serve_model(tmp_path / "b.sock", replay(log), tmp_path / "replayed.jsonl") as handle:
        await until_the_stall(tmp_path / "b.sock")
        with anyio.fail_after(5):
            while handle.stalls < 1:
                await anyio.sleep(0.02)
        assert handle.divergence is None and handle.replayed == 3


async def test_a_live_recording_replays_with_its_headers(tmp_path: Path) -> None:
    """Live mode logs the upstream's answer as it streamed through, headers included; replayed, the
    client gets the same events and the upstream's own headers (not the credential-bearing ones)."""
    environ = {"RUNNER_TEST_VENDOR_KEY": "sk-host-credential-5b1f0c8e9d2a"}
    live_log = tmp_path / "live.jsonl"
    async with serve_model_tcp(scripted(escalation_actions()), tmp_path / "upstream.jsonl") as upstream:
        live = LiveModel(base_url=upstream.url, credentials=["RUNNER_TEST_VENDOR_KEY"], auth="x-api-key")
        config = ModelEndpointConfig(mode=ModelMode.LIVE, live=live, environ=environ, dialect="anthropic-messages",
                                     scrubber=Scrubber(environ, ["RUNNER_TEST_VENDOR_KEY"]))
        async with serve_model(tmp_path / "live.sock", config, live_log), uds_client(tmp_path / "live.sock") as client:
            recorded = await conversation(client, "claude", run=1)
    logged = records(live_log)
    assert logged[0]["response"]["headers"]["cache-control"] == "no-cache"
    assert logged[0]["response"]["content_type"].startswith("text/event-stream")

    handle: ModelEndpointHandle
    async with serve_model(tmp_path / "b.sock", replay(live_log), tmp_path / "replayed.jsonl") as handle, \
            uds_client(tmp_path / "b.sock") as client:
        sim = SimulatedCli("claude", TOOLS, prompt="Do the task. Today's date is 2026-12-01.")
        response = await client.post(sim.path, json=vary("claude", sim.request(), 2),
                                     headers=sim.headers(DEFAULT_PLACEHOLDER_KEY))
        assert response.headers["cache-control"] == "no-cache" and response.headers["x-accel-buffering"] == "no"
        assert response.content == recorded[0].raw
        assert handle.divergence is None


async def test_a_stream_the_upstream_broke_off_breaks_off_again(tmp_path: Path) -> None:
    recording = tmp_path / "recorded.jsonl"
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}], "stream": True}
    recording.write_text(json.dumps({
        "seq": 1, "request_seq": 1, "dialect": "openai-chat", "ended": "upstream_error",
        "request": {"method": "POST", "path": "/v1/chat/completions", "query": "", "body": body},
        "response": {"status": 200, "stream": True, "content_type": "text/event-stream",
                     "events": [{"data": {"choices": [{"delta": {"content": "par"}}]}, "raw": '{"choices": '
                                 '[{"delta": {"content": "par"}}]}'}]},
    }) + "\n")
    sock, log = tmp_path / "replay.sock", tmp_path / "replayed.jsonl"
    received = b""
    async with serve_model(sock, replay(recording), log), uds_client(sock) as client:
        with pytest.raises(httpx2.RemoteProtocolError):
            async with client.stream("POST", "/v1/chat/completions", json=body) as response:
                async for chunk in response.aiter_raw():
                    received += chunk
    assert received == b'data: {"choices": [{"delta": {"content": "par"}}]}\n\n'
    assert records(log)[0]["ended"] == "upstream_error"
