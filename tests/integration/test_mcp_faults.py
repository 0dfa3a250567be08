"""Faults around the escalation latch on the real MCP server: dropped connections, racing asks, calls in flight.

Upstream §3.4 "Concurrency": a call that passed the latch before the ask runs to completion and is
not counted; a call arriving after the ask is refused ``escalation_pending`` and counted; a second
ask is just such a call (the first reason is kept); one escalation is recorded for the turn. Every
test here drives the real SDK on both ends over a real unix socket, through the real
:class:`EscalationLatch` and :class:`Envelope`. The only stand-in is :class:`SlowHost`, which sits
between the latch and the envelope and holds ``files.read``, so a call can be caught in flight
(upstream's own test delays a read 400 ms inside the kernel). Where a test asserts that the read was
still in flight, it holds the read on a gate it opens itself (never on a time that a loaded machine
could outlast).

The reconnect test also runs from inside the reference image: a small SDK client in the hardened
container reaches the mounted socket through a ``socat`` relay, exactly as the reference harness
does, kills that relay mid-call and reconnects.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import docker
import mcp_types as types
import pytest
from mcp import ClientSession, MCPError

from runner.core.envelope import Envelope, ServerIdentity
from runner.core.latch import EscalationLatch
from runner.core.outcomes import Complete, JsonValue, ToolCall, ToolResult
from runner.core.world import build_world
from runner.images import ImageRecord
from runner.mcp.server import SHUTDOWN_GRACE, McpServerHandle, serve_mcp
from runner.mcp.unix_client import UnixTransport, unix_client
from runner.sandbox.container import CELL_LABEL, RUN_LABEL, TURN_MOUNT, SandboxedProcess, remove_labelled
from runner.sandbox.interface import ContainerSpec
from runner.sandbox.ownership import give

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

SLOW = 0.4  # seconds SlowHost holds a files.read before the envelope sees it (where no gate holds it)
GIVE_UP = 2.0  # seconds a client waits for a read the test holds on a gate, then gives up on it
POLICY = {"path": ["Workspace", "policy.md"]}
POLICY_TEXT = "Only the owner changes policy.\n"
REASON = "The owner must approve a policy change."
CLIENT = types.Implementation(name="pytest-faults", version="1.0")


# --- the turn: latch -> SlowHost -> envelope, served on a socket --------------------------------


class SlowHost:
    """The envelope's host surface, with ``files.read`` held before it is delegated: for ``hold`` seconds, or,
    given a ``gate``, until the gate says so.

    It stands for a kernel that takes time: a read held here has passed the latch but not yet
    reached the envelope, which is exactly the window upstream's concurrency rules are about.
    ``started`` fires when a read starts waiting; ``on_start`` lets a test tell someone outside the
    event loop (a container) about it.
    """

    def __init__(
        self, envelope: Envelope, hold: float = SLOW, on_start: Callable[[], None] = lambda: None,
        gate: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.envelope = envelope
        self.hold = hold
        self.gate = gate
        self.on_start = on_start
        self.started = anyio.Event()
        self.finished = anyio.Event()
        self.reads = 0

    async def invoke_tool(self, call: ToolCall) -> ToolResult:
        if call.tool != "files.read":
            return await self.envelope.invoke_tool(call)
        self.reads += 1
        self.started.set()
        self.on_start()
        if self.gate is not None:
            await self.gate()
        else:
            await anyio.sleep(self.hold)
        result = await self.envelope.invoke_tool(call)
        self.finished.set()
        return result

    def annotate(self, key: str, value: JsonValue) -> None:
        self.envelope.annotate(key, value)


@dataclass
class Turn:
    env: Envelope
    host: SlowHost
    latch: EscalationLatch
    handle: McpServerHandle
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [data for k, data in self.events if k == kind]

    def settle(self) -> dict[str, Any]:
        """Settle as a turn does (``runner.turn.run_turn``): the latch, then the envelope; the record."""
        outcome = self.latch.settle(Complete("done"), {"harness": "pytest"})
        return self.env.record(self.env.settle(outcome))


@asynccontextmanager
async def served(
    directory: Path, *, hold: float = SLOW, on_start: Callable[[], None] = lambda: None,
    gate: Callable[[], Awaitable[None]] | None = None, held_until_connection: int | None = None,
) -> AsyncIterator[Turn]:
    """The turn served on ``directory``/mcp.sock; a read is held ``hold`` seconds, or until ``gate`` opens, or
    (``held_until_connection``) until that connection has opened."""
    socket_path = directory / "mcp.sock"
    assert len(str(socket_path)) < 100, "AF_UNIX paths are short"
    events: list[tuple[str, dict[str, Any]]] = []
    if held_until_connection is not None:
        gate = until_connection(events, held_until_connection)
    env = Envelope(build_world(), "exec-faults", ServerIdentity("runner.faults.mcp", "0.1.0"))
    host = SlowHost(env, hold, on_start, gate)
    latch = EscalationLatch(host, env.catalogue.names)
    async with serve_mcp(
        socket_path, env.catalogue, latch, on_event=lambda kind, data: events.append((kind, data))
    ) as handle:
        yield Turn(env, host, latch, handle, events)


# --- an SDK client over the socket whose connection can be dropped -----------------------------


@dataclass
class Link:
    """One SDK session on one connection; :meth:`drop` pulls the connection out from under it."""

    session: ClientSession
    transport: UnixTransport

    def drop(self) -> None:
        self.transport.drop()


@asynccontextmanager
async def link(path: Path, *, initialize: bool = True) -> AsyncIterator[Link]:
    async with unix_client(path) as t, ClientSession(t.read, t.write, client_info=CLIENT) as session:
        if initialize:
            with anyio.fail_after(5):
                await session.initialize()
        yield Link(session, t)


def body(result: types.CallToolResult) -> dict[str, Any]:
    return json.loads(result.content[0].text)  # type: ignore[no-any-return, union-attr]


def pending(result: types.CallToolResult) -> bool:
    return result.is_error is True and body(result)["code"] == "escalation_pending"


async def until(check: Callable[[], bool], timeout: float = 5) -> None:
    with anyio.fail_after(timeout):
        while not check():
            await anyio.sleep(0.01)


def until_connection(events: list[tuple[str, dict[str, Any]]], number: int,
                     timeout: float = 30) -> Callable[[], Awaitable[None]]:
    """A gate that opens once connection ``number`` has opened: the dropped read is held until the client has
    seen its connection die and come back on a new one, however slowly a loaded machine gets there."""

    async def gate() -> None:
        await until(lambda: any(k == "connection.opened" and d["connection"] == number for k, d in events), timeout)

    return gate


def opened_by(release: anyio.Event) -> Callable[[], Awaitable[None]]:
    """A gate the test opens itself (``release.set()``)."""

    async def gate() -> None:
        with anyio.fail_after(30):
            await release.wait()

    return gate


def read_trace(record: dict[str, Any]) -> tuple[list[dict[str, Any]], list[str]]:
    """The files.read operations of a record, and the types of the events that name files.read."""
    execution = record["execution"]
    ops = [op for op in execution["operations"] if op["tool"] == "files.read"]
    kinds = [e["type"] for e in execution["events"] if e["data"].get("tool") == "files.read"]
    return ops, kinds


def one_escalation(record: dict[str, Any], reason: str) -> None:
    """The record of a turn that asked exactly once, with ``reason``."""
    execution = record["execution"]
    assert execution["status"] == "escalated" and execution["terminalReasonCode"] == "escalation_requested"
    assert execution["escalation"]["reason"] == reason
    assert execution["escalationAsked"] == {"tool": "sharedos.escalate", "reason": reason}
    escalated = [e for e in execution["events"] if e["type"] == "turn.escalated"]
    assert [e["data"]["reason"] for e in escalated] == [reason]
    # neither the ask nor anything refused after it is an operation or an event
    assert all(op["tool"] != "sharedos.escalate" for op in execution["operations"])
    assert all(e["data"].get("tool") != "sharedos.escalate" for e in execution["events"])


# --- a: the connection drops mid-call and the client reconnects ---------------------------------


async def test_a_dropped_call_runs_to_completion_and_a_new_connection_asks(tmp_path: Path) -> None:
    # the read is held until the second connection opens: in flight when its connection drops, by construction
    async with served(tmp_path, held_until_connection=2) as turn:
        async with link(turn.handle.path) as first:
            outcome: list[object] = []

            async def dropped_read() -> None:
                try:
                    outcome.append(await first.session.call_tool("files.read", POLICY))
                except MCPError as err:
                    outcome.append(err)

            async with anyio.create_task_group() as tg:
                tg.start_soon(dropped_read)
                with anyio.fail_after(5):
                    await turn.host.started.wait()
                first.drop()  # the answer has not been written yet: the read is held until connection 2
        assert len(outcome) == 1 and isinstance(outcome[0], MCPError), "the dropped call got no answer"
        assert not turn.host.finished.is_set(), "the connection dropped while the read was in flight"

        async with link(turn.handle.path) as second:
            with anyio.fail_after(5):
                ask = await second.session.call_tool("sharedos.escalate", {"reason": REASON})
                after = await second.session.call_tool("files.list", {"path": ["Workspace"]})
        assert ask.is_error is False and body(ask)["escalated"] is True and body(ask)["reason"] == REASON
        assert pending(after)

        record = await settled_after_reconnect(turn)
    reconnected_consistently(turn, record)


async def settled_after_reconnect(turn: Turn) -> dict[str, Any]:
    """Wait for the dropped read to finish (nobody waits for its answer) and both sessions to end; settle."""
    await until(turn.host.finished.is_set)
    await until(lambda: len(turn.kinds("connection.closed")) == 2)
    return turn.settle()


def reconnected_consistently(turn: Turn, record: dict[str, Any]) -> None:
    """A read dropped mid-call on connection 1; the ask and one more call on connection 2."""
    assert turn.handle.connections == 2 and turn.handle.sessions_initialized == 2
    assert turn.host.reads == 1
    assert turn.latch.reason == REASON and turn.latch.calls_after_escalation == 1
    ops, kinds = read_trace(record)
    assert [(op["outcome"], op["source"]) for op in ops] == [("succeeded", "kernel")], "exactly once, to completion"
    assert kinds == ["tool.requested", "tool.completed"]
    assert record["execution"]["callsAfterEscalation"] == 1
    assert [op["tool"] for op in record["execution"]["operations"]] == ["files.read"]  # files.list was refused
    one_escalation(record, REASON)
    called = {(c["connection"], c["tool"]): c["status"] for c in turn.kinds("tool.called")}
    assert called == {
        (1, "files.read"): "succeeded", (2, "sharedos.escalate"): "succeeded", (2, "files.list"): "denied"
    }


# --- b: two asks race on two connections --------------------------------------------------------


async def test_two_concurrent_asks_honour_exactly_one(tmp_path: Path) -> None:
    reasons = ("Ask from the first connection.", "Ask from the second connection.")
    async with served(tmp_path) as turn, link(turn.handle.path) as one, link(turn.handle.path) as two:
        answers: dict[str, types.CallToolResult] = {}
        go = anyio.Event()

        async def ask(session: ClientSession, reason: str) -> None:
            await go.wait()
            answers[reason] = await session.call_tool("sharedos.escalate", {"reason": reason})

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(ask, one.session, reasons[0])
                tg.start_soon(ask, two.session, reasons[1])
                await anyio.sleep(0.05)
                go.set()
        record = turn.settle()

    honoured = [r for r in reasons if answers[r].is_error is False]
    refused = [r for r in reasons if pending(answers[r])]
    assert len(honoured) == 1 and len(refused) == 1, {r: body(a) for r, a in answers.items()}
    winner = honoured[0]
    assert (body(answers[winner])["escalated"], body(answers[winner])["reason"]) == (True, winner)
    assert turn.latch.reason == winner and turn.latch.calls_after_escalation == 1
    assert record["execution"]["callsAfterEscalation"] == 1
    assert record["execution"]["operations"] == []
    one_escalation(record, winner)


# --- c: a call is in flight when the ask lands --------------------------------------------------


async def test_a_call_in_flight_at_the_ask_completes_and_is_not_counted(tmp_path: Path) -> None:
    answered = anyio.Event()  # the read is held past the latch until the ask has been answered
    async with served(tmp_path, gate=opened_by(answered)) as turn, link(turn.handle.path) as a, \
            link(turn.handle.path) as b:
        results: dict[str, types.CallToolResult] = {}
        read_done_at_ask: list[bool] = []

        async def read() -> None:
            results["read"] = await a.session.call_tool("files.read", POLICY)

        async def ask() -> None:
            await turn.host.started.wait()
            results["ask"] = await b.session.call_tool("sharedos.escalate", {"reason": REASON})
            read_done_at_ask.append(turn.host.finished.is_set())
            answered.set()

        with anyio.fail_after(5):
            async with anyio.create_task_group() as tg:
                tg.start_soon(read)
                tg.start_soon(ask)
        record = turn.settle()

    assert read_done_at_ask == [False], "the ask landed while the read was in flight"
    assert results["read"].is_error is False
    assert body(results["read"]) == {"path": ["Workspace", "policy.md"], "content": POLICY_TEXT}
    assert results["ask"].is_error is False and body(results["ask"])["reason"] == REASON
    assert turn.latch.calls_after_escalation == 0
    assert record["execution"]["callsAfterEscalation"] == 0
    ops, kinds = read_trace(record)
    assert [(op["outcome"], op["source"]) for op in ops] == [("succeeded", "kernel")]
    assert kinds == ["tool.requested", "tool.completed"]
    one_escalation(record, REASON)


# --- what the server does with a call it has handed to the invoker ------------------------------


async def test_a_call_the_client_gives_up_on_still_runs_to_completion(tmp_path: Path) -> None:
    """The SDK client's read timeout sends ``notifications/cancelled``; past the latch, the call still runs."""
    gave_up = anyio.Event()  # the read is held past the latch until the client has given up on it
    async with served(tmp_path, gate=opened_by(gave_up)) as turn, link(turn.handle.path) as client:
        with anyio.fail_after(10):
            with pytest.raises(MCPError):  # the read reaches the host within GIVE_UP, however loaded the machine
                await client.session.call_tool("files.read", POLICY, read_timeout_seconds=GIVE_UP)
            assert turn.host.started.is_set() and not turn.host.finished.is_set()
            gave_up.set()
            await turn.host.finished.wait()
            after = await client.session.call_tool("files.list", {"path": ["Workspace"]})
    ops = [(op["tool"], op["outcome"]) for op in turn.env.operations]
    assert ops == [("files.read", "succeeded"), ("files.list", "succeeded")]
    assert after.is_error is False


