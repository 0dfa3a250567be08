"""``runner.mcp.memory``: the real server's handlers on the SDK's in-memory streams, no socket."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as types

from runner.conformance.cases import get_case
from runner.core.envelope import Envelope, ServerIdentity
from runner.core.latch import EscalationLatch
from runner.core.world import build_world
from runner.mcp.encoding import CATALOG_HASH_META
from runner.mcp.memory import memory_session, memory_streams


def _authority() -> tuple[Any, EscalationLatch]:
    world = build_world(get_case("escalation").condition.world)
    envelope = Envelope(world, "escalation.baseline.reference", ServerIdentity("test", "1"), clock=world.clock)
    return envelope.catalogue, EscalationLatch(envelope, envelope.catalogue.names)


def test_a_memory_session_lists_and_calls_through_the_invoker() -> None:
    catalogue, latch = _authority()
    events: list[str] = []

    async def play() -> tuple[Any, ...]:
        info = types.Implementation(name="memory-test", version="9")
        async with memory_session(catalogue, latch, instructions="be good", client_info=info,
                                  on_event=lambda kind, _: events.append(kind)) as s:
            listing = await s.client.list_tools()
            result = await s.client.call_tool("files.read", {"path": ["Workspace", "policy.md"]})
            return s.initialize_result, listing, result, s.handle

    init, listing, result, handle = anyio.run(play)
    assert init.server_info.name == "sharedos" and init.instructions == "be good"
    assert sorted(t.name for t in listing.tools) == sorted(catalogue.names)
    assert listing.meta is not None and listing.meta[CATALOG_HASH_META] == catalogue.catalog_hash
    assert not result.is_error and result.content
    assert handle.calls == 1 and handle.sessions_initialized == 1
    assert handle.client_infos == [{"name": "memory-test", "version": "9"}]
    assert events == ["session.initialized", "tools.listed", "tool.called"]


def test_memory_streams_leave_the_handshake_to_the_caller() -> None:
    catalogue, latch = _authority()

    async def play() -> tuple[int, int, int]:
        from mcp import ClientSession

        async with memory_streams(catalogue, latch) as transport:
            before = transport.handle.sessions_initialized
            async with ClientSession(transport.read, transport.write) as client:
                await client.initialize()
                return before, transport.handle.sessions_initialized, transport.handle.calls

    assert anyio.run(play) == (0, 1, 0)
