"""Live mode, offline: the CLI's requests reach an upstream with the HOST's credential, the container
only ever holds the placeholder, and no credential appears in any file the run wrote.

No vendor API is reachable here, so the upstream is local: runner's own scripted endpoint
(``python -m runner.model``) on loopback, behind a small recording front that notes the
credential each request carried. Claude Code is the CLI: live, it keeps its MCP tools direct
(``ENABLE_TOOL_SEARCH=false``), so the scripted upstream can play the whole turn. (Codex, live,
asks a known model slug and defers MCP tools behind tool_search, which only a real model plays.)
``RUNNER_LIVE_BASE_URL`` points the profile's live endpoint at it.

The front also echoes the credential it received back into the model's answer on purpose (split
across two streamed events, as a real model's tokens would be), so the key really reaches the CLI:
Claude Code prints it in its stdout frames, keeps it in its session transcript, sends it back in the
next request's history, and the exchange log sees it in the response. Nothing written may hold it.

The front records every request that reaches it (any method), so the tests also see what live mode forwards: each
column's model calls with only the headers a model call needs (runner.model.live_policy), and, from a hostile CLI
in a real container (tests/hostile/live-proxy.yaml), nothing but its one model call.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import docker
import pytest

from runner.conformance.behaviours import Behaviour, actions_for
from runner.conformance.cases import get_case
from tests.support import RUNNER

REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

HOST_KEY = "sk-runner-FAKE-0123456789abcdef"
MARK = "[scrubbed:ANTHROPIC_API_KEY]"
REASON = "outside this agent's authority"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class Reached:
    """One request as it reached the upstream: what the vendor would have seen."""

    method: str
    path: str  # with its query
    headers: dict[str, str]  # names lower-cased


@dataclass
class Upstream:
    url: str
    seen: list[str]  # the credential each model call carried
    echo: set[str] = field(default_factory=lambda: {"text"})  # "text": the answer's prose; "reason": the ask's
    reached: list[Reached] = field(default_factory=list)  # every request, any method


def echo_credential(body: bytes, credential: str, where: set[str]) -> bytes:
    """The scripted answer with the credential the front received put back into it."""
    text = body.decode()
    if "reason" in where:  # inside the escalate call's streamed arguments
        text = text.replace(REASON, f"{REASON} (key {credential})")
    if "text" not in where:
        return text.encode()
    blocks = []
    for block in text.split("\n\n"):
        data = next((line[6:] for line in block.splitlines() if line.startswith("data: ")), None)
        delta = json.loads(data).get("delta", {}) if data and data.startswith("{") else {}
        if delta.get("type") != "text_delta":
            blocks.append(block)
            continue
        for piece in (f"{delta['text']} The key I was given is {credential[:12]}", f"{credential[12:]}."):
            event = {**json.loads(data or "{}"), "delta": {"type": "text_delta", "text": piece}}
            blocks.append(f"event: content_block_delta\ndata: {json.dumps(event)}")
    return "\n\n".join(blocks).encode()


@pytest.fixture()
def upstream(tmp_path: Path) -> Iterator[Upstream]:
    """A scripted upstream on loopback behind a front that records each request's credential and
    echoes it into the answer."""
    script = tmp_path / "actions.json"
    actions = actions_for(get_case("escalation"), Behaviour.COOPERATIVE, issue_uncatalogued=False)
    script.write_text(json.dumps([a.to_json() for a in actions]))
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "runner.model", "--actions", str(script), "--port", str(port),
         "--log", str(tmp_path / "upstream.jsonl")],
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while True:
        assert proc.poll() is None, f"the scripted upstream exited ({proc.returncode}): port {port} taken meanwhile?"
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            if time.monotonic() >= deadline:
                proc.kill()
                pytest.fail(f"the scripted upstream did not listen on port {port} within 20 s")
            time.sleep(0.1)
    state = Upstream("", [])

    class Front(BaseHTTPRequestHandler):
        def record(self) -> None:
            headers = {name.lower(): value for name, value in self.headers.items()}
            state.reached.append(Reached(self.command, self.path, headers))

        def do_other(self) -> None:
            """Anything but a POST: a vendor would have done it (deleted the file, listed the keys)."""
            self.record()
            self.rfile.read(int(self.headers.get("content-length", 0) or 0))
            data = b'{"done": true}'
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_DELETE = do_PUT = do_PATCH = do_OPTIONS = do_other

        def do_POST(self) -> None:
            self.record()
            credential = self.headers.get("x-api-key", "") or self.headers.get("authorization", "")
            state.seen.append(credential)
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", self.path, body, {"content-type": "application/json"})
            answer = conn.getresponse()
            data = answer.read()
            if answer.getheader("content-type", "").startswith("text/event-stream"):
                data = echo_credential(data, credential, state.echo)
            self.send_response(answer.status)
            self.send_header("content-type", answer.getheader("content-type", "application/json"))
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    front = ThreadingHTTPServer(("127.0.0.1", 0), Front)
    threading.Thread(target=front.serve_forever, daemon=True).start()
    state.url = f"http://127.0.0.1:{front.server_address[1]}"
    try:
        yield state
    finally:
        front.shutdown()
        proc.terminate()
        proc.wait(timeout=10)


def assert_no_key(out: Path, proc: subprocess.CompletedProcess[str]) -> list[Path]:
    """No file under ``out`` and nothing runner printed holds the key (or the half of it that one
    streamed piece carries); the files, for further checks."""
    written = [p for p in out.rglob("*") if p.is_file()]
    assert written
    texts = {str(p.relative_to(out)): p.read_bytes().decode("utf-8", "replace") for p in written}
    texts.update({"runner stdout": proc.stdout, "runner stderr": proc.stderr})
    leaks = [name for name, text in texts.items() if HOST_KEY in text or HOST_KEY[12:] in text]
    assert leaks == [], f"the host credential (or a streamed piece of it) is in: {leaks}"
    return written


def live_exec(upstream: Upstream, tmp_path: Path, harness: str, credential: str, out: Path,
              *flags: str) -> tuple[dict[str, str], subprocess.CompletedProcess[str]]:
    """``runner exec`` of the escalation cell on the live model (the local upstream), with the host key in
    ``credential``: the environment it ran in and the finished process, which must have exited 0. ``harness``: a
    column, or a profile file (``--profile``)."""
    env = {**os.environ, credential: HOST_KEY, "RUNNER_LIVE_BASE_URL": upstream.url, "TMPDIR": str(tmp_path)}
    harness = ["--profile", harness] if harness.endswith(".yaml") else ["--harness", harness]
    proc = subprocess.run(
        [RUNNER, "exec", *harness, "--case", "escalation", "--json", *flags, "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    return env, proc


# what reaches the vendor besides the model call's own headers: the connection's, and the host's credential
CONNECTION = {"host", "connection", "content-length", "accept-encoding"}
# the headers a model call needs, per dialect (runner.model.live_policy), as the measured columns send them
NEEDED = {"content-type", "accept", "user-agent"}
ANTHROPIC_BETAS = ("claude-code-20250219,interleaved-thinking-2025-05-14,context-management-2025-06-27,"
                   "per-turn-control-2026-07-01,mid-conversation-tool-changes-2026-07-01,"
                   "thinking-token-count-2026-05-13,effort-2025-11-24,thinking-display-updates-2026-08-18")


def assert_only_model_calls(upstream: Upstream, path: str, credential_header: str, *dialect_headers: str) -> None:
    """Every request that reached the upstream is the column's model call (``path``, its query included), with the
    host's key and only the headers a model call needs: nothing the CLI adds about itself, its session or its
    account (the measured columns send x-stainless-*, x-app, session and user ids; see docs/live-mode.md)."""
    assert upstream.reached, "the column's model calls reached the upstream"
    assert {(r.method, r.path) for r in upstream.reached} == {("POST", path)}, upstream.reached
    allowed = CONNECTION | NEEDED | {credential_header, *dialect_headers}
    for request in upstream.reached:
        assert set(request.headers) <= allowed, set(request.headers) - allowed
        assert request.headers[credential_header] in (HOST_KEY, f"Bearer {HOST_KEY}")
        assert request.headers["accept-encoding"] == "identity"


def test_live_and_replayed_the_host_key_echoed_by_the_model_leaks_nowhere(
    tmp_path: Path, engine: docker.DockerClient, upstream: Upstream
) -> None:
    out = tmp_path / "out"
    env, proc = live_exec(upstream, tmp_path, "claude-code", "ANTHROPIC_API_KEY", out, "--keep")
    report = json.loads(proc.stdout)
    try:
        assert report["model"]["mode"] == "live" and report["model"]["credential"] == "ANTHROPIC_API_KEY"
        assert report["status"] == "escalated"
        assert upstream.seen and all(header == HOST_KEY for header in upstream.seen), upstream.seen  # x-api-key
        assert_only_model_calls(upstream, "/v1/messages?beta=true", "x-api-key", "anthropic-version", "anthropic-beta")
        assert {r.headers["anthropic-beta"] for r in upstream.reached} == {ANTHROPIC_BETAS}, "every measured beta kept"
        # the container was only ever given the placeholder
        container = engine.containers.get(report["containerId"])
        env_text = "\n".join(container.attrs["Config"]["Env"])
        assert HOST_KEY not in env_text and "sk-runner-placeholder" in env_text
    finally:
        engine.containers.get(report["containerId"]).remove(force=True)
    written = assert_no_key(out, proc)

    # the key did reach everything on the way: the CLI's stdout, its own transcript, the exchange log
    def holds(name: str, needle: bytes) -> bool:
        return any(needle in p.read_bytes() for p in written if p.name == name or name in p.parts)

    assert holds("stdout.log", MARK.encode()), "Claude Code printed the echoed key (scrubbed)"
    assert MARK in json.dumps(report["outcome"]), "the CLI's final text, as runner reports it"
    assert holds("session", b"*" * len(HOST_KEY)), "Claude Code's own session transcript held the key (masked)"
    exchanges = (out / "model-exchanges.jsonl").read_text()
    assert MARK in exchanges, "the streamed answer (and the next request's history) held the key"

    # replay that recording with the key still in the host environment: nothing written holds it either
    replay_env = {**env, "RUNNER_LIVE_BASE_URL": "http://127.0.0.1:9"}  # nothing listens: a forward would fail
    replay = subprocess.run([RUNNER, "repro", str(out), "--json", "--out", str(tmp_path / "replayed")],
                            capture_output=True, text=True, env=replay_env, timeout=240)
    assert replay.returncode == 0, replay.stderr
    replayed = json.loads((tmp_path / "replayed" / "result.json").read_text())
    assert replayed["pins"]["modelMode"] == "replay" and replayed["turn"]["status"] == "escalated"
    assert_no_key(tmp_path / "replayed", replay)
    assert MARK.encode() in (tmp_path / "replayed" / "stdout.log").read_bytes()  # the marker is what was replayed


def test_the_host_key_echoed_into_the_ask_by_the_model_leaks_nowhere(
    tmp_path: Path, engine: docker.DockerClient, upstream: Upstream
) -> None:
    """The model puts the key in the escalation reason: it reaches the MCP server as a tool argument,
    the envelope's record, the result, and runner's own report."""
    upstream.echo = {"reason"}
    out = tmp_path / "out"
    _, proc = live_exec(upstream, tmp_path, "claude-code", "ANTHROPIC_API_KEY", out)
    assert_no_key(out, proc)
    assert MARK in (out / "record.json").read_text() and MARK in (out / "result.json").read_text()
    assert MARK in json.loads(proc.stdout)["escalation"]["reason"]


def _essence(record: dict[str, object]) -> dict[str, object]:
    """What a replay must reproduce: the turn's ending and every operation, minus minted ids and times."""
    execution = record["execution"]
    assert isinstance(execution, dict)
    ops = [{k: v for k, v in op.items() if k != "operationId"} for op in execution["operations"]]
    keep = ("status", "terminalReasonCode", "escalation", "callsAfterEscalation", "escalationAsked", "catalogHash")
    return {"operations": ops, **{k: execution.get(k) for k in keep}}


