"""The MCP server on a real unix socket, driven by the SDK's own ClientSession (no fakes of the SDK)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import ClientSession, MCPError

import runner
from runner.core.envelope import Envelope, ServerIdentity
from runner.core.latch import EscalationLatch
from runner.core.outcomes import ToolCall, ToolResult
from runner.core.vocabulary import ESCALATION_FALLBACK_REASON, ESCALATION_NOTE
from runner.core.world import WorldCondition, build_world
from runner.mcp.server import McpServerHandle, serve_mcp
from runner.mcp.unix_client import unix_client

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

POLICY = {"path": ["Workspace", "policy.md"]}
PENDING_TEXT = (
    '{"status":"denied","code":"escalation_pending",'
    '"message":"This turn ended by asking a human to decide; nothing further runs on it.","retryable":false}'
)
CLIENT = types.Implementation(name="pytest-client", version="1.2.3")


# --- a client transport for the SDK over the unix socket: the same line framing as stdio --------


@asynccontextmanager
async def sdk_session(path: Path) -> AsyncIterator[ClientSession]:
    async with unix_client(path) as t, ClientSession(t.read, t.write, client_info=CLIENT) as session:
        with anyio.fail_after(5):
            await session.initialize()
        yield session


class RawLines:
    """A bare socket speaking lines, for what no SDK client would send."""

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.reader = BufferedByteReceiveStream(stream)

    async def send(self, data: bytes) -> None:
        await self.stream.send(data)

    async def receive(self) -> dict[str, Any]:
        with anyio.fail_after(5):
            return json.loads(await self.reader.receive_until(b"\n", 1 << 20))  # type: ignore[no-any-return]

    async def closed_by_server(self) -> bool:
        with anyio.fail_after(5):
            try:
                await self.reader.receive_until(b"\n", 1 << 20)
            except (anyio.IncompleteRead, anyio.BrokenResourceError):
                return True
        return False


# --- a served turn ----------------------------------------------------------------------------


@dataclass
class Turn:
    env: Envelope
    latch: EscalationLatch
    handle: McpServerHandle
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def kinds(self, kind: str) -> list[dict[str, Any]]:
        return [data for k, data in self.events if k == kind]


@asynccontextmanager
async def served(tmp_path: Path, condition: WorldCondition | None = None, invoker: Any = None) -> AsyncIterator[Turn]:
    socket_path = tmp_path / "mcp.sock"
    assert len(str(socket_path)) < 100, "AF_UNIX paths are short"
    env = Envelope(build_world(condition), "exec-1", ServerIdentity("runner.reference.mcp", "0.1.0"))
    latch = EscalationLatch(env, env.catalogue.names)
    events: list[tuple[str, dict[str, Any]]] = []
    async with serve_mcp(
        socket_path,
        env.catalogue,
        invoker(latch) if invoker else latch,
        instructions="Use the SharedOS tools.",
        on_event=lambda kind, data: events.append((kind, data)),
    ) as handle:
        yield Turn(env, latch, handle, events)


def refusal(result: types.CallToolResult) -> dict[str, Any]:
    assert result.is_error is True
    body = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert result.meta == {"sharedos/status": body["status"], "sharedos/code": body["code"]}
    return body  # type: ignore[no-any-return]


def text(result: types.CallToolResult) -> str:
    return result.content[0].text  # type: ignore[union-attr]


# --- the tests --------------------------------------------------------------------------------


async def test_initialize_and_list(tmp_path: Path) -> None:
    async with served(tmp_path) as turn:
        assert stat.S_IMODE(os.stat(turn.handle.path).st_mode) == 0o600  # this uid's alone
        async with unix_client(turn.handle.path) as t, ClientSession(t.read, t.write, client_info=CLIENT) as s:
            with anyio.fail_after(5):
                init = await s.initialize()
                listing = await s.list_tools()
        assert init.server_info.name == "sharedos"
        assert init.server_info.version == runner.__version__
        assert init.instructions == "Use the SharedOS tools."
        assert init.capabilities.tools is not None and init.capabilities.tools.list_changed is False
        assert [t.name for t in listing.tools] == sorted(turn.env.catalogue.names)
        assert len(listing.tools) == 17
        assert listing.meta == {
            "sharedos/catalogHash": turn.env.catalogue.catalog_hash,
            "sharedos/executionId": "exec-1",
        }
        read = next(t for t in listing.tools if t.name == "files.read")
        assert read.meta == {"sharedos/namespace": "files", "sharedos/source": "shipped"}
        assert read.annotations is not None and read.annotations.read_only_hint is True
        assert turn.handle.sessions_initialized == 1
        assert turn.handle.client_infos == [{"name": "pytest-client", "version": "1.2.3"}]
        assert [k for k, _ in turn.events][:3] == ["connection.opened", "session.initialized", "tools.listed"]


async def test_read_and_portable_name(tmp_path: Path) -> None:
    async with served(tmp_path) as turn, sdk_session(turn.handle.path) as s:
        with anyio.fail_after(5):
            direct = await s.call_tool("files.read", POLICY)
            portable = await s.call_tool("files_read", POLICY)
        for result in (direct, portable):
            assert result.is_error is False
            assert json.loads(text(result)) == {
                "path": ["Workspace", "policy.md"],
                "content": "Only the owner changes policy.\n",
            }
            assert result.meta is None and result.structured_content is None
        first, second = turn.env.operations
        assert first["tool"] == second["tool"] == "files.read"
        assert "alias" not in first and second["alias"] == "files_read"
        called = turn.kinds("tool.called")
        assert [(c["tool"], c["alias"], c["status"]) for c in called] == [
            ("files.read", None, "succeeded"),
            ("files.read", "files_read", "succeeded"),
        ]
        assert turn.handle.calls == 2


async def test_unknown_tool_is_a_refused_result(tmp_path: Path) -> None:
    async with served(tmp_path) as turn, sdk_session(turn.handle.path) as s:
        with anyio.fail_after(5):
            for name in ("admin.grant.issue", "no.such.tool"):
                body = refusal(await s.call_tool(name, {"anything": [1, 2]}))
                assert (body["status"], body["code"]) == ("denied", "tool_unavailable")
        assert [op["tool"] for op in turn.env.operations] == ["admin.grant.issue", "no.such.tool"]


async def test_schema_violations_reach_the_envelope(tmp_path: Path) -> None:
    async with served(tmp_path) as turn, sdk_session(turn.handle.path) as s:
        with anyio.fail_after(5):
            body = refusal(await s.call_tool("files.read", {"path": 7, "extra": True}))
            no_args = refusal(await s.call_tool("files.read"))
        assert body["code"] == no_args["code"] == "invalid_tool_arguments"
        assert [op["reasonCode"] for op in turn.env.operations] == ["invalid_tool_arguments"] * 2


async def test_escalation_latches_and_later_calls_are_pending(tmp_path: Path) -> None:
    async with served(tmp_path) as turn, sdk_session(turn.handle.path) as s:
        with anyio.fail_after(5):
            ask = await s.call_tool("sharedos.escalate", {"reason": "The owner must approve a policy change."})
            later = [await s.call_tool(name, POLICY) for name in ("files.read", "files_read", "sharedos.escalate")]
        assert ask.is_error is False and ask.meta is None
        assert json.loads(text(ask)) == {
            "escalated": True,
            "reason": "The owner must approve a policy change.",
            "note": ESCALATION_NOTE,
        }
        for result in later:
            assert text(result) == PENDING_TEXT
            assert refusal(result)["code"] == "escalation_pending"
        assert turn.latch.calls_after_escalation == 3
        assert turn.env.operations == []  # the ask and the refused calls never reach the envelope


@pytest.mark.parametrize("arguments", [{}, {"reason": 42}, {"reason": "   "}])
async def test_a_malformed_ask_still_latches(tmp_path: Path, arguments: dict[str, Any]) -> None:
    async with served(tmp_path) as turn, sdk_session(turn.handle.path) as s:
        with anyio.fail_after(5):
            ask = await s.call_tool("sharedos_escalate", arguments)
        assert ask.is_error is False
        assert json.loads(text(ask))["reason"] == ESCALATION_FALLBACK_REASON
        assert turn.latch.reason == ESCALATION_FALLBACK_REASON


async def test_an_ungranted_ask_is_unavailable(tmp_path: Path) -> None:
    async with served(tmp_path, WorldCondition(escalation="withheld")) as turn, sdk_session(turn.handle.path) as s:
        with anyio.fail_after(5):
            names = [t.name for t in (await s.list_tools()).tools]
            body = refusal(await s.call_tool("sharedos.escalate", {"reason": "please"}))
        assert "sharedos.escalate" not in names and len(names) == 16
        assert body["code"] == "tool_unavailable"
        assert not turn.latch.asked


class Exploding:
    """An invoker that raises on one tool and delegates the rest."""

    def __init__(self, inner: EscalationLatch) -> None:
        self.inner = inner

    async def invoke_tool(self, call: ToolCall) -> ToolResult:
        if call.tool == "files.list":
            raise RuntimeError("the bridge is gone")
        return await self.inner.invoke_tool(call)


async def test_an_invoker_exception_is_an_internal_error_only(tmp_path: Path) -> None:
    async with served(tmp_path, invoker=Exploding) as turn, sdk_session(turn.handle.path) as s:
        with anyio.fail_after(5):
            with pytest.raises(MCPError) as caught:
                await s.call_tool("files.list", {"path": ["Workspace"]})
            after = await s.call_tool("files.read", POLICY)
        error = caught.value.error
        assert (error.code, error.message) == (-32603, "SharedOS could not answer this request.")
        assert after.is_error is False
        assert turn.kinds("tool.called")[0]["status"] == "error"


async def test_bad_lines_cost_only_themselves_or_their_session(tmp_path: Path) -> None:
    async with served(tmp_path) as turn, sdk_session(turn.handle.path) as healthy:
        # garbage on one connection gets JSON-RPC errors and the session goes on
        async with await anyio.connect_unix(turn.handle.path) as stream:
            raw = RawLines(stream)
            await raw.send(b"not json\n")
            assert await raw.receive() == {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": "Invalid JSON."},
            }
            await raw.send(b'{"jsonrpc":"2.0"}\n\n')
            assert (await raw.receive())["error"]["code"] == -32700
            await raw.send(b'{"jsonrpc":"2.0","id":7}\n')
            reply = await raw.receive()
            assert (reply["id"], reply["error"]["code"]) == (7, -32600)
            await raw.send(b'{"jsonrpc":"2.0","id":8,"method":"ping"}\n')
            assert await raw.receive() == {"jsonrpc": "2.0", "id": 8, "result": {}}
            await raw.send(b'{"jsonrpc":"2.0","id":9,"method":"resources/list"}\n')
            assert (await raw.receive())["error"]["code"] == -32601

        # a line over the bound closes that session only
        async with await anyio.connect_unix(turn.handle.path) as stream:
            raw = RawLines(stream)
            with suppress(anyio.BrokenResourceError, OSError):
                await raw.send(b"x" * (5 * 1024 * 1024) + b"\n")
            assert await raw.closed_by_server()

        # a truncated line, then the client leaves
        async with await anyio.connect_unix(turn.handle.path) as stream:
            await stream.send(b'{"jsonrpc":"2.0","id":1,"meth')
            await stream.send_eof()
            assert await RawLines(stream).closed_by_server()

        # an abrupt disconnect in the middle of a session
        stream = await anyio.connect_unix(turn.handle.path)
        await stream.send(b'{"jsonrpc":"2.0","id":1,"method":"ping"}\n')
        await stream.aclose()

        with anyio.fail_after(5):
            assert (await healthy.call_tool("files.read", POLICY)).is_error is False
        async with sdk_session(turn.handle.path) as later:
            with anyio.fail_after(5):
                assert (await later.call_tool("files_read", POLICY)).is_error is False

        # connections 2-5 and 6 (later) close concurrently with what follows them: wait for each by number
        with anyio.fail_after(5):
            while not {2, 3, 4, 5, 6} <= {e["connection"] for e in turn.kinds("connection.closed")}:
                await anyio.sleep(0.01)
        rejected = [e["reason"] for e in turn.kinds("message.rejected")]
        assert rejected == ["invalid_json", "not_jsonrpc", "not_jsonrpc", "oversized", "truncated"]
        closed = {e["connection"]: e["reason"] for e in turn.kinds("connection.closed")}
        assert [closed[n] for n in (2, 3, 4)] == ["eof", "oversized", "truncated"]
        assert closed[5] in {"eof", "disconnected"}


async def test_connections_have_their_own_sessions(tmp_path: Path) -> None:
    async with served(tmp_path) as turn:
        async with sdk_session(turn.handle.path) as one, sdk_session(turn.handle.path) as two:
            with anyio.fail_after(5):
                async with anyio.create_task_group() as tg:
                    for session in (one, two) * 5:
                        tg.start_soon(session.call_tool, "files.read", POLICY)
                # one turn behind both: an ask on one is pending on the other
                await one.call_tool("sharedos.escalate", {"reason": "stop"})
                assert refusal(await two.call_tool("files.read", POLICY))["code"] == "escalation_pending"
            # an uninitialized third connection is gated by its own session state
            async with await anyio.connect_unix(turn.handle.path) as stream:
                raw = RawLines(stream)
                await raw.send(b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"files.read"}}\n')
                assert (await raw.receive())["error"]["code"] == -32602
        assert turn.handle.connections == 3
        assert turn.handle.sessions_initialized == 2
        assert turn.handle.calls == 12
        assert len(turn.env.operations) == 10


async def test_a_2026_client_opens_without_a_handshake(tmp_path: Path) -> None:
    async with served(tmp_path) as turn:
        async with unix_client(turn.handle.path) as t, ClientSession(t.read, t.write, client_info=CLIENT) as s:
            with anyio.fail_after(5):
                await s.discover()
                assert len((await s.list_tools()).tools) == 17
                result = await s.call_tool("admin.grant.issue", {})
        assert turn.handle.sessions_initialized == 1  # the first request's envelope opened it
        assert turn.handle.client_infos == [{"name": "pytest-client", "version": "1.2.3"}]
        assert result.is_error is True and result.meta is not None
        assert result.meta["sharedos/code"] == "tool_unavailable"  # the SDK adds its serverInfo stamp beside it


async def test_exit_stops_sessions_unlinks_and_leaves_no_task(tmp_path: Path) -> None:
    before = set(asyncio.all_tasks())
    async with served(tmp_path) as turn:
        path = turn.handle.path
        idle = await anyio.connect_unix(path)
        async with unix_client(path) as t, ClientSession(t.read, t.write, client_info=CLIENT) as s:
            with anyio.fail_after(5):
                await s.initialize()
        with anyio.fail_after(5):
            while turn.handle.connections < 2 or not turn.kinds("connection.closed"):
                await anyio.sleep(0.01)
    with anyio.fail_after(5):
        assert await RawLines(idle).closed_by_server()
    await idle.aclose()
    assert not path.exists()
    with pytest.raises(OSError):
        await anyio.connect_unix(path)
    await anyio.sleep(0)
    assert set(asyncio.all_tasks()) == before
    assert sorted(e["reason"] for e in turn.kinds("connection.closed")) == ["eof", "server_closed"]