async def test_a_call_still_running_when_the_server_exits_is_cut_after_the_grace_period(tmp_path: Path) -> None:
    """Running calls to completion never holds the server open for ever: its exit cuts a hung call after the grace."""
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
    call = {"name": "files.read", "arguments": POLICY}
    async with served(tmp_path, hold=math.inf) as turn:
        async with await anyio.connect_unix(turn.handle.path) as stream:
            for message in (
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call},
            ):
                await stream.send(json.dumps(message).encode() + b"\n")
            with anyio.fail_after(5):
                await turn.host.started.wait()
        leaving = anyio.current_time()
    took = anyio.current_time() - leaving
    # waited out the grace, then cut the call that would have held it for ever (the upper bound leaves a loaded
    # machine its scheduling delays: it only tells a cut from a hold)
    assert SHUTDOWN_GRACE - 0.1 <= took < SHUTDOWN_GRACE + 10, f"the server exit took {took:.2f}s"
    assert [(c["tool"], c["status"]) for c in turn.kinds("tool.called")] == [("files.read", "error")]
    assert turn.env.operations == [], "the hung call never reached the envelope"


# --- a, from inside the hardened container, through the socat relay -------------------------------

STARTED_MARK = "read-started"
DROP_AND_RECONNECT = f"""
import json, os, signal
import anyio
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

SOCKET = "UNIX-CONNECT:{TURN_MOUNT}/mcp.sock"
# the reference harness's relay; the shell records socat's pid (exec keeps it) so the drop can kill it
RELAY = StdioServerParameters(command="sh", args=["-c", 'echo $$ > /tmp/relay.pid; exec socat STDIO ' + SOCKET])


def say(**frame):
    print(json.dumps(frame), flush=True)


async def dropped():
    async with stdio_client(RELAY) as (r, w), ClientSession(r, w) as session:
        await session.initialize()

        async def read():
            try:
                await session.call_tool("files.read", {json.dumps(POLICY)})
                say(step="dropped", answered=True)
            except MCPError as err:
                say(step="dropped", answered=False, code=err.error.code)

        async with anyio.create_task_group() as tg:
            tg.start_soon(read)
            with anyio.fail_after(10):
                while not os.path.exists("{TURN_MOUNT}/{STARTED_MARK}"):
                    await anyio.sleep(0.01)
            with open("/tmp/relay.pid") as pid:
                os.kill(int(pid.read()), signal.SIGKILL)  # the connection dies with its relay, mid-call


async def reconnect():
    async with stdio_client(RELAY) as (r, w), ClientSession(r, w) as session:
        await session.initialize()
        calls = (("sharedos.escalate", {{"reason": {REASON!r}}}), ("files.list", {{"path": ["Workspace"]}}))
        for name, arguments in calls:
            result = await session.call_tool(name, arguments)
            say(step=name, is_error=bool(result.is_error), text=result.content[0].text)


async def main():
    with anyio.fail_after(30):
        await dropped()
        await reconnect()


anyio.run(main)
"""