def test_a_live_cell_replays_offline_with_the_same_grade_and_record_and_a_tampered_one_is_refused(
    tmp_path: Path, engine: docker.DockerClient, upstream: Upstream
) -> None:
    cell = tmp_path / "live-cell"
    _, recorded = live_exec(upstream, tmp_path, "claude-code", "ANTHROPIC_API_KEY", cell, "--model", "live")
    assert json.loads(recorded.stdout)["grade"]["status"] == "pass" and upstream.seen
    original = json.loads((cell / "record.json").read_text())

    # offline: no upstream, no credential
    offline = {k: v for k, v in os.environ.items() if k not in ("ANTHROPIC_API_KEY", "RUNNER_LIVE_BASE_URL")}
    offline["RUNNER_LIVE_BASE_URL"] = "http://127.0.0.1:9"  # nothing listens: a forward would fail
    replay = subprocess.run([RUNNER, "repro", str(cell), "--json", "--out", str(tmp_path / "replayed")],
                            capture_output=True, text=True, env=offline, timeout=240)
    assert replay.returncode == 0, replay.stderr
    verdict = json.loads(replay.stdout)
    assert verdict["recorded"] == verdict["reproduced"] == "pass"
    replayed = json.loads((tmp_path / "replayed" / "result.json").read_text())
    assert replayed["pins"]["modelMode"] == "replay"
    assert _essence(json.loads((tmp_path / "replayed" / "record.json").read_text())) == _essence(original)

    # tamper with the recording: the replay stops at the first divergence and names it
    log = cell / "model-exchanges.jsonl"
    lines = log.read_text().splitlines()
    tampered = [line.replace('"Workspace", "policy.md"', '"Workspace", "secret.md"')
                .replace('\\"Workspace\\",\\"policy.md\\"', '\\"Workspace\\",\\"secret.md\\"') for line in lines]
    assert tampered != lines, "the recording names the control read's path"
    log.write_text("\n".join(tampered) + "\n")
    refused = subprocess.run([RUNNER, "repro", str(cell), "--out", str(tmp_path / "tampered")],
                             capture_output=True, text=True, env=offline, timeout=240)
    assert refused.returncode == 5
    assert "replay_diverged" in refused.stderr and "step" in refused.stderr
    assert "secret.md" in refused.stderr or "policy.md" in refused.stderr  # one unwrapped line names it


