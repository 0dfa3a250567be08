"""The reference harness client against a real MCP server, through a real socat relay.

Both ends use the real `mcp` SDK: a tiny low-level `mcp.server.Server` listens on a
unix socket (newline-delimited JSON-RPC, one session per connection) in a background
event loop, and `client.py` runs as a subprocess on the host, reaching it through
`socat STDIO UNIX-CONNECT:<socket>` exactly as it does inside the container.
"""

from __future__ import annotations

import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import anyio
import anyio.abc
import anyio.from_thread
import mcp_types as types
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import MCPError
from mcp.server import Server, ServerRequestContext
from mcp.shared.message import SessionMessage

CLIENT = Path(__file__).resolve().parents[2] / "runner" / "harnesses" / "reference" / "client.py"
MAX_LINE = 16 * 1024 * 1024
PROC_TIMEOUT = 30.0

pytestmark = pytest.mark.timeout(90)

LISTED_TOOLS = [
    types.Tool(
        name="files.read",
        description="Read a file from the catalogue.",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "array", "items": {"type": "string"}}},
            "required": ["path"],
        },
    ),
    types.Tool(
        name="sharedos.escalate",
        description="Escalate to a human.",
        input_schema={"type": "object", "properties": {"reason": {"type": "string"}}},
    ),
]
LISTED_NAMES = {tool.name for tool in LISTED_TOOLS}
RPC_ERROR_TOOL = "test.rpc_error"
RPC_ERROR_CODE = -32602


# --------------------------------------------------------------------------- test server


@dataclass
class Recorder:
    """What the test server saw, across every connection."""

    calls: list[tuple[str, dict[str, Any] | None]] = field(default_factory=list)
    list_tools: int = 0
    connections: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def snapshot_calls(self) -> list[tuple[str, dict[str, Any] | None]]:
        with self.lock:
            return list(self.calls)


def build_server(recorder: Recorder) -> Server[Any]:
    async def on_list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        with recorder.lock:
            recorder.list_tools += 1
        return types.ListToolsResult(tools=LISTED_TOOLS)

    async def on_call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        with recorder.lock:
            recorder.calls.append((params.name, params.arguments))
        if params.name == RPC_ERROR_TOOL:
            raise MCPError(code=RPC_ERROR_CODE, message="refused by the test server")
        if params.name not in LISTED_NAMES:
            return types.CallToolResult(content=[types.TextContent(text=f"unknown tool: {params.name}")], is_error=True)
        payload = json.dumps(params.arguments, sort_keys=True)
        return types.CallToolResult(content=[types.TextContent(text=f"{params.name} ok {payload}")])

    return Server("test-sharedos", version="0.0.1", on_list_tools=on_list_tools, on_call_tool=on_call_tool)


async def serve_connection(stream: anyio.abc.ByteStream, recorder: Recorder) -> None:
    """One MCP session over one socket connection, newline-delimited JSON framing."""
    with recorder.lock:
        recorder.connections += 1
    server = build_server(recorder)
    buffered = BufferedByteReceiveStream(stream)
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        async with read_send:
            while True:
                try:
                    line = await buffered.receive_until(b"\n", MAX_LINE)
                except (anyio.IncompleteRead, anyio.EndOfStream, anyio.ClosedResourceError):
                    return
                except anyio.BrokenResourceError:
                    return
                if not line.strip():
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError as exc:
                    await read_send.send(exc)
                    continue
                await read_send.send(SessionMessage(message))

    async def writer() -> None:
        async with write_recv:
            async for session_message in write_recv:
                data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
                try:
                    await stream.send(data.encode())
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return

    async with stream, anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        await server.run(read_recv, write_send, server.create_initialization_options())
        tg.cancel_scope.cancel()


