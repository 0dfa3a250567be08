"""The model endpoint as a real HTTP server (uvicorn on a unix socket, and on TCP), driven by httpx2
with real SSE parsing, through whole scripted conversations in every dialect; plus stalls, side
requests, and live forwarding to a local upstream (itself a scripted endpoint on 127.0.0.1)."""

from __future__ import annotations

import gzip
import json
import socket
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from runner.conformance.behaviours import FINAL_TEXT, Behaviour, actions_for
from runner.conformance.cases import get_case
from runner.core.scrub import Scrubber
from runner.model import DEFAULT_PLACEHOLDER_KEY, ModelEndpointConfig, ModelEndpointHandle, serve_model, serve_model_tcp
from runner.model.exchange_log import MAX_REQUEST_BYTES
from runner.model.script import SIDE_TEXT
from runner.model.settings import ModelMode
from runner.model.types import LiveModel
from tests.simulated_clis import CLIS, ParsedAnswer, SimulatedCli, parse_answer

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

TOOLS = ["files.read", "files.list", "sharedos.escalate"]  # what the CLI registered (no admin.grant.issue)
HOST_VAR = "RUNNER_TEST_VENDOR_KEY"
HOST_SECRET = "sk-host-credential-5b1f0c8e9d2a"
TIMEOUT = httpx2.Timeout(10.0)


def escalation_actions(behaviour: Behaviour = Behaviour.COOPERATIVE) -> list[dict[str, Any]]:
    return [a.to_json() for a in actions_for(get_case("escalation"), behaviour, issue_uncatalogued=True)]


def scripted(actions: list[dict[str, Any]], **extra: Any) -> ModelEndpointConfig:
    return ModelEndpointConfig(mode=ModelMode.SCRIPTED, actions=actions, scrubber=Scrubber({}), **extra)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


def uds_client(path: Path, timeout: httpx2.Timeout = TIMEOUT) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.AsyncHTTPTransport(uds=str(path)), base_url="http://model",
                              timeout=timeout)


async def ask(client: httpx2.AsyncClient, sim: SimulatedCli, body: dict[str, Any] | None = None) -> ParsedAnswer:
    """One streaming model request, parsed with httpx2's own SSE parser."""
    async with client.sse(sim.path, method="POST", json=body or sim.request(),
                          headers=sim.headers(DEFAULT_PLACEHOLDER_KEY)) as source:
        assert source.response.status_code == 200
        assert source.response.headers["content-type"].startswith("text/event-stream")
        events = [json.loads(e.data) async for e in source if e.data != "[DONE]"]
    return parse_answer(sim.dialect, events=events)


async def converse(client: httpx2.AsyncClient, sim: SimulatedCli, limit: int = 10) -> tuple[list[str], str]:
    """Call -> feed result -> call -> ... -> final text; returns the MCP tools reached and the text."""
    reached: list[str] = []
    for _ in range(limit):
        answer = await ask(client, sim)
        if not answer.calls:
            return reached, answer.text
        assert len(answer.calls) == 1
        tool, arguments = sim.mcp_call(answer.calls[0])
        reached.append(tool)
        if tool == "files_read":
            assert arguments == {"path": ["Workspace", "policy.md"]}
        sim.absorb(answer, [f"result of {tool}"])
    raise AssertionError("the conversation did not end")


async def wait_for(predicate: Any, timeout: float = 5.0) -> None:
    with anyio.fail_after(timeout):
        while not predicate():
            await anyio.sleep(0.02)


# --- scripted, every CLI, on a unix socket --------------------------------------------------------


def expected_calls(cli: str) -> list[str]:
    """The MCP tools a CLI's conversation reaches for the escalation case with the uncatalogued
    attempt issued: a CLI that shows its MCP tools by name does not offer admin.grant.issue, so the
    call is skipped; behind a gateway alone (Pi's ``mcp`` or ``codemode``, Qwen's ``tool_call``) it is
    made, and the CLI's own router answers it."""
    gateway = ["admin_grant_issue"] if cli in ("pi-proxy", "pi-codemode", "qwen-proxy") else []
    return [*gateway, "files_read", "sharedos_escalate"]


