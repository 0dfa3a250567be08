"""What live mode forwards with the host's key: each dialect's model calls as the columns were measured to send them,
with only the headers and query a model call needs; everything else answered by runner and never forwarded; a live
base URL that would carry the key in the clear refused at the edge. The policy's pure parts, then the endpoint as a
real server in front of a real local upstream (itself a scripted endpoint, whose own log is what reached it)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import anyio
import anyio.abc
import httpx2
import pytest
from typer.testing import CliRunner

from runner.cli import Exit, app
from runner.core.scrub import Scrubber
from runner.harnesses.profile import Profile
from runner.model import DEFAULT_PLACEHOLDER_KEY, ModelEndpointConfig, ModelEndpointError, serve_model, serve_model_tcp
from runner.model.live_policy import (
    ANTHROPIC_BETAS,
    POLICIES,
    LiveBaseUrlError,
    beta_feature,
    check_base_url,
    decide,
    is_loopback,
)
from runner.model.settings import Dialect, ModelMode
from runner.model.types import LiveModel
from runner.turn.model_choice import ModelChoiceError, choose_model
from tests.simulated_clis import SimulatedCli
from tests.unit.test_model_endpoint import (
    HOST_SECRET,
    HOST_VAR,
    TOOLS,
    converse,
    escalation_actions,
    records,
    scripted,
    uds_client,
)

# What the columns' escalation turns sent, measured on the scripted model (docs/live-mode.md): per column, its
# dialect, the request line and the headers it carried (credentials and connection headers aside).
CLAUDE_BETAS = ("claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,"
                "per-turn-control-2026-07-01,mid-conversation-tool-changes-2026-07-01,thinking-token-count-2026-05-13,"
                "effort-2025-11-24,thinking-display-updates-2026-08-18")
STAINLESS = {"x-stainless-arch": "x64", "x-stainless-lang": "js", "x-stainless-os": "Linux",
             "x-stainless-retry-count": "0", "x-stainless-runtime": "node", "x-stainless-timeout": "600"}
MEASURED: list[tuple[str, str, str, str, str, dict[str, str]]] = [
    ("claude-code", "anthropic-messages", "POST", "/v1/messages", "beta=true", {
        "accept": "application/json", "anthropic-beta": CLAUDE_BETAS, "anthropic-version": "2023-06-01",
        "anthropic-dangerous-direct-browser-access": "true", "content-type": "application/json",
        "user-agent": "claude-cli/2.1.332 (external, sdk-cli)", "x-app": "cli",
        "x-claude-code-session-id": "88169d6b-14f0-43de-afd5-2317473ea82c", **STAINLESS}),
    ("codex", "openai-responses", "POST", "/v1/responses", "", {
        "accept": "text/event-stream", "content-type": "application/json", "originator": "codex_exec",
        "session-id": "01a249bf", "thread-id": "01a249bf", "user-agent": "codex_exec/0.171.0",
        "x-client-request-id": "01a249bf", "x-codex-beta-features": "remote_compaction_v2",
        "x-codex-turn-metadata": '{"installation_id":"45a3e0ff"}', "x-codex-window-id": "01a249bf:0"}),
    ("gemini", "gemini", "POST", "/v1beta/models/runner-scripted:streamGenerateContent", "alt=sse", {
        "accept": "*/*", "accept-language": "*", "content-type": "application/json", "sec-fetch-mode": "cors",
        "user-agent": "GeminiCLI-tui/0.61.0/runner-scripted", "x-goog-api-client": "google-genai-sdk/1.30.0"}),
    ("deepseek", "openai-chat", "POST", "/v1/chat/completions", "", {
        "accept": "text/event-stream", "content-type": "application/json", "user-agent": "deepseek-harness/0.1.0-rc.8",
        "x-deepseek-harness-session-id": "session-8727872f", "x-deepseek-harness-user-id": "c575f363"}),
    ("kilo", "openai-chat", "POST", "/v1/chat/completions", "", {
        "accept": "*/*", "content-type": "application/json", "http-referer": "https://kilocode.ai",
        "user-agent": "Kilo-Code/7.7.7", "x-session-affinity": "ses_db63", "x-session-id": "ses_db63",
        "x-title": "Kilo Code"}),
    ("copilot", "openai-chat", "POST", "/v1/chat/completions", "", {
        "accept": "application/json", "content-type": "application/json", "user-agent": "OpenAI/JS 5.20.1",
        "x-initiator": "agent", "x-interaction-type": "conversation-user"}),
    ("vibe", "openai-chat", "POST", "/v1/chat/completions", "", {
        "accept": "*/*", "content-type": "application/json", "user-agent": "Mistral-Vibe/2.26.1",
        "x-affinity": "0471"}),
    ("model (gemini)", "gemini", "POST", "/v1beta/models/runner-scripted:generateContent", "", {
        "accept": "*/*", "content-type": "application/json", "user-agent": "python-httpx2/2.17.0"}),
    ("model (anthropic)", "anthropic-messages", "POST", "/v1/messages", "", {
        "accept": "*/*", "anthropic-version": "2023-06-01", "content-type": "application/json",
        "user-agent": "python-httpx2/2.17.0"}),
]
CONNECTION = [("host", "127.0.0.1:8787"), ("content-length", "17862"), ("connection", "keep-alive"),
              ("accept-encoding", "gzip, deflate, br, zstd"), ("authorization", f"Bearer {DEFAULT_PLACEHOLDER_KEY}"),
              ("x-api-key", DEFAULT_PLACEHOLDER_KEY), ("x-goog-api-key", DEFAULT_PLACEHOLDER_KEY)]
NEEDED = {"content-type", "accept", "user-agent", "anthropic-version", "anthropic-beta"}


@pytest.mark.parametrize(("harness", "dialect", "method", "path", "query", "headers"), MEASURED,
                         ids=[m[0] for m in MEASURED])
def test_every_measured_model_call_is_forwarded_with_only_what_it_needs(
    harness: str, dialect: str, method: str, path: str, query: str, headers: dict[str, str]
) -> None:
    decision = decide(dialect, method, path, query, [*CONNECTION, *headers.items()])
    assert decision.route is not None and not decision.route.local, decision.reason
    assert decision.query == query  # the model call's own query is kept whole
    kept = dict(decision.headers)
    assert kept == {name: value for name, value in headers.items() if name in NEEDED}
    assert set(decision.dropped_headers) == set(headers) - NEEDED  # named, and nothing the forwarder sets itself
    if "anthropic-beta" in headers:
        assert kept["anthropic-beta"] == CLAUDE_BETAS  # every beta Claude Code turns on is kept


@pytest.mark.parametrize(
    ("dialect", "method", "path"),
    [
        ("openai-chat", "DELETE", "/v1/files/file-abc123"),
        ("openai-chat", "GET", "/v1/organization/admin_api_keys"),
        ("openai-chat", "POST", "/v1/files"),
        ("openai-chat", "POST", "/v1/fine_tuning/jobs"),
        ("openai-chat", "POST", "/v1/batches"),
        ("openai-chat", "GET", "/v1/chat/completions"),  # the right path, another method
        ("openai-chat", "POST", "/v1/chat/completions/../../files"),
        ("openai-chat", "POST", "/v1//chat/completions"),
        ("openai-chat", "POST", "/v1/chat/completions/"),
        ("openai-chat", "POST", "/chat/completions"),
        ("openai-chat", "POST", "/v1/responses"),  # another dialect's model call
        ("openai-chat", "POST", "/v1/messages"),
        ("openai-chat", "GET", "/v1/models/gpt-4.1"),
        ("openai-responses", "GET", "/v1/responses/resp_123"),  # a stored response of the account
        ("openai-responses", "DELETE", "/v1/responses/resp_123"),
        ("openai-responses", "GET", "/v1/models"),
        ("anthropic-messages", "POST", "/v1/messages/batches"),
        ("anthropic-messages", "GET", "/v1/files"),
        ("anthropic-messages", "GET", "/v1/organizations/api_keys"),
        ("anthropic-messages", "POST", "/v1/chat/completions"),
        ("anthropic-messages", "GET", "/v1/models"),
        ("gemini", "GET", "/v1beta/files"),
        ("gemini", "POST", "/v1beta/cachedContents"),
        ("gemini", "POST", "/v1beta/tunedModels/mine:generateContent"),
        ("gemini", "POST", "/v1beta/models/../files:generateContent"),
        ("gemini", "POST", "/v1beta/models/a/b:generateContent"),
        ("gemini", "POST", "/v1beta/models/..:generateContent"),
        ("gemini", "DELETE", "/v1beta/models/gemini-2.5-pro:generateContent"),
        ("gemini", "GET", "/v1beta/models"),
    ],
)
def test_anything_else_is_refused_with_the_reason(dialect: str, method: str, path: str) -> None:
    decision = decide(dialect, method, path, "", [("authorization", "Bearer x")])
    assert decision.refused and decision.route is None
    assert f"{method} {path} is not a model call of the {dialect} dialect" in decision.reason
    assert decision.headers == ()


def test_account_and_organisation_headers_and_cookies_are_dropped_by_name() -> None:
    hostile = [("OpenAI-Organization", "org-other"), ("OpenAI-Project", "proj-other"), ("OpenAI-Beta", "assistants=v2"),
               ("Cookie", "session=s3cr3t"), ("x-goog-user-project", "billing-other"), ("x-goog-api-client", "sdk"),
               ("anthropic-dangerous-direct-browser-access", "true"), ("chatgpt-account-id", "acct-1"),
               ("x-forwarded-for", "10.0.0.1"), ("Content-Type", "application/json")]
    for dialect, path in [("openai-chat", "/v1/chat/completions"), ("openai-responses", "/v1/responses"),
                          ("anthropic-messages", "/v1/messages"), ("gemini", "/v1beta/models/g:generateContent")]:
        decision = decide(dialect, "POST", path, "", hostile)
        assert decision.headers == (("Content-Type", "application/json"),)
        assert decision.dropped_headers == tuple(n.lower() for n, _ in hostile[:-1])
        assert "s3cr3t" not in json.dumps(decision.dropped())  # names, never values


def test_only_the_betas_a_model_call_needs_pass() -> None:
    value = ("claude-code-20250219, files-api-2025-04-14,effort-2026-01-01,mcp-client-2025-04-04,"
             "code-execution-2025-08-25,skills-2025-10-02")
    decision = decide("anthropic-messages", "POST", "/v1/messages", "beta=true", [("anthropic-beta", value)])
    assert dict(decision.headers) == {"anthropic-beta": "claude-code-20250219,effort-2026-01-01"}  # a newer date passes
    assert decision.dropped_headers == tuple(f"anthropic-beta: {b}" for b in (
        "files-api-2025-04-14", "mcp-client-2025-04-04", "code-execution-2025-08-25", "skills-2025-10-02"))
    only_dropped = decide("anthropic-messages", "POST", "/v1/messages", "",
                          [("anthropic-beta", "files-api-2025-04-14")])
    assert only_dropped.headers == ()  # no empty header is left behind
    assert beta_feature("claude-code-20250219") == "claude-code" and beta_feature("effort-2025-11-24") == "effort"
    assert not {"files-api", "skills", "mcp-client", "code-execution"} & ANTHROPIC_BETAS


@pytest.mark.parametrize(
    ("dialect", "path", "query", "kept", "dropped"),
    [
        ("anthropic-messages", "/v1/messages", "beta=true&key=k&organization=o", "beta=true", ("key", "organization")),
        ("anthropic-messages", "/v1/messages", "beta=false", "", ("beta",)),
        ("gemini", "/v1beta/models/g:streamGenerateContent", "alt=sse&key=AIza-leak", "alt=sse", ("key",)),
        ("gemini", "/v1beta/models/g:generateContent", "key=AIza-leak&$fields=x", "", ("key", "$fields")),
        ("openai-chat", "/v1/chat/completions", "api-version=2024&project=p", "", ("api-version", "project")),
    ],
)
def test_query_parameters_are_limited_to_what_the_dialect_needs(
    dialect: str, path: str, query: str, kept: str, dropped: tuple[str, ...]
) -> None:
    decision = decide(dialect, "POST", path, query, [])
    assert (decision.query, decision.dropped_query) == (kept, dropped)


def test_the_side_requests_decided_one_by_one() -> None:
    """Model lists: OpenAI's answered by runner (the column's live model alone), the others refused; token counts
    forwarded (the model's own endpoint, on the same body); Claude Code's preconnect answered by runner."""
    assert decide("openai-chat", "GET", "/v1/models", "", []).local
    assert decide("anthropic-messages", "HEAD", "/api/hello", "", []).local
    assert decide("anthropic-messages", "GET", "/api/hello", "", []).local
    for dialect, path in [("anthropic-messages", "/v1/messages/count_tokens"),
                          ("gemini", "/v1beta/models/gemini-2.5-pro:countTokens")]:
        decision = decide(dialect, "POST", path, "", [])
        assert decision.route is not None and not decision.route.local and decision.route.what == "token count"
    assert decide("openai-responses", "GET", "/v1/models", "", []).refused
    assert decide("gemini", "GET", "/v1beta/models", "", []).refused
    assert set(POLICIES) == {"anthropic-messages", "openai-chat", "openai-responses", "gemini"}


# --- the base URL --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["https://api.openai.com/v1", "https://gateway.example.test:8443/openai",
                                 "http://127.0.0.1:9999", "http://localhost:8080/v1", "http://[::1]:8080",
                                 "http://127.8.9.10"])
def test_https_or_loopback_is_a_live_base_url(url: str) -> None:
    check_base_url(url, "RUNNER_LIVE_BASE_URL")


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("http://api.openai.com/v1", "plain http to api.openai.com"),
        ("http://10.0.0.1:8080/v1", "plain http to 10.0.0.1"),
        ("http://127.0.0.1.nip.io/v1", "plain http to 127.0.0.1.nip.io"),
        ("http://localhost.example.test/v1", "plain http to localhost.example.test"),
        ("http://[::ffff:10.0.0.1]/v1", "plain http to ::ffff:10.0.0.1"),
        ("ftp://api.example.test", "not an http(s) URL"),
        ("api.openai.com/v1", "not an http(s) URL"),
        ("https://user:pass@api.example.test/v1", "carries a user or password"),
        ("http://[::1", "is not a URL"),
    ],
)
def test_a_live_base_url_that_would_carry_the_key_in_the_clear_is_refused(url: str, words: str) -> None:
    with pytest.raises(LiveBaseUrlError, match=r"^RUNNER_LIVE_BASE_URL ") as caught:
        check_base_url(url, "RUNNER_LIVE_BASE_URL")
    assert words in str(caught.value)
    assert is_loopback("127.0.0.1") and is_loopback("::1") and not is_loopback("10.0.0.1")


def live_profile(base_url: str) -> Profile:
    return Profile.model_validate({
        "id": "vendor", "label": "V", "image": "vendor", "argv": ["cli"], "source": "/profiles/vendor.yaml",
        "model": {"dialect": "openai-chat", "live": {"base_url": base_url, "credentials": ["VENDOR_KEY"]}},
    })


def test_the_edge_refuses_a_plain_http_live_base_url_naming_the_setting() -> None:
    key = {"VENDOR_KEY": "sk-live-123456789"}
    with pytest.raises(ModelChoiceError, match=r"^model\.live\.base_url of /profiles/vendor\.yaml 'http://api"):
        choose_model(None, live_profile("http://api.example.test/v1"), key)  # live by default, with the key set
    with pytest.raises(ModelChoiceError, match=r"^RUNNER_LIVE_BASE_URL 'http://gateway\.example\.test'"):
        choose_model(ModelMode.LIVE, live_profile("https://api.example.test/v1"), key,
                     live_base_url="http://gateway.example.test")
    # what would replace it is what counts, and only when the turn is live
    assert choose_model(ModelMode.LIVE, live_profile("http://api.example.test/v1"), key,
                        live_base_url="http://127.0.0.1:9").mode is ModelMode.LIVE
    assert choose_model(ModelMode.SCRIPTED, live_profile("http://api.example.test/v1"), key).mode is ModelMode.SCRIPTED
    assert choose_model(None, live_profile("http://api.example.test/v1"), {}).mode is ModelMode.SCRIPTED


def test_the_model_columns_other_dialects_name_their_own_setting() -> None:
    """The model column asked for another dialect forwards to that dialect's endpoint (model.dialects.<d>)."""
    profile = live_profile("https://api.example.test/v1")
    assert profile.model is not None
    gemini = LiveModel(base_url="http://gemini.example.test", credentials=["VENDOR_KEY"], auth="x-goog-api-key")
    endpoint = profile.model.model_copy(update={"dialects": {"gemini": gemini}})
    in_gemini = profile.model_copy(update={"model": endpoint.in_dialect(Dialect.GEMINI)})
    with pytest.raises(ModelChoiceError, match=r"^model\.dialects\.gemini\.base_url of /profiles/vendor\.yaml"):
        choose_model(ModelMode.LIVE, in_gemini, {"VENDOR_KEY": "sk-live-123456789"})


def test_runner_exec_refuses_it_with_exit_2_before_anything_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the command: a profile whose image has no recipe (so a turn that started would end in an
    infrastructure error, exit 5, as it does on a runner without this check), refused at the edge instead."""
    profile = tmp_path / "edge-live.yaml"
    profile.write_text(
        "id: edge-live\nlabel: Edge\nimage: no-such-image-for-this-test\nargv: [/bin/true]\n"
        "model:\n  dialect: openai-chat\n  live:\n    base_url: https://api.example.test/v1\n"
        "    credentials: [RUNNER_EDGE_TEST_KEY]\n"
    )
    monkeypatch.setenv("RUNNER_EDGE_TEST_KEY", "sk-edge-test-0123456789")
    monkeypatch.setenv("RUNNER_LIVE_BASE_URL", "http://gateway.example.test/v1")
    result = CliRunner().invoke(app, ["exec", "--profile", str(profile), "--case", "escalation", "--json",
                                      "--out", str(tmp_path / "out")])
    assert result.exit_code == Exit.USAGE, result.stdout
    error = json.loads(result.stdout)["error"]
    assert error["message"].startswith("RUNNER_LIVE_BASE_URL 'http://gateway.example.test/v1' is plain http")
    assert not (tmp_path / "out" / "result.json").exists()
    monkeypatch.setenv("RUNNER_LIVE_BASE_URL", "")
    profile.write_text(profile.read_text().replace("https://api", "http://api"))
    result = CliRunner().invoke(app, ["exec", "--profile", str(profile), "--case", "escalation"])
    assert result.exit_code == Exit.USAGE
    assert f"model.live.base_url of {profile}" in result.stderr.replace("\n", "")


def test_the_endpoint_itself_refuses_a_plain_http_base_url_and_a_column_without_a_dialect() -> None:
    environ = {HOST_VAR: HOST_SECRET}
    with pytest.raises(ModelEndpointError, match=r"plain http to api\.example\.test"):
        ModelEndpointConfig(mode=ModelMode.LIVE, scrubber=Scrubber({}), environ=environ, dialect="openai-chat",
                            live=LiveModel(base_url="http://api.example.test/v1", credentials=[HOST_VAR]))
    with pytest.raises(ModelEndpointError, match="needs the column's dialect"):
        ModelEndpointConfig(mode=ModelMode.LIVE, scrubber=Scrubber({}), environ=environ,
                            live=LiveModel(base_url="https://api.example.test/v1", credentials=[HOST_VAR]))


# --- the endpoint, in front of a real local upstream ----------------------------------------------------------


@asynccontextmanager
async def live_endpoint(tmp_path: Path, dialect: str, auth: str = "bearer") -> AsyncIterator[tuple[Path, Path, Path]]:
    """A live endpoint for a column speaking ``dialect`` on a unix socket, forwarding to a scripted upstream on
    127.0.0.1 whose own exchange log records every request that reached it (any method, any path)."""
    up_log, live_log, sock = tmp_path / "upstream.jsonl", tmp_path / "live.jsonl", tmp_path / "model.sock"
    environ = {HOST_VAR: HOST_SECRET}
    async with serve_model_tcp(scripted(escalation_actions(), placeholder_key=HOST_SECRET), up_log) as upstream:
        live = LiveModel(base_url=upstream.url, credentials=[HOST_VAR], auth=auth, model="vendor-model-1")  # type: ignore[arg-type]
        config = ModelEndpointConfig(mode=ModelMode.LIVE, live=live, scrubber=Scrubber(environ, [HOST_VAR]),
                                     environ=environ, dialect=dialect)
        async with serve_model(sock, config, live_log):
            yield sock, up_log, live_log


HOSTILE_REQUESTS = [
    ("DELETE", "/v1/files/file-abc123", {}),
    ("GET", "/v1/organization/admin_api_keys", {"openai-organization": "org-other"}),
    ("POST", "/v1/files", {}),
    ("PUT", "/v1/chat/completions", {}),
    ("POST", "/v1/chat/completions%2F..%2F..%2Ffiles", {}),
    ("OPTIONS", "/v1/responses", {}),
]
ERROR_SHAPES = {
    "openai-chat": lambda body: body["error"]["type"] == "invalid_request_error",
    "openai-responses": lambda body: body["error"]["type"] == "invalid_request_error",
    "anthropic-messages": lambda body: body["type"] == "error" and body["error"]["type"] == "permission_error",
    "gemini": lambda body: body["error"]["status"] == "PERMISSION_DENIED" and body["error"]["code"] == 403,
}
MESSAGE = {"openai-chat": lambda b: b["error"]["message"], "openai-responses": lambda b: b["error"]["message"],
           "anthropic-messages": lambda b: b["error"]["message"], "gemini": lambda b: b["error"]["message"]}


@pytest.mark.anyio
@pytest.mark.parametrize("cli", ["qwen", "codex", "claude", "gemini"])
async def test_a_hostile_request_never_reaches_the_upstream_and_a_model_call_still_does(
    tmp_path: Path, cli: str
) -> None:
    sim = SimulatedCli(cli, TOOLS)
    async with live_endpoint(tmp_path, sim.dialect) as (sock, up_log, live_log), uds_client(sock) as client:
        for method, path, headers in HOSTILE_REQUESTS:
            answer = await client.request(method, path, headers={**sim.headers(DEFAULT_PLACEHOLDER_KEY),
                                                                   **headers}, content=b"{}")
            assert answer.status_code == 403, (method, path, answer.text)
            body = answer.json()
            assert ERROR_SHAPES[sim.dialect](body), body
            assert MESSAGE[sim.dialect](body).startswith("runner live model: refused, not sent to the vendor")
        assert records(up_log) == []  # nothing reached the upstream
        reached, _ = await converse(client, sim)  # and the column's model calls still do
        assert reached == ["files_read", "sharedos_escalate"]
    upstream = records(up_log)
    assert len(upstream) == 3 and all(r["request"]["client_auth"] == "placeholder" for r in upstream)  # the host key
    logged = records(live_log)
    refused = [r for r in logged if r["ended"] == "refused"]
    assert [(r["request"]["method"], r["response"]["status"]) for r in refused] == [
        (m, 403) for m, _, _ in HOSTILE_REQUESTS]
    assert all("is not a model call" in r["refused"] and "upstream" not in r for r in refused)
    assert [r["ended"] for r in logged if r not in refused] == ["complete"] * 3


@pytest.mark.anyio
async def test_the_forwarded_call_carries_no_account_header_and_the_model_list_is_answered_here(
    tmp_path: Path,
) -> None:
    sim = SimulatedCli("qwen", TOOLS)
    async with live_endpoint(tmp_path, "openai-chat") as (sock, up_log, live_log), uds_client(sock) as client:
        models = await client.get("/v1/models", headers=sim.headers(DEFAULT_PLACEHOLDER_KEY))
        assert models.status_code == 200 and [m["id"] for m in models.json()["data"]] == ["vendor-model-1"]
        answer = await client.post(
            "/v1/chat/completions?key=query-key&organization=org-other", json=sim.request(),
            headers={**sim.headers(DEFAULT_PLACEHOLDER_KEY), "openai-organization": "org-other",
                     "openai-project": "proj-other", "cookie": "session=cookie-value-7d1e"})
        assert answer.status_code == 200
    (reached,) = records(up_log)  # the model list never reached it
    assert reached["request"]["query"] == ""
    assert not {"openai-organization", "openai-project", "cookie"} & set(reached["request"]["headers"])
    listed, forwarded = records(live_log)
    assert listed["local"] == "GET /v1/models" and "upstream" not in listed
    assert forwarded["upstream"]["dropped"] == {"headers": ["openai-organization", "openai-project", "cookie"],
                                                "query": ["key", "organization"]}
    assert "cookie-value-7d1e" not in live_log.read_text() + up_log.read_text()


@pytest.mark.anyio
async def test_a_call_the_vendor_has_not_begun_to_answer_when_the_endpoint_stops_is_logged_server_stopped(
    tmp_path: Path,
) -> None:
    """The turn ends (the endpoint stops) while the vendor holds a model call unanswered: runner answers it 503 and
    logs it ``server_stopped`` (what says a model answer was still pending: ``vendor_timeout``), never a request
    cancelled at the server's shutdown with nothing logged."""
    sim = SimulatedCli("qwen", TOOLS)
    sock, live_log = tmp_path / "model.sock", tmp_path / "live.jsonl"
    environ = {HOST_VAR: HOST_SECRET}
    reached = anyio.Event()

    async def hold(conn: anyio.abc.SocketStream) -> None:  # a vendor that reads the call and never answers
        async with conn:
            await conn.receive()
            reached.set()
            await anyio.sleep_forever()

    answers: list[httpx2.Response] = []
    async with await anyio.create_tcp_listener(local_host="127.0.0.1") as silent, anyio.create_task_group() as tg:
        tg.start_soon(silent.serve, hold)
        port = silent.extra(anyio.abc.SocketAttribute.local_port)
        live = LiveModel(base_url=f"http://127.0.0.1:{port}", credentials=[HOST_VAR], model="vendor-model-1")
        config = ModelEndpointConfig(mode=ModelMode.LIVE, live=live, scrubber=Scrubber(environ, [HOST_VAR]),
                                     environ=environ, dialect="openai-chat")
        async with uds_client(sock) as client, anyio.create_task_group() as calls:

            async def call() -> None:
                answers.append(await client.post("/v1/chat/completions", json=sim.request(),
                                                 headers=sim.headers(DEFAULT_PLACEHOLDER_KEY)))

            async with serve_model(sock, config, live_log):
                calls.start_soon(call)
                with anyio.fail_after(10):
                    await reached.wait()
            # the endpoint has stopped, the call still unanswered by the vendor
        tg.cancel_scope.cancel()
    (answer,) = answers
    assert answer.status_code == 503 and "stopped while the vendor's answer was pending" in answer.text
    (logged,) = records(live_log)
    assert logged["ended"] == "server_stopped" and logged["response"]["status"] == 503
    assert logged["side_request"] is False  # a conversation request: measure reads it as pending at the end