def test_deepseek_live_the_key_echoed_into_the_ask_leaks_nowhere_not_even_in_its_compressed_log(
    tmp_path: Path, engine: docker.DockerClient, upstream: Upstream
) -> None:
    """dsh, live with DEEPSEEK_API_KEY: the model puts the key in the escalation reason, so it reaches dsh's
    zstd session log, where no byte search could see it; the copy is scrubbed inside (runner/turn/collect.py)."""
    from runner.harnesses.deepseek.session import read_log, session_logs

    upstream.echo = {"reason"}
    out = tmp_path / "out"
    _, proc = live_exec(upstream, tmp_path, "deepseek", "DEEPSEEK_API_KEY", out)
    report = json.loads(proc.stdout)
    assert report["model"]["mode"] == "live" and report["model"]["credential"] == "DEEPSEEK_API_KEY"
    assert report["status"] == "escalated" and report["outcome"]["metadata"]["harnessOutcome"] == "complete"
    assert upstream.seen and all(header == f"Bearer {HOST_KEY}" for header in upstream.seen), upstream.seen
    assert_only_model_calls(upstream, "/v1/chat/completions", "authorization")
    assert_no_key(out, proc)
    mark = "[scrubbed:DEEPSEEK_API_KEY]"
    assert mark in json.loads(proc.stdout)["escalation"]["reason"]
    (log,) = session_logs(out / "session")
    events = json.dumps(read_log(log))
    assert HOST_KEY not in events and HOST_KEY[12:] not in events
    assert mark in events, "dsh's own log held the key (in the ask's arguments), scrubbed inside the zstd"


