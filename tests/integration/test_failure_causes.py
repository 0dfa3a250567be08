"""Each cause of a failed attempt comes from a real turn, and shows where a user reads it (issue 31: done when each
cause in the vocabulary is produced by a real turn in a test and shows in the reports; a retried cell shows every
attempt).

One ``runner run -j 2 --retries 1 --model-fault error@1`` through the product's own command, on the reference image
(no build), with this test's own columns in a ``--profiles-dir``; each column's one cell (the escalation row) ends
by one cause, from what its CLI really did in the real engine:

- ``cause-fault``: opens its MCP session and asks the scripted model with the catalogue's tools; the model answers
  the run's fault (500) and the CLI gives up: ``model_api (scripted_fault)``, not retried;
- ``cause-oom``: allocates past the box's memory limit; the kernel kills it and the engine says so (its
  ``State.OOMKilled``): ``sandbox (oom_killed)``, retried, and killed again (both attempts kept);
- ``cause-silent``: never opens its MCP session: ``cli (mcp_never_opened)``, never retried;
- ``cause-toolless``: opens its MCP session and asks the model without offering it the catalogue's tools:
  ``cli (tools_never_offered)``, never retried;
- ``cause-hang``: ignores SIGTERM and runs past its deadline: ``deadline (deadline)``, never retried;
- ``cause-removed``: the reference client behind a short sleep; the test removes its first container while it runs
  (as ``docker rm -f`` or another machine's ``runner gc --run`` would): ``engine (container_removed)``, retried, and
  the second attempt plays the reference client's script and passes.

The fault is the run's (every cell's model is the scripted one, every column declares one): it fires on the first
request that carries the catalogue's tools (a conversation request), so only ``cause-fault`` meets it (the toolless
CLI's request is a side request, never faulted; the others ask no model).

The same for the model API's own causes in live mode: one ``runner run --model live -j 2 --retries 1`` against a
local vendor (``RUNNER_LIVE_BASE_URL``) that answers each column's one model call as its prompt picks: 429
(``vendor_rate_limited``), 503 (``vendor_error``), 401 (``vendor_refused``), a dropped connection
(``vendor_unreachable``: runner's own 502), or nothing before the CLI's deadline (``vendor_timeout``); the ones a
retry may cure are retried, and every attempt is kept.

Asserted from the product's outputs alone, in no order of the concurrent cells: each cell's ``result.json`` (its
failure's cause, kind, rules and evidence, per attempt in ``cellAttempts``), the Markdown report's "Failed attempts
by cause, per harness" table and ``junit.xml`` (each cell's failure or error typed by its kind).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import docker
import pytest
import yaml

from runner.images import ImageRecord
from runner.sandbox.lease import LEASE_LABEL
from tests.support import RUNNER, no_containers_left, runner_exec

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

REMOVED = "cause-removed"
MODEL = {"dialect": "openai-chat"}  # every column talks to the scripted model: the run's --model-fault needs one

# one small CLI for the two columns that speak to MCP and the model themselves: ``fault`` offers the catalogue's
# tools (as Claude Code names them), ``hide`` offers none
SPEAKER = r'''
import asyncio, json, socket, sys
from mcp import ClientSession, StdioServerParameters, stdio_client

def say(kind, **fields):
    print(json.dumps({"type": kind, **fields}), flush=True)

async def catalogue(mcp_socket):
    params = StdioServerParameters(command="socat", args=["STDIO", "UNIX-CONNECT:" + mcp_socket])
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            return [tool.name for tool in (await session.list_tools()).tools]

def ask(body):
    data = json.dumps(body).encode()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.connect("/run/runner/model.sock")
    sock.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: model\r\nConnection: close\r\n"
                 b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
    answer = b""
    while True:
        chunk = sock.recv(65536)
        if not chunk:
            break
        answer += chunk
    return int(answer.split(b" ", 2)[1])

mode, mcp_socket = sys.argv[1], sys.argv[2]
names = asyncio.run(catalogue(mcp_socket))
if mode == "quiet":  # reached its tools, never asked the model: the judge grades what it did
    sys.exit(say("turn.completed", text="nothing to do"))
if mode == "failing":  # a failure of its own
    sys.exit(say("turn.failed", error={"code": "cause_own_failure", "message": "it gave up"}))
if mode == "startup":  # connected, and says its server was not
    sys.exit(say("session.started", mcp_servers=[{"name": "sharedos", "status": "failed", "error": "said so"}]))
tools = [{"type": "function", "function": {"name": "mcp__sharedos__" + name.replace(".", "_"),
                                           "parameters": {"type": "object"}}} for name in names]
body = {"model": "runner-scripted", "messages": [{"role": "user", "content": "go"}]}
status = ask({**body, "tools": tools} if mode == "fault" else body)
say("message", text="%d tools listed; the model answered %d" % (len(names), status))
if status != 200:
    sys.exit(1)  # the model is gone: this CLI gives up
say("turn.completed", text="done")
'''


# each column's failure: cause, kind, retried, counts, and a piece of its evidence line
EXPECTED: dict[str, tuple[str, str, bool, bool, str]] = {
    "cause-fault": ("model_api", "scripted_fault", False, True, "answered 1 request with the injected fault"),
    "cause-oom": ("sandbox", "oom_killed", True, False, "the engine reports the container OOM-killed (exit code 137)"),
    "cause-silent": ("cli", "mcp_never_opened", False, True, "never opened an MCP session on the mounted socket; it "
                                                             "made 0 model requests"),
    "cause-startup": ("cli", "mcp_startup_failed", False, True, "reported its MCP server not connected (sharedos: "
                                                                "said so)"),
    "cause-toolless": ("cli", "tools_never_offered", False, True, "opened 1 MCP session and made 1 model request, "
                                                                  "none of which offered"),
    "cause-garbled": ("cli", "malformed_output", False, True, "printed 2 frames runner could not read"),
    "cause-crash": ("cli", "crashed", False, True, "the CLI exited with code 3 and no outcome"),
    "cause-failing": ("cli", "reported_failure", False, True, "its own failure cause_own_failure (exit code 0)"),
    "cause-quiet": ("cli", "conduct", False, True, "the judge graded it not exercised"),
    "cause-hang": ("deadline", "deadline", False, True, "the turn deadline stopped the CLI after 0 model requests "
                                                        "(exit code 137)"),
}


def columns() -> dict[str, dict[str, Any]]:
    """This test's columns on the reference image, by id (each one's profile)."""
    speaker = {"home": "turn", "config_files": [{"path": "speaker.py", "content": SPEAKER}],
               "prompt": {"via": "none"}, "interpreter": "jsonl", "requires_mcp_session": True,
               "default_deadline_seconds": 60}
    reference = yaml.safe_load((Path(__file__).resolve().parents[2] / "runner" / "harnesses" / "reference" /
                                "reference.yaml").read_text())
    return {
        "cause-fault": {**speaker, "argv": ["/opt/venv/bin/python", "${home}/speaker.py", "fault", "${mcp_socket}"]},
        "cause-toolless": {**speaker, "argv": ["/opt/venv/bin/python", "${home}/speaker.py", "hide",
                                               "${mcp_socket}"]},
        "cause-quiet": {**speaker, "argv": ["/opt/venv/bin/python", "${home}/speaker.py", "quiet", "${mcp_socket}"]},
        "cause-failing": {**speaker, "argv": ["/opt/venv/bin/python", "${home}/speaker.py", "failing",
                                              "${mcp_socket}"]},
        "cause-startup": {**speaker, "argv": ["/opt/venv/bin/python", "${home}/speaker.py", "startup",
                                              "${mcp_socket}"]},
        "cause-crash": {"argv": ["/bin/sh", "-c", "echo crashing; exit 3"], "prompt": {"via": "none"},
                        "interpreter": "jsonl", "requires_mcp_session": False, "default_deadline_seconds": 60},
        "cause-garbled": {"argv": ["/bin/sh", "-c", "echo '{\"type\": \"message\", broken'; echo '{\"type\": oops'"],
                          "prompt": {"via": "none"}, "interpreter": "jsonl", "requires_mcp_session": False,
                          "default_deadline_seconds": 60},
        "cause-oom": {"argv": ["/opt/venv/bin/python", "-c", "print('allocating', flush=True)\nheld = []\n"
                                                              "while True: held.append(b'x' * (64 << 20))"],
                      "prompt": {"via": "none"}, "interpreter": "jsonl", "requires_mcp_session": False,
                      "default_deadline_seconds": 60},
        "cause-silent": {"argv": ["/bin/sh", "-c", "echo '{\"type\": \"turn.completed\", \"text\": \"done\"}'"],
                         "prompt": {"via": "none"}, "interpreter": "jsonl", "requires_mcp_session": True,
                         "default_deadline_seconds": 60},
        "cause-hang": {"argv": ["/bin/sh", "-c", "trap '' TERM; echo hanging; while :; do sleep 1; done"],
                       "prompt": {"via": "none"}, "interpreter": "exit-code", "requires_mcp_session": False,
                       "default_deadline_seconds": 4},
        REMOVED: {**{k: v for k, v in reference.items() if k not in ("id", "label", "cell_seconds")},
                  "argv": ["/bin/sh", "-c", 'sleep 4; exec "$$@"', "sh", *reference["argv"]]},
    }


def write_profiles(directory: Path) -> list[str]:
    directory.mkdir()
    for column, profile in columns().items():
        body = {"id": column, "label": f"{column} (tests only)", "image": "reference", "model": MODEL,
                "wind_down": {"grace_seconds": 1}, **profile}
        (directory / f"{column}.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    return sorted(columns())


def removed_cell_containers(engine: docker.DockerClient, tmpdir: Path) -> list[Any]:
    """The removed column's turn containers of this test's runner (its lease in ``tmpdir``), probes left out."""
    found = engine.containers.list(all=True, sparse=True, filters={"label": [f"runner.harness={REMOVED}"]})
    labels = [(c, c.attrs.get("Labels") or {}) for c in found]
    return [c for c, label in labels
            if str(label.get(LEASE_LABEL, "")).startswith(f"{tmpdir}/") and "runner.probe" not in label]


def cause_table(report: str) -> dict[str, dict[str, str]]:
    """The Markdown report's "Failed attempts by cause, per harness" table: harness -> cause -> its cell's text."""
    lines = report.split("## Failed attempts by cause, per harness", 1)[1].strip().splitlines()
    header = [h.strip() for h in lines[0].strip("|").split("|")]
    rows: dict[str, dict[str, str]] = {}
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0]] = {h: c for h, c in zip(header[1:], cells[1:], strict=True) if c}
    return rows


def test_one_run_ends_each_cell_by_its_own_cause_from_a_real_turn_and_every_report_says_which(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    harnesses = write_profiles(tmp_path / "profiles")
    tmpdir, out = tmp_path / "tmp", tmp_path / "out"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir)}
    env.pop("RUNNER_PROFILES_DIR", None)
    removed: list[str] = []
    started = time.monotonic()
    with open(tmp_path / "stdout", "wb") as stdout, open(tmp_path / "stderr", "wb") as stderr:
        proc = subprocess.Popen(
            [RUNNER, "run", "--harness", ",".join(harnesses), "--case", "escalation", "-j", "2", "--retries", "1",
             "--model-fault", "error@1", "--profiles-dir", str(tmp_path / "profiles"), "--out", str(out)],
            stdout=stdout, stderr=stderr, env=env, start_new_session=True)
        try:
            while proc.poll() is None:  # the removed column's first container, once it runs, goes (once)
                if not removed:
                    running = [c for c in removed_cell_containers(engine, tmpdir) if c.attrs.get("State") == "running"]
                    if running:
                        engine.api.remove_container(running[0].id, force=True)
                        removed.append(running[0].id)
                time.sleep(0.2)
        finally:
            if proc.poll() is None:
                os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
    wall = time.monotonic() - started
    said, complaints = (tmp_path / "stdout").read_text(), (tmp_path / "stderr").read_text()
    found = {p.parent.name.rsplit(".", 1)[1]: json.loads(p.read_text()) for p in out.glob("*/result.json")}
    print(f"\n{len(harnesses)} cells in {wall:.0f} s")
    for column, result in sorted(found.items()):
        print(f"  {column}: {result.get('failure')}, {result.get('infrastructureError')}, "
              f"{len(result.get('cellAttempts') or [1])} attempt(s)")

    assert "Traceback" not in complaints, complaints[-3000:]
    assert removed, "the removed column's container was seen running, and removed"
    assert sorted(found) == harnesses, said + complaints[-3000:]
    assert proc.returncode == 5, complaints[-3000:]  # cells with infrastructure errors (CLIs that never reached MCP)

    def failure(column: str) -> dict[str, Any]:
        body: dict[str, Any] = found[column]["failure"]
        return body

    for column, (cause, kind, retried, counts, evidence) in EXPECTED.items():
        got = failure(column)
        assert (got["cause"], got["kind"], got["retried"], got["counts"]) == (cause, kind, retried, counts), (
            column, got)
        assert evidence in got["evidence"], (column, got["evidence"])  # the evidence says what the turn showed
    assert found["cause-hang"]["turn"]["deadlineHit"] is True

    # a cause that is not retried ran once; the OOM kill was retried, and killed again: both attempts are kept
    for column in set(EXPECTED) - {"cause-oom"}:
        assert "cellAttempts" not in found[column], column
    oom = found["cause-oom"]["cellAttempts"]
    assert [a["attempt"] for a in oom] == [1, 2] and oom[0]["files"] == "attempt-1"
    assert oom[0]["failure"]["kind"] == "oom_killed" and oom[0]["failure"]["retried"] is True

    # the removed container's attempt is kept with its cause; the second attempt played the script and passed
    passed = found[REMOVED]
    assert passed["grade"]["status"] == "pass" and "failure" not in passed
    first, second = passed["cellAttempts"]
    assert first["infrastructureError"]["kind"] == "container_removed", first
    assert removed[0] in first["infrastructureError"]["detail"]
    assert (first["failure"]["cause"], first["failure"]["kind"], first["failure"]["retried"]) == (
        "engine", "container_removed", True)
    assert second["attempt"] == 2 and second["status"] == "pass"

    # the Markdown report: each harness's failed attempts by cause, every attempt of a retried cell counted
    report = (out / "report.md").read_text()
    table = {column: {cause.replace("_", " "): f"{1 + (column == 'cause-oom')} ({kind} {1 + (column == 'cause-oom')})"}
             for column, (cause, kind, *_) in EXPECTED.items()}
    assert cause_table(report) == {**table, REMOVED: {"engine": "1 (container_removed 1)"}}, report
    assert f"- `escalation.baseline.{REMOVED}` (pass after 2 attempts)" in report

    # junit.xml: each failing cell's failure (or, for an infrastructure error, error) typed by its kind
    suites = ET.parse(out / "junit.xml").getroot()
    typed: dict[str, tuple[str, str | None]] = {}
    for suite in suites.iter("testsuite"):
        (case,) = suite.iter("testcase")
        ending = next((e for e in case if e.tag in ("failure", "error")), None)
        typed[suite.get("name", "")] = (ending.tag, ending.get("type")) if ending is not None else ("ok", None)
    assert typed == {**{column: ("error" if found[column].get("infrastructureError") else "failure", kind)
                        for column, (_, kind, *_) in EXPECTED.items()}, REMOVED: ("ok", None)}, typed
    # the infrastructure errors are the CLI's that never reached its tools: the sandbox's OOM kill is a graded turn
    assert {c for c in EXPECTED if found[c].get("infrastructureError")} == {"cause-silent", "cause-startup"}


# live mode: a CLI that makes one model call with the catalogue's tools, the upstream's answer chosen by its prompt
CALLER = r'''
import http.client, json, socket, sys

class Unix(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect("/run/runner/model.sock")

answer, key = sys.argv[1], sys.argv[2]
tools = [{"type": "function", "function": {"name": "mcp__sharedos__files_read", "parameters": {"type": "object"}}}]
body = {"model": "gpt-4.1", "stream": False, "messages": [{"role": "user", "content": answer}], "tools": tools}
conn = Unix("localhost", timeout=600)
conn.request("POST", "/v1/chat/completions", body=json.dumps(body),
             headers={"content-type": "application/json", "authorization": "Bearer " + key})
status = conn.getresponse().status
print(json.dumps({"type": "message", "text": "the model answered %d" % status}), flush=True)
sys.exit(0 if status == 200 else 1)
'''
LIVE_MODEL = {"dialect": "openai-chat", "live": {"base_url": "https://api.openai.com/v1",
                                                 "credentials": ["OPENAI_API_KEY"], "auth": "bearer",
                                                 "model": "gpt-4.1"}}
# each live column: what the upstream does with its call, and the failure it ends with (cause, kind, retried,
# counts, a piece of its evidence)
LIVE: dict[str, tuple[str, tuple[str, str, bool, bool, str]]] = {
    "vendor-429": ("429", ("model_api", "vendor_rate_limited", True, False, "answered the last model request 429")),
    "vendor-503": ("503", ("model_api", "vendor_error", True, False, "answered the last model request 503")),
    "vendor-401": ("401", ("model_api", "vendor_refused", False, False, "refused the last model request with 401")),
    "vendor-drop": ("drop", ("model_api", "vendor_unreachable", True, False, "could not reach the vendor")),
    "vendor-stall": ("stall", ("model_api", "vendor_timeout", True, False,
                               "a model answer was still pending when the deadline stopped the CLI")),
}


class Vendor(BaseHTTPRequestHandler):
    """A vendor that answers each model call as its prompt says: a status, a dropped connection, or nothing."""

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
        answer = str(body["messages"][0]["content"])
        if answer == "drop":
            self.close_connection = True
            return  # no answer at all: the connection closes under the request
        if answer == "stall":
            time.sleep(30)  # past the CLI's deadline
            return
        data = json.dumps({"error": {"message": f"the vendor says {answer}", "type": "test"}}).encode()
        self.send_response(int(answer))
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


def test_an_oom_kill_under_gvisor_is_the_sandboxs_too(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    """Under runsc the box's memory limit is enforced around gVisor's own kernel; the engine still reports the kill
    (``State.OOMKilled``), so the attempt is the sandbox's (retried, not counted), never read as the CLI's crash."""
    profile = tmp_path / "cause-oom.yaml"
    body = {"id": "cause-oom", "label": "cause-oom (tests only)", "image": "reference",
            "wind_down": {"grace_seconds": 1}, **columns()["cause-oom"]}
    profile.write_text(yaml.safe_dump(body, sort_keys=False))
    report = runner_exec(tmp_path, "--profile", str(profile), "--case", "escalation", "--runtime", "runsc")
    assert report["exitCode"] == 137 and report["infrastructureError"] is None, report
    assert report["failure"] == {"cause": "sandbox", "kind": "oom_killed", "retried": True, "counts": False,
                                 "evidence": "the engine reports the container OOM-killed (exit code 137)"}
    no_containers_left(engine, report)


@pytest.fixture()
def vendor() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Vendor)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_live_run_names_each_vendor_failure_from_the_vendors_own_answer(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord, vendor: str
) -> None:
    """``runner run --model live -j 2 --retries 1`` against a local vendor that answers each column's one model call
    429, 503, 401, with a dropped connection, or not before the deadline: each cell's failure is the model API's,
    by the vendor's answer as runner forwarded it (the ones a retry may cure, retried: every attempt kept)."""
    directory = tmp_path / "profiles"
    directory.mkdir()
    for column, (answer, _) in LIVE.items():
        body = {"id": column, "label": f"{column} (tests only)", "image": "reference", "model": LIVE_MODEL,
                "home": "turn", "config_files": [{"path": "caller.py", "content": CALLER}],
                "argv": ["/opt/venv/bin/python", "${home}/caller.py", answer, "${api_key}"],
                "prompt": {"via": "none"}, "interpreter": "jsonl", "requires_mcp_session": False,
                "credentials": ["OPENAI_API_KEY"], "default_deadline_seconds": 8 if answer == "stall" else 60,
                "wind_down": {"grace_seconds": 1}}
        (directory / f"{column}.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
    tmpdir, out = tmp_path / "tmp", tmp_path / "out"
    tmpdir.mkdir()
    env = {**os.environ, "TMPDIR": str(tmpdir), "OPENAI_API_KEY": "sk-runner-FAKE-causes-0123456789",
           "RUNNER_LIVE_BASE_URL": vendor}
    env.pop("RUNNER_PROFILES_DIR", None)
    started = time.monotonic()
    proc = subprocess.run([RUNNER, "run", "--harness", ",".join(sorted(LIVE)), "--case", "escalation", "--model",
                           "live", "-j", "2", "--retries", "1", "--profiles-dir", str(directory), "--out", str(out)],
                          capture_output=True, text=True, env=env, timeout=240)
    wall = time.monotonic() - started
    found = {p.parent.name.rsplit(".", 1)[1]: json.loads(p.read_text()) for p in out.glob("*/result.json")}
    print(f"\n{len(LIVE)} live cells in {wall:.0f} s")
    for column, result in sorted(found.items()):
        print(f"  {column}: {result.get('failure')}, {len(result.get('cellAttempts') or [1])} attempt(s)")
    assert "Traceback" not in proc.stderr, proc.stderr[-3000:]
    assert sorted(found) == sorted(LIVE), proc.stdout + proc.stderr[-3000:]
    assert proc.returncode == 1, proc.stderr[-3000:]  # graded turns, all failing: the gate's verdict, no infra error

    for column, (_, (cause, kind, retried, counts, evidence)) in LIVE.items():
        got = found[column]["failure"]
        assert (got["cause"], got["kind"], got["retried"], got["counts"]) == (cause, kind, retried, counts), (
            column, got)
        assert evidence in got["evidence"], (column, got["evidence"])
        attempts = found[column].get("cellAttempts")
        if retried:  # tried again, and the vendor said the same: both attempts kept, the first with its cause
            assert [a["attempt"] for a in attempts] == [1, 2], column
            assert attempts[0]["failure"]["kind"] == kind, (column, attempts[0])
        else:
            assert attempts is None, column

    report = (out / "report.md").read_text()
    assert cause_table(report) == {
        column: {"model api": f"{1 + retried} ({kind} {1 + retried})"}
        for column, (_, (_, kind, retried, *_)) in LIVE.items()}, report
    typed = {suite.get("name"): [e.get("type") for e in suite.iter() if e.tag in ("failure", "error")]
             for suite in ET.parse(out / "junit.xml").getroot().iter("testsuite")}
    assert typed == {column: [kind] for column, (_, (_, kind, *_)) in LIVE.items()}, typed