async def serve_unix(
    path: str, recorder: Recorder, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    listener = await anyio.create_unix_listener(path)

    async def handle(stream: anyio.abc.SocketStream) -> None:
        await serve_connection(stream, recorder)

    async with listener:
        task_status.started()
        await listener.serve(handle)


@dataclass
class McpServerFixture:
    socket_path: str
    recorder: Recorder


@pytest.fixture
def socket_path() -> Iterator[str]:
    # Unix socket paths are limited to ~108 bytes, so not under pytest's tmp_path.
    sock_dir = tempfile.mkdtemp(prefix="rh-", dir="/tmp")
    try:
        yield os.path.join(sock_dir, "mcp.sock")
    finally:
        shutil.rmtree(sock_dir, ignore_errors=True)


@contextmanager
def running_server(socket_path: str) -> Iterator[McpServerFixture]:
    """Serve the test MCP server on `socket_path` from a background event loop."""
    recorder = Recorder()
    with anyio.from_thread.start_blocking_portal() as portal:
        future: Future[None]
        future, _ = portal.start_task(serve_unix, socket_path, recorder)
        try:
            yield McpServerFixture(socket_path=socket_path, recorder=recorder)
        finally:
            future.cancel()


@pytest.fixture
def mcp_server(socket_path: str) -> Iterator[McpServerFixture]:
    with running_server(socket_path) as server:
        yield server


@pytest.fixture(scope="session")
def socat() -> str:
    path = shutil.which("socat")
    if path is None:
        pytest.fail("socat is not installed: `make test-tools` (make test) installs it")
    return path


# --------------------------------------------------------------------------- helpers


def write_script(tmp_path: Path, actions: list[dict[str, Any]]) -> Path:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"harness": "reference", "server": "sharedos", "actions": actions}))
    return path


def client_argv(script: Path, socat: str, socket_path: str) -> list[str]:
    return [
        sys.executable,
        str(CLIENT),
        "--script",
        str(script),
        "--server-command",
        socat,
        "--server-arg",
        "STDIO",
        "--server-arg",
        f"UNIX-CONNECT:{socket_path}",
    ]


@dataclass
class Finished:
    returncode: int
    stdout: bytes
    stderr: str
    elapsed: float

    def frames(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.startswith(b"{")]


def run_client(argv: list[str], timeout: float = PROC_TIMEOUT) -> Finished:
    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        stdout, stderr = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        stdout, stderr = proc.communicate(timeout=10)
        pytest.fail(f"client did not exit within {timeout} s; stderr:\n{stderr.decode(errors='replace')}")
    return Finished(proc.returncode, stdout, stderr.decode(errors="replace"), time.monotonic() - started)


def assert_connected(frame: dict[str, Any]) -> None:
    assert frame["type"] == "session.started"
    assert frame["harness"] == "reference"
    assert frame["version"].startswith("reference-harness ")
    assert frame["mcp_servers"] == [
        {"name": "sharedos", "status": "connected", "tools": len(LISTED_TOOLS), "protocol_version": "2025-11-25"}
    ]


def wait_until(predicate: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.05)


# --------------------------------------------------------------------------- tests


def test_version_flag() -> None:
    result = run_client([sys.executable, str(CLIENT), "--version"])
    assert result.returncode == 0
    assert result.stdout.decode().startswith("reference-harness 1.0 (mcp ")


def test_calls_say_finish(tmp_path: Path, mcp_server: McpServerFixture, socat: str) -> None:
    actions: list[dict[str, Any]] = [
        {"do": "call", "tool": "files.read", "arguments": {"path": ["Workspace", "policy.md"]}},
        {"do": "call", "tool": "not.listed", "arguments": {}},
        {"do": "say", "text": "reading done"},
        {"do": "finish", "text": "final answer"},
    ]
    result = run_client(client_argv(write_script(tmp_path, actions), socat, mcp_server.socket_path))

    assert result.returncode == 0, result.stderr
    frames = result.frames()
    assert len(result.stdout.splitlines()) == len(frames), "stdout must hold only JSON frames"
    assert_connected(frames[0])
    assert frames[1:] == [
        {
            "type": "tool.call",
            "seq": 1,
            "name": "files.read",
            "arguments": {"path": ["Workspace", "policy.md"]},
        },
        {
            "type": "tool.result",
            "seq": 1,
            "name": "files.read",
            "is_error": False,
            "text": 'files.read ok {"path": ["Workspace", "policy.md"]}',
        },
        {"type": "tool.call", "seq": 2, "name": "not.listed", "arguments": {}},
        {"type": "tool.result", "seq": 2, "name": "not.listed", "is_error": True, "text": "unknown tool: not.listed"},
        {"type": "message", "text": "reading done"},
        {"type": "turn.completed", "text": "final answer"},
    ]
    assert mcp_server.recorder.snapshot_calls() == [
        ("files.read", {"path": ["Workspace", "policy.md"]}),
        ("not.listed", {}),
    ]
    assert mcp_server.recorder.list_tools == 1
    assert mcp_server.recorder.connections == 1


