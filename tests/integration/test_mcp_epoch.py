"""Protocol epoch 2 on the real socket (ADR 0027), driven by a raw client: the MCP SDK's own ClientSession over the
unix socket, pinning the epoch in ``_meta["sharedos/protocolVersion"]`` as a SharedOS-aware client does (on
``initialize`` and on ``tools/call``). A pin of epoch 1 against an epoch-2 server is a JSON-RPC -32602 with
``unsupported_protocol_version`` before anything runs; a pin of epoch 2 is served, with the epoch on every answer.
What the server wrote on the wire is read as well as what the SDK parsed from it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import ClientSession, MCPError
from mcp_types.version import LATEST_HANDSHAKE_VERSION

from runner.core.envelope import Envelope, ServerIdentity
from runner.core.latch import EscalationLatch
from runner.core.protocol import PROTOCOL_VERSION_META, ProtocolEpoch
from runner.core.world import build_world
from runner.mcp.server import serve_mcp
from runner.mcp.unix_client import unix_client
from tests.integration.test_mcp_socket import RawLines, Turn

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

POLICY = {"path": ["Workspace", "policy.md"]}
CLIENT = types.Implementation(name="epoch-client", version="2.0.0")
EPOCH_2 = {PROTOCOL_VERSION_META: "2"}


@asynccontextmanager
async def served(tmp_path: Path, protocol: ProtocolEpoch) -> AsyncIterator[Turn]:
    env = Envelope(build_world(), "exec-epoch", ServerIdentity("runner.reference.mcp", "0.1.0", protocol.value))
    latch = EscalationLatch(env, env.catalogue.names)
    events: list[tuple[str, dict[str, Any]]] = []
    async with serve_mcp(tmp_path / "mcp.sock", env.catalogue, latch, instructions="Use the SharedOS tools.",
                         on_event=lambda kind, data: events.append((kind, data)), protocol=protocol) as handle:
        yield Turn(env, latch, handle, events)


async def pinned_initialize(session: ClientSession, pin: str | None) -> types.InitializeResult:
    """``initialize`` as ``ClientSession.initialize`` sends it, with the epoch pinned in its params' ``_meta``
    (the SDK's own call sends no ``_meta``), then adopted and acknowledged as the SDK does."""
    params = types.InitializeRequestParams(
        protocol_version=LATEST_HANDSHAKE_VERSION, capabilities=types.ClientCapabilities(), client_info=CLIENT,
        _meta={PROTOCOL_VERSION_META: pin} if pin is not None else None,
    )
    result = await session.send_request(types.InitializeRequest(params=params), types.InitializeResult)
    session.adopt(result)
    await session.send_notification(types.InitializedNotification())
    return result


def refused_for_epoch(error: MCPError, received: Any) -> None:
    assert error.code == types.INVALID_PARAMS == -32602
    assert error.data == {"code": "unsupported_protocol_version", "supportedVersion": "2", "receivedVersion": received}
    assert 'supported version is "2"' in error.message


# --- epoch 2, a client pinning epoch 2 ------------------------------------------------------------


async def test_a_client_pinning_epoch_2_is_served_with_the_epoch_on_every_answer(tmp_path: Path) -> None:
    async with served(tmp_path, ProtocolEpoch.TWO) as turn:
        async with unix_client(turn.handle.path) as t, ClientSession(t.read, t.write, client_info=CLIENT) as s:
            with anyio.fail_after(5):
                init = await pinned_initialize(s, "2")
                listing = await s.list_tools()
                read = await s.call_tool("files.read", POLICY, meta=EPOCH_2)
                unknown = await s.call_tool("no.such.tool", {}, meta=EPOCH_2)
                ask = await s.call_tool("sharedos.escalate", {"reason": "The owner decides."}, meta=EPOCH_2)
                pending = await s.call_tool("files.read", POLICY, meta=EPOCH_2)
        # MCP's own date version is negotiated as before, independent of the epoch
        assert init.protocol_version == LATEST_HANDSHAKE_VERSION
        assert init.meta == EPOCH_2 and init.instructions == "Use the SharedOS tools."
        assert listing.meta == {"sharedos/catalogHash": turn.env.catalogue.catalog_hash,
                                "sharedos/executionId": "exec-epoch", **EPOCH_2}
        assert {tool.name for tool in listing.tools} == set(turn.env.catalogue.names)
        assert all(tool.meta is not None and PROTOCOL_VERSION_META not in tool.meta for tool in listing.tools)
        assert read.is_error is False and read.meta == EPOCH_2  # a success: only the epoch (none before epoch 2)
        assert json.loads(read.content[0].text)["content"] == "Only the owner changes policy.\n"  # type: ignore[union-attr]
        assert unknown.meta == {"sharedos/status": "denied", "sharedos/code": "tool_unavailable", **EPOCH_2}
        assert ask.is_error is False and ask.meta == EPOCH_2  # the latch's answer goes through the same stamp
        assert pending.meta == {"sharedos/status": "denied", "sharedos/code": "escalation_pending", **EPOCH_2}
        assert [op["tool"] for op in turn.env.operations] == ["files.read", "no.such.tool"]
        assert turn.latch.reason == "The owner decides."
        assert turn.handle.sessions_initialized == 1 and not turn.kinds("protocol.refused")


async def test_every_line_an_epoch_2_server_answers_carries_the_epoch(tmp_path: Path) -> None:
    # on the wire, as a client that is no SDK reads it: no answer to a request goes without the stamp
    async with served(tmp_path, ProtocolEpoch.TWO) as turn:
        stream = await anyio.connect_unix(str(turn.handle.path))
        async with stream:
            raw = RawLines(stream)
            requests: list[dict[str, Any]] = [
                {"method": "initialize", "params": {"protocolVersion": "2024-11-05", "capabilities": {},
                                                    "clientInfo": {"name": "raw", "version": "0"}}},
                {"method": "tools/list"},
                {"method": "tools/call", "params": {"name": "files.read", "arguments": POLICY}},
                {"method": "tools/call", "params": {"name": "files.write", "arguments": {"path": ["x"]}}},
            ]
            answers = []
            for number, request in enumerate(requests, 1):
                await raw.send(json.dumps({"jsonrpc": "2.0", "id": number, **request}).encode() + b"\n")
                answers.append(await raw.receive())
                if number == 1:
                    await raw.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        assert answers[0]["result"]["protocolVersion"] == "2024-11-05"  # echoed, as before epoch 2
        assert [answer["id"] for answer in answers] == [1, 2, 3, 4]
        for answer in answers:
            assert answer["result"]["_meta"][PROTOCOL_VERSION_META] == "2", answer


async def test_an_unpinned_client_like_every_vendor_cli_is_served_and_stamped(tmp_path: Path) -> None:
    async with served(tmp_path, ProtocolEpoch.TWO) as turn:
        async with unix_client(turn.handle.path) as t, ClientSession(t.read, t.write, client_info=CLIENT) as s:
            with anyio.fail_after(5):
                init = await s.initialize()
                read = await s.call_tool("files.read", POLICY)
        assert init.meta == EPOCH_2 and read.meta == EPOCH_2 and read.is_error is False
        assert len(turn.env.operations) == 1


# --- epoch 2, a client pinning epoch 1 (or anything else) -------------------------------------------


async def test_a_client_pinning_epoch_1_at_initialize_is_refused_before_the_session_starts(tmp_path: Path) -> None:
    async with served(tmp_path, ProtocolEpoch.TWO) as turn:
        async with unix_client(turn.handle.path) as t, ClientSession(t.read, t.write, client_info=CLIENT) as s:
            with anyio.fail_after(5), pytest.raises(MCPError) as caught:
                await pinned_initialize(s, "1")
        refused_for_epoch(caught.value, "1")
        # a refused initialize leaves no session: nothing initialized, nothing listed, nothing invoked
        assert turn.handle.sessions_initialized == 0 and turn.handle.client_infos == []
        assert turn.kinds("protocol.refused") == [{"connection": 1, "method": "initialize", "received": "1"}]
        assert turn.handle.calls == 0 and turn.env.operations == []


@pytest.mark.parametrize("pin", ["1", "3", 2])
async def test_a_call_pinning_another_epoch_is_refused_before_anything_is_invoked(tmp_path: Path, pin: Any) -> None:
    async with served(tmp_path, ProtocolEpoch.TWO) as turn:
        async with unix_client(turn.handle.path) as t, ClientSession(t.read, t.write, client_info=CLIENT) as s:
            with anyio.fail_after(5):
                await pinned_initialize(s, "2")
                errors = []
                for name, arguments in (("files.read", POLICY), ("sharedos.escalate", {"reason": "r"})):
                    with pytest.raises(MCPError) as caught:
                        await s.call_tool(name, arguments, meta={PROTOCOL_VERSION_META: pin})
                    errors.append(caught.value)
                after = await s.call_tool("files.read", POLICY, meta=EPOCH_2)  # the session goes on
        for error in errors:
            refused_for_epoch(error, pin)
        # neither the latch nor the envelope saw the refused calls; the server counted none of them
        assert turn.latch.reason is None and turn.handle.calls == 1
        assert [op["tool"] for op in turn.env.operations] == ["files.read"]
        assert [e["type"] for e in turn.env.events].count("tool.requested") == 1
        assert [c["tool"] for c in turn.kinds("tool.called")] == ["files.read"]
        assert len(turn.kinds("protocol.refused")) == 2
        assert after.meta == EPOCH_2


# --- epoch 1: what upstream released -------------------------------------------------------------------


async def test_an_epoch_1_server_stamps_nothing_and_ignores_a_pin(tmp_path: Path) -> None:
    async with served(tmp_path, ProtocolEpoch.ONE) as turn:
        async with unix_client(turn.handle.path) as t, ClientSession(t.read, t.write, client_info=CLIENT) as s:
            with anyio.fail_after(5):
                init = await pinned_initialize(s, "2")
                listing = await s.list_tools()
                read = await s.call_tool("files.read", POLICY, meta=EPOCH_2)
                unknown = await s.call_tool("no.such.tool", {}, meta={PROTOCOL_VERSION_META: "1"})
        assert init.meta is None and read.meta is None
        assert listing.meta is not None and PROTOCOL_VERSION_META not in listing.meta
        assert unknown.meta == {"sharedos/status": "denied", "sharedos/code": "tool_unavailable"}
        assert len(turn.env.operations) == 2
