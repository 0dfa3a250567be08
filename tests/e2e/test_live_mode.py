"""Live mode, offline: the CLI's requests reach an upstream with the HOST's credential, the container
only ever holds the placeholder, and no credential appears in any file the run wrote.

No vendor API is reachable here, so the upstream is local: runner's own scripted endpoint
(``python -m runner.model``) on loopback, behind a small recording front that notes the
credential each request carried. Claude Code is the CLI: live, it keeps its MCP tools direct
(``ENABLE_TOOL_SEARCH=false``), so the scripted upstream can play the whole turn. (Codex, live,
asks a known model slug and defers MCP tools behind tool_search, which only a real model plays.)
``RUNNER_LIVE_BASE_URL`` points the profile's live endpoint at it.
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
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import docker
import pytest

from runner.conformance.behaviours import Behaviour, actions_for
from runner.conformance.cases import get_case
from tests.support import RUNNER

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

HOST_KEY = "sk-runner-test-HOSTKEY-7f3a9c2e1d"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.fixture()
def upstream(tmp_path: Path) -> Iterator[tuple[str, list[str]]]:
    """A scripted upstream on loopback behind a front that records each request's credential."""
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
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            break
        except OSError:
            time.sleep(0.1)
    seen: list[str] = []

    class Front(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            seen.append(self.headers.get("x-api-key", "") or self.headers.get("authorization", ""))
            body = self.rfile.read(int(self.headers.get("content-length", 0)))
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", self.path, body, {"content-type": "application/json"})
            answer = conn.getresponse()
            data = answer.read()
            self.send_response(answer.status)
            self.send_header("content-type", answer.getheader("content-type", "application/json"))
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *args: object) -> None:
            pass

    front = ThreadingHTTPServer(("127.0.0.1", 0), Front)
    threading.Thread(target=front.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{front.server_address[1]}", seen
    finally:
        front.shutdown()
        proc.terminate()
        proc.wait(timeout=10)


def test_live_mode_uses_the_host_credential_and_leaks_it_nowhere(
    tmp_path: Path, engine: docker.DockerClient, upstream: tuple[str, list[str]]
) -> None:
    base_url, seen = upstream
    out = tmp_path / "out"
    env = {**os.environ, "ANTHROPIC_API_KEY": HOST_KEY, "RUNNER_LIVE_BASE_URL": base_url, "TMPDIR": str(tmp_path)}
    proc = subprocess.run(
        [RUNNER, "exec", "--harness", "claude-code", "--case", "escalation", "--json", "--keep", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    try:
        assert report["model"]["mode"] == "live" and report["model"]["credential"] == "ANTHROPIC_API_KEY"
        assert report["status"] == "escalated"
        assert seen and all(header == HOST_KEY for header in seen), seen  # Anthropic's x-api-key
        # the container was only ever given the placeholder
        container = engine.containers.get(report["containerId"])
        env_text = "\n".join(container.attrs["Config"]["Env"])
        assert HOST_KEY not in env_text and "sk-runner-placeholder" in env_text
    finally:
        engine.containers.get(report["containerId"]).remove(force=True)
    written = [p for p in out.rglob("*") if p.is_file()]
    assert any(p.name == "model-exchanges.jsonl" for p in written)
    for path in written:
        assert HOST_KEY.encode() not in path.read_bytes(), f"{path} holds the host credential"
    assert HOST_KEY not in proc.stdout and HOST_KEY not in proc.stderr


def _essence(record: dict[str, object]) -> dict[str, object]:
    """What a replay must reproduce: the turn's ending and every operation, minus minted ids and times."""
    execution = record["execution"]
    assert isinstance(execution, dict)
    ops = [{k: v for k, v in op.items() if k != "operationId"} for op in execution["operations"]]
    keep = ("status", "terminalReasonCode", "escalation", "callsAfterEscalation", "escalationAsked", "catalogHash")
    return {"operations": ops, **{k: execution.get(k) for k in keep}}


def test_a_live_cell_replays_offline_with_the_same_grade_and_record_and_a_tampered_one_is_refused(
    tmp_path: Path, engine: docker.DockerClient, upstream: tuple[str, list[str]]
) -> None:
    base_url, seen = upstream
    cell = tmp_path / "live-cell"
    env = {**os.environ, "ANTHROPIC_API_KEY": HOST_KEY, "RUNNER_LIVE_BASE_URL": base_url}
    recorded = subprocess.run(
        [RUNNER, "exec", "--harness", "claude-code", "--case", "escalation", "--model", "live", "--json",
         "--out", str(cell)], capture_output=True, text=True, env=env, timeout=240,
    )
    assert recorded.returncode == 0, recorded.stderr
    assert json.loads(recorded.stdout)["grade"]["status"] == "pass" and seen
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
    assert "secret.md" in refused.stderr.replace("\n", "") or "policy.md" in refused.stderr.replace("\n", "")