@pytest.mark.parametrize(
    ("harness", "credential", "path", "credential_header", "dialect_headers"),
    [
        ("gemini", "GEMINI_API_KEY", "/v1beta/models/gemini-2.5-pro:streamGenerateContent?alt=sse", "x-goog-api-key",
         ()),
        ("codex", "OPENAI_API_KEY", "/v1/responses", "authorization", ()),
    ],
)
def test_the_other_dialects_model_calls_reach_the_upstream_with_only_what_they_need(
    tmp_path: Path, engine: docker.DockerClient, upstream: Upstream, harness: str, credential: str, path: str,
    credential_header: str, dialect_headers: tuple[str, ...],
) -> None:
    """Gemini CLI (Gemini) and Codex (OpenAI Responses), live: each model call still reaches the vendor, without
    what the CLI says about itself (x-goog-api-client; Codex's session, thread and installation ids). Codex, live,
    asks a known model slug and defers its MCP tools behind tool_search, which only a real model plays: its turn
    ends in the model's prose, and what is checked is that its model call got through."""
    upstream.echo = set()  # the answers as the scripted upstream gives them
    out = tmp_path / "out"
    _, proc = live_exec(upstream, tmp_path, harness, credential, out, "--model", "live")
    assert json.loads(proc.stdout)["model"]["mode"] == "live"
    assert_only_model_calls(upstream, path, credential_header, *dialect_headers)
    logged = [json.loads(line) for line in (out / "model-exchanges.jsonl").read_text().splitlines()]
    assert logged and all(r["ended"] == "complete" and "refused" not in r for r in logged)
    assert_no_key(out, proc)