@pytest.mark.parametrize("cli", CLIS)
async def test_full_scripted_conversation(tmp_path: Path, cli: str) -> None:
    sock, log = tmp_path / "model.sock", tmp_path / "exchanges.jsonl"
    async with serve_model(sock, scripted(escalation_actions()), log) as handle:
        assert stat.S_ISSOCK(sock.stat().st_mode) and stat.S_IMODE(sock.stat().st_mode) == 0o600  # this uid's alone
        async with uds_client(sock) as client:
            sim = SimulatedCli(cli, TOOLS)
            reached, text = await converse(client, sim)
            assert reached == expected_calls(cli)
            assert text == FINAL_TEXT

            # stateless: the same request again gets the same answer; a side request gets text
            assert (await ask(client, sim)).text == FINAL_TEXT
            side = await ask(client, sim, sim.side_request())
            assert not side.calls
            if sim.dialect == "gemini":  # a JSON-mode side call gets JSON its schema accepts
                assert json.loads(side.text)["next_speaker"] == "user"
            else:
                assert side.text == SIDE_TEXT
        calls = len(expected_calls(cli))
        assert handle.requests == calls + 3 and handle.by_dialect == {sim.dialect: calls + 3}
        assert handle.side_requests == 1 and handle.skipped_calls == 3 - calls
    assert not sock.exists()

    logged = records(log)
    assert len(logged) == calls + 3
    assert [r["step"] for r in logged][:-1] == [*range(calls + 1), calls]  # a side request counts its own
    assert [r["decision"]["reply"] for r in logged] == ["call"] * calls + ["text", "text", "side"]
    assert all(r["mode"] == "scripted" and r["ended"] == "complete" for r in logged)
    assert all(r["request"]["client_auth"] == "placeholder" for r in logged)
    if calls == 2:
        assert logged[0]["decision"]["skipped"][0]["action"]["tool"] == "admin.grant.issue"
    first = logged[0]["response"]
    assert first["status"] == 200 and first["stream"] is True and first["events"]
    assert DEFAULT_PLACEHOLDER_KEY not in json.dumps(logged[0]["request"]["headers"])


# --- TCP, non-streaming, other endpoints ----------------------------------------------------------


async def test_tcp_endpoint_and_non_streaming(tmp_path: Path) -> None:
    log = tmp_path / "exchanges.jsonl"
    async with serve_model_tcp(scripted(escalation_actions()), log) as handle:
        assert handle.url.startswith("http://127.0.0.1:")
        async with httpx2.AsyncClient(base_url=handle.url, timeout=TIMEOUT) as client:
            sim = SimulatedCli("opencode", TOOLS)
            title = await ask(client, sim, sim.side_request())  # opencode's first request: the title
            assert title.text == SIDE_TEXT
            reached, text = await converse(client, sim)
            assert (reached, text) == (["files_read", "sharedos_escalate"], FINAL_TEXT)

            body = SimulatedCli("claude", TOOLS).request() | {"stream": False}
            response = await client.post("/v1/messages?beta=true", json=body)
            assert response.status_code == 200
            assert parse_answer("anthropic-messages", body=response.json()).calls[0].name == "mcp__sharedos__files_read"

            gemini = SimulatedCli("gemini", TOOLS)
            response = await client.post("/v1beta/models/fake-model:generateContent", json=gemini.request())
            assert parse_answer("gemini", body=response.json()).calls[0].name == "mcp_sharedos_files_read"
            response = await client.post("/v1beta/models/fake-model:countTokens", json=gemini.request())
            assert response.json()["totalTokens"] > 0

            models = await client.get("/v1/models")
            assert models.json()["data"][0]["id"] == "runner-scripted"
            assert (await client.head("/api/hello")).status_code == 200
            missing = await client.post("/v1/completions", json={"prompt": "x"})
            assert missing.status_code == 404
            bad = await client.post("/v1/responses", content=b"not json")
            assert bad.status_code == 400 and "JSON object" in bad.json()["error"]["message"]
    logged = records(log)
    assert len(logged) == 11
    assert logged[-2]["response"]["status"] == 404


# --- hang -----------------------------------------------------------------------------------------


async def test_hang_stalls_until_the_client_goes_away(tmp_path: Path) -> None:
    sock, log = tmp_path / "model.sock", tmp_path / "exchanges.jsonl"
    async with serve_model(sock, scripted(escalation_actions(Behaviour.HANG_AFTER_ASK)), log) as handle:
        sim = SimulatedCli("claude", TOOLS)
        async with uds_client(sock) as client:
            for expected in ("mcp__sharedos__files_read", "mcp__sharedos__sharedos_escalate"):
                answer = await ask(client, sim)
                assert answer.calls[0].name == expected
                sim.absorb(answer, ["ok"])
        short = httpx2.Timeout(10.0, read=0.5)
        async with uds_client(sock, short) as client:
            with anyio.fail_after(5), pytest.raises(httpx2.ReadTimeout):
                await ask(client, sim)
        await wait_for(lambda: len(records(log)) == 3)
        assert handle.stalls == 1
    stalled = records(log)[-1]
    assert stalled["decision"]["reply"] == "stall" and stalled["step"] == 2
    assert stalled["ended"] == "client_disconnected" and stalled["response"]["stalled"] is True


