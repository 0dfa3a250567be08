"""Scripted-model faults (``--model-fault KIND[@STEP]``) on the real endpoint (uvicorn on a unix
socket), driven by the simulated clients of every dialect: an error in the dialect's own shape, a
stall held until the client leaves or the endpoint stops, a stream cut before its terminal event;
the step they start at, that they stay on, and the exchange-log entry that says so."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from typer.testing import CliRunner

from runner.cli import Exit, app
from runner.core.scrub import Scrubber
from runner.harnesses.profile import find_profile
from runner.model import DEFAULT_PLACEHOLDER_KEY, ModelEndpointConfig, ModelEndpointError, serve_model
from runner.model.faults import FaultKind, FaultSpecError, ModelFault
from runner.model.settings import ModelMode
from runner.model.types import LiveModel
from runner.turn.model_choice import ModelChoiceError, choose_model
from tests.simulated_clis import SimulatedCli, parse_answer
from tests.unit.test_model_endpoint import TOOLS, escalation_actions, records, uds_client, wait_for

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

# one simulated client per dialect: Responses, Messages, Gemini, Chat Completions
DIALECT_CLIS = {"openai-responses": "codex", "anthropic-messages": "claude", "gemini": "gemini",
                "openai-chat": "qwen"}
ERROR_TYPE = {"openai-responses": "server_error", "openai-chat": "server_error"}
# the event that ends a stream in each dialect (a client that never sees it knows the answer broke)
TERMINAL = {"openai-responses": "response.completed", "anthropic-messages": "message_stop"}


def faulted(fault: str) -> ModelEndpointConfig:
    return ModelEndpointConfig(mode=ModelMode.SCRIPTED, actions=escalation_actions(), scrubber=Scrubber({}),
                               fault=ModelFault.parse(fault))


GEMINI_PLAIN = "/v1beta/models/fake-model:generateContent"  # Gemini's non-streaming method


async def post(
    client: httpx2.AsyncClient, sim: SimulatedCli, body: dict[str, Any] | None = None, path: str | None = None
) -> httpx2.Response:
    return await client.post(path or sim.path, json=body or sim.request(), headers=sim.headers(DEFAULT_PLACEHOLDER_KEY))


async def step_through(client: httpx2.AsyncClient, sim: SimulatedCli, requests: int) -> None:
    """Play ``requests`` unfaulted requests of the conversation (each answered with one call)."""
    for _ in range(requests):
        if sim.dialect == "gemini":
            response = await post(client, sim, path=GEMINI_PLAIN)
        else:
            response = await post(client, sim, sim.request() | {"stream": False})
        assert response.status_code == 200, response.text
        answer = parse_answer(sim.dialect, body=response.json())
        assert len(answer.calls) == 1
        sim.absorb(answer, ["ok"])


def assert_error_body(dialect: str, body: dict[str, Any], spec: str) -> None:
    if dialect == "anthropic-messages":
        assert body["type"] == "error" and body["error"]["type"] == "api_error"
    elif dialect == "gemini":
        assert body["error"]["code"] == 500 and body["error"]["status"] == "INTERNAL"
    else:
        assert body["error"]["type"] == ERROR_TYPE[dialect]
    assert f"injected fault {spec}" in json.dumps(body)


# --- parsing ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "spec"),
    [("error", "error@1"), ("stall@3", "stall@3"), ("early-close@after-ask", "early-close@after-ask"),
     (" error@2 ", "error@2")],
)
def test_a_fault_parses_to_its_canonical_spec(text: str, spec: str) -> None:
    assert ModelFault.parse(text).spec == spec


@pytest.mark.parametrize("text", ["", "boom", "error@0", "error@x", "error@", "stall@1@2", "ERROR", "error@-1",
                                  "error@after", "early_close"])
def test_a_bad_fault_is_refused_naming_the_option(text: str) -> None:
    with pytest.raises(FaultSpecError, match="--model-fault"):
        ModelFault.parse(text)


def test_a_fault_is_played_by_the_scripted_model_only(tmp_path: Path) -> None:
    with pytest.raises(ModelEndpointError, match="only to the scripted model"):
        ModelEndpointConfig(mode=ModelMode.LIVE, live=LiveModel(base_url="http://127.0.0.1:1", credentials=["K"]),
                            scrubber=Scrubber({}), environ={"K": "v"}, fault=ModelFault.parse("error"),
                            dialect="openai-chat")
    assert faulted("stall").fault == ModelFault(FaultKind.STALL)


def test_model_choice_carries_the_fault_and_refuses_it_elsewhere() -> None:
    codex, reference = find_profile("codex"), find_profile("reference")
    environ = {"OPENAI_API_KEY": "sk-live"}  # live would be the default with credentials...
    choice = choose_model(None, codex, environ, ModelFault.parse("error"))
    assert (choice.mode, choice.fault) == (ModelMode.SCRIPTED, ModelFault(FaultKind.ERROR, 1))  # ...but a fault
    assert choice.to_json()["fault"] == "error@1"  # implies scripted
    with pytest.raises(ModelChoiceError, match="only to the scripted model"):
        choose_model(ModelMode.LIVE, codex, environ, ModelFault.parse("error"))
    with pytest.raises(ModelChoiceError, match="talks to no model"):
        choose_model(None, reference, {}, ModelFault.parse("stall"))
    assert choose_model(None, codex, {}).fault is None


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (["--harness", "codex", "--model-fault", "boom"], "--model-fault 'boom'"),
        (["--harness", "codex", "--model-fault", "error@0"], "STEP must be"),
        (["--harness", "reference", "--model-fault", "error"], "talks to no model"),
        (["--harness", "codex", "--model", "live", "--model-fault", "stall"], "only to the scripted model"),
    ],
)
def test_exec_refuses_a_bad_fault_as_usage(args: list[str], words: str) -> None:
    result = CliRunner().invoke(app, ["exec", *args])
    assert result.exit_code == Exit.USAGE, result.output
    assert words in result.stderr


def test_a_matrix_faults_the_columns_with_a_model_and_runs_the_others_as_they_are(tmp_path: Path) -> None:
    from runner.conformance.cases import get_case
    from runner.matrix.cells import MatrixCell
    from runner.matrix.plan import CellOptions, plan_cells

    case = get_case("escalation")
    options = CellOptions(fault=ModelFault.parse("error"))
    codex, reference = plan_cells(
        [MatrixCell(case, case.condition, find_profile("codex")),
         MatrixCell(case, case.condition, find_profile("reference"))],
        options,
    )
    assert codex.planned_pins().model_fault == "error@1"
    assert "--model-fault" in codex.repro_argv() and codex.model.mode == "scripted"
    assert "modelFault" not in reference.planned_pins().to_dict()
    assert "--model-fault" not in reference.repro_argv() and reference.model.mode == "none"
    # a selection where no column talks to a model is a usage error, before any engine is needed
    result = CliRunner().invoke(app, ["run", "--harness", "reference", "--case", "escalation", "--model-fault", "error",
                                      "--out", str(tmp_path / "m")])
    assert result.exit_code == Exit.USAGE and "none of the chosen harnesses talks to a model" in result.stderr


def test_exec_help_documents_the_option() -> None:
    text = CliRunner().invoke(app, ["exec", "--help"], terminal_width=200).output
    assert "--model-fault" in text and "after-ask" in text and "early-close" in text


# --- error ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECT_CLIS)
async def test_error_at_a_step_then_stays_on(tmp_path: Path, dialect: str) -> None:
    sock, log = tmp_path / "model.sock", tmp_path / "exchanges.jsonl"
    async with serve_model(sock, faulted("error@2"), log) as handle, uds_client(sock) as client:
        sim = SimulatedCli(DIALECT_CLIS[dialect], TOOLS)
        await step_through(client, sim, 1)  # request 1 is played as scripted
        for _ in range(2):  # request 2 fails, and so does the CLI's retry of it
            response = await post(client, sim)
            assert response.status_code == 500
            assert_error_body(dialect, response.json(), "error@2")
        side = await post(client, sim, sim.side_request() | {"stream": False})  # not the conversation: answered
        assert side.status_code == 200
        response = await post(client, sim)  # and the conversation is still down after it
        assert response.status_code == 500
        assert handle.faults == 3 and handle.side_requests == 1
    logged = records(log)
    assert [r.get("fault", {}).get("spec") for r in logged] == [None, "error@2", "error@2", None, "error@2"]
    assert [r["response"]["status"] for r in logged] == [200, 500, 500, 200, 500]
    entry = logged[1]["fault"]
    assert entry == {"kind": "error", "spec": "error@2", "at": "request 2", "injected": True,
                     "fired_at_request": 2, "injection": 1, "request": 2}
    assert [r["fault"]["request"] for r in logged if "fault" in r] == [2, 3, 4]  # the side request is not counted


async def test_side_requests_are_not_counted(tmp_path: Path) -> None:
    """opencode's title request comes first; ``@1`` is still the request that makes the first call."""
    sock, log = tmp_path / "model.sock", tmp_path / "exchanges.jsonl"
    async with serve_model(sock, faulted("error@1"), log) as handle, uds_client(sock) as client:
        sim = SimulatedCli("opencode", TOOLS)
        title = await post(client, sim, sim.side_request() | {"stream": False})
        assert title.status_code == 200
        assert (await post(client, sim)).status_code == 500
        assert handle.side_requests == 1 and handle.faults == 1