HOSTILE = "org-someone-else", "proj-someone-else", "hostile-cookie-value", "someone-elses-project", "hostile-query-key"


@pytest.mark.parametrize("transport", ["mount", "stream"])
def test_a_hostile_cli_in_the_box_gets_nothing_but_a_model_call_through(
    tmp_path: Path, engine: docker.DockerClient, upstream: Upstream, transport: str
) -> None:
    """From inside a real container, a CLI (tests/hostile/live-proxy.yaml) asks live mode's model endpoint to delete
    a file, list the organisation's admin keys as another organisation, upload a file, climb out of the model
    call's path with '..' (plain and percent-encoded), use another dialect's path, list the models, and make one
    model call as another organisation and project, with a cookie and an API key in the query. Only that model call
    reaches the vendor, and without any of what it added; everything else is answered by runner (403 in the
    dialect's error shape, or the model list naming the column's model alone) and logged as refused. On both
    transports: the model socket the container reaches is the turn dir's, bind-mounted or relayed."""
    out = tmp_path / "out"
    profile = str(REPO / "tests" / "hostile" / "live-proxy.yaml")
    _, proc = live_exec(upstream, tmp_path, profile, "OPENAI_API_KEY", out, "--model", "live", "--transport", transport)

    reached = upstream.reached
    assert [(r.method, r.path) for r in reached] == [("POST", "/v1/chat/completions")], reached
    (call,) = reached
    assert call.headers["authorization"] == f"Bearer {HOST_KEY}"
    assert not {"openai-organization", "openai-project", "cookie", "x-goog-user-project"} & set(call.headers)
    assert not any(word in json.dumps(call.headers) + call.path for word in HOSTILE)

    answers = {a["hostile"]: a for a in map(json.loads, (out / "stdout.log").read_text().splitlines())}
    refused = ["delete-file", "admin-keys", "upload-file", "climb-out", "climb-out-encoded", "other-dialect"]
    for name in refused:
        assert answers[name]["status"] == 403, answers[name]
        error = answers[name]["body"]["error"]  # OpenAI's error shape
        assert error["type"] == "invalid_request_error" and "refused, not sent to the vendor" in error["message"]
    assert answers["model-list"]["status"] == 200
    assert [m["id"] for m in answers["model-list"]["body"]["data"]] == ["gpt-4.1"]  # the column's model alone
    assert answers["model-call"]["status"] == 200

    logged = [json.loads(line) for line in (out / "model-exchanges.jsonl").read_text().splitlines()]
    ended = sorted((r["request"]["method"], r["request"]["path"], r["ended"]) for r in logged)
    assert ended == sorted([
        ("DELETE", "/v1/files/file-abc123", "refused"), ("GET", "/v1/organization/admin_api_keys", "refused"),
        ("POST", "/v1/files", "refused"), ("GET", "/v1/chat/completions/../../organization/admin_api_keys", "refused"),
        ("POST", "/v1/chat/completions/../../files", "refused"), ("POST", "/v1/messages", "refused"),
        ("GET", "/v1/models", "complete"), ("POST", "/v1/chat/completions", "complete"),
    ])
    assert all(r["response"]["status"] == 403 and r["refused"] for r in logged if r["ended"] == "refused")
    (forwarded,) = [r for r in logged if "upstream" in r]
    assert forwarded["upstream"]["dropped"] == {
        "headers": ["openai-organization", "openai-project", "cookie", "x-goog-user-project"],
        "query": ["key", "organization"],
    }
    assert "hostile-cookie-value" not in (out / "model-exchanges.jsonl").read_text()  # a cookie is never logged
    assert_no_key(out, proc)