async def test_hang_is_released_when_the_endpoint_stops(tmp_path: Path) -> None:
    sock, log = tmp_path / "model.sock", tmp_path / "exchanges.jsonl"
    statuses: list[int] = []
    sim = SimulatedCli("codex", TOOLS)
    with anyio.fail_after(15):
        async with uds_client(sock) as client, anyio.create_task_group() as tg:

            async def held() -> None:
                response = await client.post(sim.path, json=sim.request())
                statuses.append(response.status_code)

            async with serve_model(sock, scripted([{"do": "hang"}]), log) as handle:
                tg.start_soon(held)
                await wait_for(lambda: handle.stalls == 1)
            # leaving serve_model released the held answer
    assert statuses == [503]
    assert records(log)[-1]["ended"] == "server_stopped"
    assert not sock.exists()


async def test_gzip_request_body(tmp_path: Path) -> None:
    log = tmp_path / "exchanges.jsonl"
    body = SimulatedCli("claude", TOOLS).request() | {"stream": False}
    async with serve_model_tcp(scripted(escalation_actions()), log) as handle, \
            httpx2.AsyncClient(base_url=handle.url, timeout=TIMEOUT) as client:
        response = await client.post("/v1/messages", content=gzip.compress(json.dumps(body).encode()),
                                     headers={"content-encoding": "gzip", "content-type": "application/json"})
        assert response.status_code == 200 and response.json()["stop_reason"] == "tool_use"


# --- live -----------------------------------------------------------------------------------------


@asynccontextmanager
async def live_pair(
    tmp_path: Path, auth: str, base_suffix: str, dialect: str
) -> AsyncIterator[tuple[ModelEndpointHandle, ModelEndpointHandle, Path, Path, Path]]:
    """A scripted upstream on 127.0.0.1 and a live endpoint on a unix socket forwarding to it.

    The upstream is told the host credential is its "placeholder" key, so its log's ``client_auth``
    says ``placeholder`` exactly when the request it got carried the host credential (and nothing
    else); the live endpoint's own log says ``placeholder`` when the client sent only the real
    placeholder key."""
    up_log, live_log, sock = tmp_path / "upstream.jsonl", tmp_path / "live.jsonl", tmp_path / "model.sock"
    environ = {HOST_VAR: HOST_SECRET}
    upstream_config = scripted(escalation_actions(), placeholder_key=HOST_SECRET)
    async with serve_model_tcp(upstream_config, up_log) as upstream:
        live = LiveModel(base_url=upstream.url + base_suffix, credentials=["RUNNER_UNSET_KEY", HOST_VAR],
                         auth=auth)  # type: ignore[arg-type]
        config = ModelEndpointConfig(mode=ModelMode.LIVE, live=live, scrubber=Scrubber(environ, [HOST_VAR]),
                                     environ=environ, dialect=dialect)
        async with serve_model(sock, config, live_log) as handle:
            yield upstream, handle, sock, up_log, live_log


@pytest.mark.parametrize(
    ("cli", "auth", "base_suffix", "upstream_path"),
    [
        ("codex", "bearer", "/v1", "/v1/responses"),
        ("claude", "x-api-key", "", "/v1/messages"),
        ("gemini", "x-goog-api-key", "", "/v1beta/models/fake-model:streamGenerateContent"),
        ("qwen", "bearer", "/v1", "/v1/chat/completions"),
    ],
)
async def test_live_forwarding_to_a_local_upstream(
    tmp_path: Path, cli: str, auth: str, base_suffix: str, upstream_path: str
) -> None:
    sim = SimulatedCli(cli, TOOLS)
    async with live_pair(tmp_path, auth, base_suffix, sim.dialect) as (upstream, live, sock, up_log, live_log):
        async with uds_client(sock) as client:
            reached, text = await converse(client, sim)
            assert (reached, text) == (["files_read", "sharedos_escalate"], FINAL_TEXT)
        assert live.requests == 3 and upstream.requests == 3
    up, down = records(up_log), records(live_log)
    assert [r["request"]["client_auth"] for r in down] == ["placeholder"] * 3  # the CLI held only the placeholder
    assert [r["request"]["client_auth"] for r in up] == ["placeholder"] * 3  # i.e. exactly the host credential
    assert all(r["request"]["path"] == upstream_path for r in up)
    assert all(r["request"]["headers"].get("accept-encoding") == "identity" for r in up)
    assert [r["step"] for r in down] == [0, 1, 2]
    assert all(r["mode"] == "live" and r["ended"] == "complete" for r in down)
    assert down[0]["upstream"]["url"].startswith(upstream.url + upstream_path)
    assert down[0]["upstream"]["credential_variable"] == HOST_VAR
    # the upstream's answer is logged as it streamed through, event for event
    assert down[0]["response"]["events"] == up[0]["response"]["events"]
    assert down[0]["response"]["status"] == 200
    for path in (live_log, up_log):
        assert HOST_SECRET not in path.read_text()