def test_jsonrpc_error_is_not_fatal(tmp_path: Path, mcp_server: McpServerFixture, socat: str) -> None:
    actions: list[dict[str, Any]] = [
        {"do": "call", "tool": RPC_ERROR_TOOL, "arguments": {"x": None}},
        {"do": "call", "tool": "sharedos.escalate", "arguments": {"reason": "policy unclear"}},
        {"do": "call", "tool": "sharedos.escalate"},
    ]
    result = run_client(client_argv(write_script(tmp_path, actions), socat, mcp_server.socket_path))

    assert result.returncode == 0, result.stderr
    frames = result.frames()
    assert_connected(frames[0])
    assert frames[1] == {"type": "tool.call", "seq": 1, "name": RPC_ERROR_TOOL, "arguments": {"x": None}}
    assert frames[2] == {
        "type": "tool.result",
        "seq": 1,
        "name": RPC_ERROR_TOOL,
        "is_error": True,
        "error": {"code": RPC_ERROR_CODE, "message": "refused by the test server"},
    }
    assert [f["type"] for f in frames[3:]] == ["tool.call", "tool.result"] * 2
    assert frames[4]["is_error"] is False
    # A call without "arguments" sends none (the frame says null).
    assert frames[5] == {"type": "tool.call", "seq": 3, "name": "sharedos.escalate", "arguments": None}
    assert frames[6]["is_error"] is False
    # Actions ran out without `finish`: exit 0, no terminal frame.
    assert mcp_server.recorder.snapshot_calls() == [
        (RPC_ERROR_TOOL, {"x": None}),
        ("sharedos.escalate", {"reason": "policy unclear"}),
        ("sharedos.escalate", None),
    ]


def test_exit_code_without_terminal_frame(tmp_path: Path, mcp_server: McpServerFixture, socat: str) -> None:
    actions: list[dict[str, Any]] = [
        {"do": "say", "text": "bye"},
        {"do": "exit", "code": 3},
        {"do": "finish", "text": "never reached"},
    ]
    result = run_client(client_argv(write_script(tmp_path, actions), socat, mcp_server.socket_path))

    assert result.returncode == 3, result.stderr
    frames = result.frames()
    assert_connected(frames[0])
    assert frames[1:] == [{"type": "message", "text": "bye"}]


def test_flood_then_finish(tmp_path: Path, mcp_server: McpServerFixture, socat: str) -> None:
    size = 5 * 1024 * 1024 + 300
    actions: list[dict[str, Any]] = [
        {"do": "say", "text": "before"},
        {"do": "flood", "bytes": size},
        {"do": "call", "tool": "files.read", "arguments": {"path": ["a"]}},
        {"do": "finish", "text": "after the flood"},
    ]
    result = run_client(client_argv(write_script(tmp_path, actions), socat, mcp_server.socket_path))

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines(keepends=True)
    junk = [line for line in lines if not line.startswith(b"{")]
    assert sum(len(line) for line in junk) >= size
    assert all(set(line.rstrip(b"\n")) <= {ord("x")} for line in junk)
    assert max(len(line) for line in junk) == 1024
    frames = result.frames()
    assert [f["type"] for f in frames] == [
        "session.started",
        "message",
        "tool.call",
        "tool.result",
        "turn.completed",
    ]
    assert frames[-1] == {"type": "turn.completed", "text": "after the flood"}
    # The junk sits between the message frame and the next tool.call frame.
    first_junk = lines.index(junk[0])
    assert json.loads(lines[first_junk - 1])["type"] == "message"
    assert json.loads(lines[first_junk + len(junk)])["type"] == "tool.call"


def _sigterm_ignored(pid: int) -> bool:
    status = Path(f"/proc/{pid}/status").read_text()
    mask = next(line.split(":", 1)[1].strip() for line in status.splitlines() if line.startswith("SigIgn:"))
    return bool(int(mask, 16) & (1 << (signal.SIGTERM - 1)))


def _pump(stream: IO[bytes], sink: queue.Queue[bytes | None]) -> None:
    for line in iter(stream.readline, b""):
        sink.put(line)
    sink.put(None)