@pytest.mark.parametrize("fault", ["error@1", "stall@1", "early-close@1", "error@2", "error@after-ask"])
@pytest.mark.parametrize("side_first", [True, False], ids=["side-first", "side-second"])
async def test_what_is_faulted_does_not_depend_on_which_of_two_concurrent_requests_arrives_first(
    tmp_path: Path, fault: str, side_first: bool
) -> None:
    """dsh sends its title request ~1 ms after a conversation request: either can reach the endpoint
    first. Each order is played here on purpose (the second request is sent only once the first is
    logged as arrived), and the same requests are faulted in both: the conversation request from its
    step on, the side request never."""
    sock, log = tmp_path / "model.sock", tmp_path / "exchanges.jsonl"
    spec = ModelFault.parse(fault)
    sim = SimulatedCli("dsh", TOOLS)
    conversation_before = {"error@1": 0, "stall@1": 0, "early-close@1": 0, "error@2": 1, "error@after-ask": 2}[fault]
    with anyio.fail_after(20):
        async with serve_model(sock, faulted(fault), log) as handle, uds_client(
            sock, httpx2.Timeout(10.0, read=2.0)
        ) as client:
            await step_through(client, sim, conversation_before)  # unfaulted conversation requests before the pair
            statuses: dict[str, int | str] = {}

            async def send(kind: str) -> None:
                body = sim.side_request() if kind == "side" else sim.request()
                try:
                    async with client.stream("POST", sim.path, json=body,
                                             headers=sim.headers(DEFAULT_PLACEHOLDER_KEY)) as response:
                        statuses[kind] = response.status_code
                        await response.aread()
                except httpx2.ReadTimeout:
                    statuses.setdefault(kind, "stalled")
                except httpx2.RemoteProtocolError:
                    statuses[kind] = "cut"

            first, second = ("side", "conversation") if side_first else ("conversation", "side")
            async with anyio.create_task_group() as tg:
                tg.start_soon(send, first)
                await wait_for(lambda: handle.requests == conversation_before + 1)
                tg.start_soon(send, second)
    logged = sorted(records(log), key=lambda r: r["request_seq"])
    pair = logged[conversation_before:]
    assert [r["decision"]["reply"] == "side" for r in pair] == [side_first, not side_first]  # the order played
    side = next(r for r in pair if r["decision"]["reply"] == "side")
    conversation = next(r for r in pair if r["decision"]["reply"] != "side")
    # the side request is answered as scripted, in either order; the conversation request is faulted
    assert "fault" not in side and side["response"]["status"] == 200 and statuses["side"] == 200
    assert conversation["fault"]["spec"] == spec.spec
    assert conversation["fault"]["request"] == conversation_before + 1 == conversation["fault"]["fired_at_request"]
    expected = {"error": 500, "stall": "stalled", "early-close": "cut"}[spec.kind.value]
    assert statuses["conversation"] == expected
    assert all("fault" not in r for r in logged[:conversation_before])