async def test_live_unreachable_upstream_is_a_502(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    environ = {HOST_VAR: HOST_SECRET}
    live = LiveModel(base_url=f"http://127.0.0.1:{port}/v1", credentials=[HOST_VAR])
    config = ModelEndpointConfig(mode=ModelMode.LIVE, live=live, scrubber=Scrubber({}), environ=environ,
                                 dialect="openai-responses")
    sock, log = tmp_path / "model.sock", tmp_path / "live.jsonl"
    async with serve_model(sock, config, log) as handle, uds_client(sock) as client:
        sim = SimulatedCli("codex", TOOLS)
        response = await client.post(sim.path, json=sim.request(), headers=sim.headers(DEFAULT_PLACEHOLDER_KEY))
        assert response.status_code == 502 and "could not be reached" in response.json()["error"]["message"]
        assert handle.upstream_errors == 1
    logged = records(log)
    assert logged[0]["ended"] == "upstream_error"
    assert HOST_SECRET not in log.read_text()  # the log was scrubbed by the credential itself


# --- hostile bodies -------------------------------------------------------------------------------


async def test_hostile_bodies_are_answered_by_runner_with_their_cause_and_logged(tmp_path: Path) -> None:
    """Over the size bound (as sent, or once inflated), nested past the depth bound, lone surrogates: runner answers
    the first three itself, in the dialect's error shape, whatever the mode, and never reads the oversized body
    past the bound; the surrogates are read as U+FFFD and the conversation goes on."""
    log = tmp_path / "exchanges.jsonl"
    sim = SimulatedCli("claude", TOOLS)
    headers = {"content-type": "application/json"}
    bomb = gzip.compress(bytes(64 * 1024 * 1024)) * 2  # 128 MiB of zeros in about 130 KB
    async with serve_model_tcp(scripted(escalation_actions()), log) as handle, \
            httpx2.AsyncClient(base_url=handle.url, timeout=TIMEOUT) as client:
        big = await client.post(sim.path, content=b" " * (MAX_REQUEST_BYTES + 1), headers=headers)
        inflated = await client.post(sim.path, content=bomb, headers={**headers, "content-encoding": "gzip"})
        deep = await client.post(sim.path, content=b"[" * 100_000 + b"]" * 100_000, headers=headers)
        body = sim.request() | {"stream": False, "model": "\ud83d-model"}
        odd = await client.post(sim.path, content=json.dumps(body).encode(), headers=headers)
    assert (big.status_code, inflated.status_code, deep.status_code, odd.status_code) == (413, 413, 400, 200)
    assert big.json()["error"] == {"type": "invalid_request_error", "message":
                                   f"runner: the request body is over runner's bound of {MAX_REQUEST_BYTES} bytes"}
    assert inflated.json()["error"]["message"] == (
        f"runner: the gzip body inflates over the bound of {MAX_REQUEST_BYTES} bytes")
    assert deep.json()["error"]["message"] == "runner: JSON nested deeper than 128 levels"
    assert odd.json()["model"] == "\ufffd-model"
    logged = sorted(records(log), key=lambda r: r["request_seq"])
    assert [r["response"]["status"] for r in logged] == [413, 413, 400, 200]
    assert [r.get("refused") for r in logged] == [
        f"the request body is over runner's bound of {MAX_REQUEST_BYTES} bytes",
        f"the gzip body inflates over the bound of {MAX_REQUEST_BYTES} bytes",
        "JSON nested deeper than 128 levels", None]
    assert logged[0]["request"]["body"] == {"refused": logged[0]["refused"]}
    assert "decision" not in logged[0] and "decision" in logged[3]  # the scripted model never saw the refused


async def test_a_body_runner_refuses_never_reaches_the_vendor_in_live_mode(tmp_path: Path) -> None:
    sim = SimulatedCli("claude", TOOLS)
    async with live_pair(tmp_path, "x-api-key", "", sim.dialect) as (upstream, live, sock, _, live_log):
        async with uds_client(sock) as client:
            headers = sim.headers(DEFAULT_PLACEHOLDER_KEY)
            deep = await client.post(sim.path, content=b"[" * 200 + b"]" * 200, headers=headers)
            big = await client.post(sim.path, content=b"x" * (MAX_REQUEST_BYTES + 1), headers=headers)
            assert (deep.status_code, big.status_code) == (400, 413)
            reached, text = await converse(client, sim)  # each refusal closed its connection; the next is served
            assert (reached, text) == (["files_read", "sharedos_escalate"], FINAL_TEXT)
        assert live.requests == 5 and upstream.requests == 3
    refused = [r for r in records(live_log) if "refused" in r]
    assert [r["response"]["status"] for r in refused] == [400, 413] and all("upstream" not in r for r in refused)
