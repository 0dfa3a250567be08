"""Scripted mode: a credential set on the host never appears in anything a run writes.

In scripted mode nothing of the product carries a host variable into the turn: a profile's ``env``
and ``argv`` are rendered from runner's own placeholders only, the prompt comes from the case, and
the scripted model plays the case's actions. So the key is put there on purpose, the way it would
get there by mistake: a profile of the test's own (loaded from a path) hands it to the container
literally, and a small program in the reference image then spreads it everywhere it can reach.
It prints it on stdout and stderr in two writes each (so runner reads it in two chunks), writes it
into a session transcript and into a SQLite store whose pages split it, sends it to the scripted
model endpoint in a request body, and plays the reference harness with it in a tool call's
arguments and in its final text.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
from pathlib import Path

import docker
import pytest

from runner.images import ImageRecord
from tests.support import RUNNER

RUNTIME_ENV = "RUNNER_RUNTIME"  # the variable --runtime defaults to

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

KEY = "sk-runner-FAKE-0123456789abcdef"
MARK = "[scrubbed:ANTHROPIC_API_KEY]"

LEAKY = r'''
import http.client, json, os, socket, sqlite3, sys, time

key, home = os.environ["LEAKED"], os.environ["HOME"]

def in_two_writes(stream, text):
    cut = text.index(key) + 9
    stream.write(text[:cut]); stream.flush(); time.sleep(0.3); stream.write(text[cut:]); stream.flush()

in_two_writes(sys.stdout, f"echo {key}\n")
in_two_writes(sys.stderr, f"warning: {key}\n")
os.makedirs(f"{home}/.leaky", exist_ok=True)
with open(f"{home}/.leaky/session.jsonl", "w") as f:
    f.write(json.dumps({"role": "assistant", "text": f"the key is {key}"}) + "\n")
db = sqlite3.connect(f"{home}/.leaky/store.db")
db.execute("PRAGMA page_size = 1024"); db.execute("CREATE TABLE part (data TEXT)")
for n in range(0, 1100, 7):
    db.execute("INSERT INTO part VALUES (?)", ("a" * n + key + "b" * 1200,))
db.commit(); db.close()

class Unix(http.client.HTTPConnection):
    def connect(self):
        self.sock = socket.socket(socket.AF_UNIX); self.sock.connect("/run/runner/model.sock")

body = {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": f"my key is {key}"}]}
conn = Unix("localhost")
conn.request("POST", "/v1/messages", json.dumps(body), {"content-type": "application/json", "x-api-key": key})
conn.getresponse().read()

script = json.load(open("/run/runner/script.json"))
script["actions"] = [{"do": "call", "tool": "files.read", "arguments": {"path": ["Workspace", key]}},
                     {"do": "finish", "text": f"the key is {key}"}]
json.dump(script, open(f"{home}/script.json", "w"))
os.execv(sys.executable, [sys.executable, "/opt/reference/client.py", "--script", f"{home}/script.json",
                          "--server-command", "socat", "--server-arg", "STDIO",
                          "--server-arg", "UNIX-CONNECT:${mcp_socket}"])
'''


@pytest.mark.parametrize("runtime", ["runc", "runsc"])  # runsc: the engine must have it (make integration does)
def test_a_host_key_spread_through_a_scripted_turn_is_in_no_file_and_no_output(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord, runtime: str
) -> None:
    profile = tmp_path / "leaky.yaml"
    profile.write_text(
        "id: leaky\nlabel: Leaky\nimage: reference\n"
        f"argv: [/opt/venv/bin/python, -c, {json.dumps(LEAKY)}]\n"
        f"env: {{LEAKED: {KEY}, PYTHONUNBUFFERED: '1'}}\n"
        "prompt: {via: stdin-line}\nhome: turn\nsession_transcript: .leaky\n"
        "model: {dialect: anthropic-messages}\n"
    )
    (tmp_path / "tmp").mkdir()
    out = tmp_path / "out"
    env = {**os.environ, "ANTHROPIC_API_KEY": KEY, "TMPDIR": str(tmp_path / "tmp"), RUNTIME_ENV: runtime}
    proc = subprocess.run(
        [RUNNER, "exec", "--profile", str(profile), "--case", "escalation", "--json", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=240,
    )
    assert proc.returncode == 0, proc.stderr
    report = json.loads(proc.stdout)
    assert report["model"]["mode"] == "scripted" and report["status"] == "succeeded"
    pinned = json.loads((out / "result.json").read_text())["pins"].get("runtime")
    assert pinned == (None if runtime == "runc" else runtime)  # runc: no pin

    written = [p for p in out.rglob("*") if p.is_file()]
    texts = {str(p.relative_to(out)): p.read_bytes().decode("utf-8", "replace") for p in written}
    texts.update({"runner stdout": proc.stdout, "runner stderr": proc.stderr})
    leaks = [name for name, text in texts.items() if KEY in text or KEY[9:] in text]
    assert leaks == [], f"the host key (or its second half) is in: {leaks}"

    # the key did go everywhere the program sent it, and was replaced there
    for name in ("stdout.log", "stderr.log", "record.json", "model-exchanges.jsonl",
                 "execution-result.json", "session/session.jsonl"):
        assert MARK in texts[name] or "*" * len(KEY) in texts[name], name
    assert MARK in json.dumps(report["outcome"]["output"])
    with sqlite3.connect(out / "session" / "store.db") as db:
        stored = [row[0] for row in db.execute("SELECT data FROM part")]
    db.close()
    assert stored and not any(KEY in value for value in stored)