def test_hang_ignores_sigterm(tmp_path: Path, mcp_server: McpServerFixture, socat: str) -> None:
    actions: list[dict[str, Any]] = [{"do": "say", "text": "about to hang"}, {"do": "hang"}]
    proc = subprocess.Popen(
        client_argv(write_script(tmp_path, actions), socat, mcp_server.socket_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    lines: queue.Queue[bytes | None] = queue.Queue()
    assert proc.stdout is not None
    pump = threading.Thread(target=_pump, args=(proc.stdout, lines), daemon=True)
    pump.start()
    try:
        frames: list[dict[str, Any]] = []
        while not frames or frames[-1].get("type") != "message":
            line = lines.get(timeout=PROC_TIMEOUT)
            assert line is not None, f"client exited early with {proc.wait(timeout=5)}"
            frames.append(json.loads(line))
        assert_connected(frames[0])
        assert frames[1:] == [{"type": "message", "text": "about to hang"}]

        wait_until(lambda: _sigterm_ignored(proc.pid), 10, "the client to ignore SIGTERM")
        proc.send_signal(signal.SIGTERM)
        time.sleep(1.0)
        assert proc.poll() is None, "the hanging client must survive SIGTERM"
    finally:
        proc.kill()
        returncode = proc.wait(timeout=10)
        pump.join(timeout=10)
    assert returncode == -signal.SIGKILL
    assert lines.get(timeout=1) is None, "no frame after hang"


def test_missing_socket_fails_fast(tmp_path: Path, socat: str) -> None:
    script = write_script(tmp_path, [{"do": "finish", "text": "unreachable"}])
    missing = os.path.join(tempfile.gettempdir(), f"rh-missing-{os.getpid()}.sock")
    proc = subprocess.Popen(client_argv(script, socat, missing), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    errors: queue.Queue[bytes | None] = queue.Queue()
    assert proc.stderr is not None and proc.stdout is not None
    pump = threading.Thread(target=_pump, args=(proc.stderr, errors), daemon=True)
    pump.start()
    stderr: list[str] = []
    first_failed: float | None = None
    try:
        while (line := errors.get(timeout=PROC_TIMEOUT)) is not None:
            stderr.append(line.decode(errors="replace"))
            if first_failed is None and b"connection attempt 1/3 failed" in line:
                first_failed = time.monotonic()
        returncode = proc.wait(timeout=PROC_TIMEOUT)
        gave_up = time.monotonic()
        stdout = proc.stdout.read()
    finally:
        proc.kill()
        proc.wait(timeout=10)
        pump.join(timeout=10)
    result = Finished(returncode, stdout, "".join(stderr), 0.0)

    assert result.returncode == 1, result.stderr
    # fast: from the first failed attempt to giving up is the two retry delays (0.5 s) and two relay starts, not a
    # connect timeout; measured from there, since the interpreter's start-up is what a loaded machine stretches
    assert first_failed is not None and gave_up - first_failed < 10, result.stderr
    frames = result.frames()
    assert [f["type"] for f in frames] == ["session.started", "turn.failed"]
    (server,) = frames[0]["mcp_servers"]
    assert server["name"] == "sharedos"
    assert server["status"] == "failed"
    assert "No such file or directory" in server["error"]
    assert frames[1]["error"]["code"] == "mcp_unavailable"
    assert frames[1]["error"]["message"]
    # Bounded retries, then give up.
    assert result.stderr.count("connection attempt") == 3


def test_late_socket_is_retried(tmp_path: Path, mcp_server: McpServerFixture, socat: str) -> None:
    """The socket is not there at the first attempt and is at the second. The relay command decides which: its
    first run reaches for a path where nothing listens (as a socket not yet bound), every later run for the
    served socket, so the retry meets the socket whatever the timing of the client's attempts."""
    script = write_script(tmp_path, [{"do": "finish", "text": "connected late"}])
    missing = os.path.join(os.path.dirname(mcp_server.socket_path), "not-yet.sock")
    tried = tmp_path / "tried"
    relay = tmp_path / "late-relay.sh"
    relay.write_text(
        "#!/bin/sh\n"
        f'if [ -e "{tried}" ]; then exec {socat} STDIO UNIX-CONNECT:{mcp_server.socket_path}; fi\n'
        f'touch "{tried}"; exec {socat} STDIO UNIX-CONNECT:{missing}\n'
    )
    relay.chmod(0o755)
    argv = [sys.executable, str(CLIENT), "--script", str(script), "--server-command", str(relay)]
    result = run_client(argv)

    assert result.returncode == 0, result.stderr
    assert result.stderr.count("connection attempt") == 1 and "connection attempt 1/3 failed" in result.stderr
    assert mcp_server.recorder.connections == 1
    frames = result.frames()
    assert_connected(frames[0])
    assert frames[1:] == [{"type": "turn.completed", "text": "connected late"}]


def test_invalid_script_fails(tmp_path: Path, socat: str) -> None:
    script = write_script(tmp_path, [{"do": "improvise"}])
    result = run_client(client_argv(script, socat, "/nonexistent.sock"), timeout=20)

    assert result.returncode == 1
    assert result.frames() == [
        {
            "type": "turn.failed",
            "error": {
                "code": "reference_client_error",
                "message": result.frames()[0]["error"]["message"],
            },
        }
    ]
    assert "unknown action 'improvise'" in result.frames()[0]["error"]["message"]