@pytest.mark.docker
@pytest.mark.timeout(120)
async def test_a_dropped_call_from_inside_the_container(
    engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    """The same drop and reconnect, by the SDK client in the reference image through its socat relay."""
    turn_dir = Path(tempfile.mkdtemp(prefix="runner-faults-"))
    os.chmod(turn_dir, 0o755)  # the container's uid reaches the socket and the program
    (turn_dir / "drop.py").write_text(DROP_AND_RECONNECT)
    run_label = f"pytest-faults-{uuid.uuid4().hex[:12]}"
    spec = ContainerSpec(
        image_id=reference_image.image_id,
        argv=["/opt/venv/bin/python", f"{TURN_MOUNT}/drop.py"],
        turn_dir=turn_dir,
        labels={RUN_LABEL: run_label, CELL_LABEL: "faults.reconnect"},
        env={"PYTHONUNBUFFERED": "1"},
    )
    proc = SandboxedProcess(engine, spec)
    output: dict[int, bytearray] = {1: bytearray(), 2: bytearray()}
    try:
        # the read is held until the program reconnects: the relay's kill surely lands while it is in flight
        async with served(turn_dir, on_start=lambda: (turn_dir / STARTED_MARK).touch(),
                          held_until_connection=2) as turn:
            give(turn_dir / "mcp.sock", spec.user)  # serve_mcp's socket is this uid's alone: the container's too
            with anyio.fail_after(60):
                await anyio.to_thread.run_sync(proc.start)
                await anyio.to_thread.run_sync(
                    proc.pump, lambda stream, data: output[stream].extend(data), abandon_on_cancel=True
                )
                exit_code = await anyio.to_thread.run_sync(proc.wait, abandon_on_cancel=True)
                record = await settled_after_reconnect(turn)
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(proc.remove)
            await anyio.to_thread.run_sync(remove_labelled, engine, f"{RUN_LABEL}={run_label}")
            shutil.rmtree(turn_dir, ignore_errors=True)
    assert engine.containers.list(all=True, sparse=True, filters={"label": f"{RUN_LABEL}={run_label}"}) == []

    assert exit_code == 0, output[2].decode(errors="replace")
    frames = [json.loads(line) for line in output[1].decode().splitlines() if line.strip()]
    dropped, ask, after = frames
    assert dropped == {"step": "dropped", "answered": False, "code": dropped["code"]}, "no answer reached the client"
    assert ask["step"] == "sharedos.escalate" and ask["is_error"] is False
    assert json.loads(ask["text"])["escalated"] is True
    assert after["step"] == "files.list" and json.loads(after["text"])["code"] == "escalation_pending"
    assert [c.get("name") for c in turn.handle.client_infos] == ["mcp", "mcp"]  # the SDK default: the container client
    reconnected_consistently(turn, record)