@pytest.mark.parametrize("dialect", DIALECT_CLIS)
async def test_after_ask_fires_on_the_first_request_after_the_ask(tmp_path: Path, dialect: str) -> None:
    sock, log = tmp_path / "model.sock", tmp_path / "exchanges.jsonl"
    async with serve_model(sock, faulted("error@after-ask"), log) as handle, uds_client(sock) as client:
        sim = SimulatedCli(DIALECT_CLIS[dialect], TOOLS)
        await step_through(client, sim, 2)  # the control read, then the ask: both answered
        response = await post(client, sim)
        assert response.status_code == 500
        assert_error_body(dialect, response.json(), "error@after-ask")
        assert handle.faults == 1
    logged = records(log)
    assert [r["step"] for r in logged] == [0, 1, 2]
    assert logged[1]["decision"]["call"]["canonical"] == "sharedos.escalate"  # request 2 made the ask
    assert logged[-1]["fault"]["at"] == "after-ask" and logged[-1]["fault"]["request"] == 3


async def test_after_ask_never_fires_without_an_ask(tmp_path: Path) -> None:
    sock, log = tmp_path / "model.sock", tmp_path / "exchanges.jsonl"
    actions = [{"do": "call", "tool": "files.read", "arguments": {"path": ["Workspace", "policy.md"]}},
               {"do": "finish", "text": "done"}]
    config = ModelEndpointConfig(mode=ModelMode.SCRIPTED, actions=actions, scrubber=Scrubber({}),
                                 fault=ModelFault.parse("stall@after-ask"))
    async with serve_model(sock, config, log) as handle, uds_client(sock) as client:
        sim = SimulatedCli("claude", TOOLS)
        await step_through(client, sim, 1)
        final = await post(client, sim, sim.request() | {"stream": False})
        assert parse_answer("anthropic-messages", body=final.json()).text == "done"
        assert handle.faults == 0


# --- stall ------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECT_CLIS)
async def test_stall_holds_until_the_client_goes_away(tmp_path: Path, dialect: str) -> None:
    sock, log = tmp_path / "model.sock", tmp_path / "exchanges.jsonl"
    async with serve_model(sock, faulted("stall"), log) as handle:
        sim = SimulatedCli(DIALECT_CLIS[dialect], TOOLS)
        async with uds_client(sock, httpx2.Timeout(10.0, read=0.5)) as client:
            with anyio.fail_after(5), pytest.raises(httpx2.ReadTimeout):
                await post(client, sim)
        await wait_for(lambda: len(records(log)) == 1)
        assert handle.stalls == 1 and handle.faults == 1
    (logged,) = records(log)
    assert logged["fault"]["spec"] == "stall@1" and logged["response"]["stalled"] is True
    assert logged["ended"] == "client_disconnected" and logged["decision"]["reply"] == "call"


async def test_stall_is_released_when_the_endpoint_stops(tmp_path: Path) -> None:
    """The turn's end (the endpoint stopping) answers a held request 503, in the dialect's shape."""
    sock, log = tmp_path / "model.sock", tmp_path / "exchanges.jsonl"
    answers: list[httpx2.Response] = []
    sim = SimulatedCli("claude", TOOLS)
    with anyio.fail_after(15):
        async with uds_client(sock) as client, anyio.create_task_group() as tg:

            async def held() -> None:
                answers.append(await post(client, sim))

            async with serve_model(sock, faulted("stall@1"), log) as handle:
                tg.start_soon(held)
                await wait_for(lambda: handle.stalls == 1)
    assert answers[0].status_code == 503 and answers[0].json()["error"]["type"] == "overloaded_error"
    assert records(log)[-1]["ended"] == "server_stopped" and records(log)[-1]["fault"]["kind"] == "stall"


# --- early close ------------------------------------------------------------------------------------


@pytest.mark.parametrize("dialect", DIALECT_CLIS)
async def test_early_close_cuts_the_stream_before_its_terminal_event(tmp_path: Path, dialect: str) -> None:
    sock, log = tmp_path / "model.sock", tmp_path / "exchanges.jsonl"
    async with serve_model(sock, faulted("early-close"), log) as handle, uds_client(sock) as client:
        sim = SimulatedCli(DIALECT_CLIS[dialect], TOOLS)
        events: list[str] = []
        with pytest.raises(httpx2.RemoteProtocolError, match="incomplete chunked read"):
            async with client.sse(sim.path, method="POST", json=sim.request(),
                                  headers=sim.headers(DEFAULT_PLACEHOLDER_KEY)) as source:
                assert source.response.status_code == 200  # the answer had started
                assert source.response.headers["content-type"].startswith("text/event-stream")
                async for event in source:
                    events.append(event.data)
        # what arrived never holds the end of the answer
        assert "[DONE]" not in events and all("finishReason" not in e and "finish_reason\":\"" not in e
                                              for e in events)
        if dialect in TERMINAL:
            assert events and all(json.loads(e)["type"] != TERMINAL[dialect] for e in events)
        if dialect == "gemini":
            assert events == []  # its one event was cut inside its bytes: nothing was dispatched
        # the fault stays on: the retry is cut too
        with pytest.raises(httpx2.RemoteProtocolError):
            await post(client, sim)
        assert handle.faults == 2
    logged = records(log)
    assert [r["ended"] for r in logged] == ["closed_early", "closed_early"]
    assert logged[0]["fault"]["kind"] == "early-close" and logged[0]["response"]["status"] == 200
    assert "cut_after" in logged[0]["response"]


async def test_early_close_of_a_non_streaming_answer(tmp_path: Path) -> None:
    """Claude Code retries a broken stream without streaming; that answer is cut as well."""
    sock, log = tmp_path / "model.sock", tmp_path / "exchanges.jsonl"
    async with serve_model(sock, faulted("early-close"), log), uds_client(sock) as client:
        sim = SimulatedCli("claude", TOOLS)
        with pytest.raises(httpx2.RemoteProtocolError):
            await post(client, sim, sim.request() | {"stream": False})
    (logged,) = records(log)
    assert logged["ended"] == "closed_early" and logged["response"]["stream"] is False
    assert logged["response"]["cut_after"].endswith("bytes")
