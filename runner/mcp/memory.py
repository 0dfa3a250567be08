"""The real MCP server on the SDK's in-memory streams: no socket, no framing, the same handlers.

:func:`memory_streams` runs one session of :func:`runner.mcp.server.serve_mcp`'s server (the same
``Server`` with the same ``tools/list`` and ``tools/call`` handlers, middleware, invoker shielding and
events) behind ``mcp.shared.memory``'s stream pair, and yields the client's end of it;
:func:`memory_session` opens an SDK ``ClientSession`` on that end and initializes it. What is left
out is only the unix-socket transport (the listener, the line framing and its rejections, shutdown by
socket), so a figure taken here is the floor of a ``tools/call`` through the socket.

Used by the benchmark's floor (``python -m runner.bench``) and by tests that want a connected
session without a socket.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import mcp_types as types
from mcp import ClientSession
from mcp.server import NotificationOptions
from mcp.shared.memory import create_client_server_memory_streams

import runner
from runner.core.catalogue import Catalogue
from runner.core.protocol import RELEASED_EPOCH, ProtocolEpoch
from runner.mcp.server import EventSink, Invoker, McpServerHandle, McpService, McpSession

if TYPE_CHECKING:
    # the types of mcp.shared.memory's stream pair, which the SDK names only in this private module
    from mcp.shared._context_streams import ContextReceiveStream, ContextSendStream
    from mcp.shared.message import SessionMessage

MEMORY_PATH = Path("memory")  # what McpServerHandle.path reads for a server without a socket


@dataclass
class MemoryTransport:
    """The client's stream pair (what a ``ClientSession`` takes) and the server's handle."""

    read: ContextReceiveStream[SessionMessage | Exception]  # the SDK's context-carrying memory streams
    write: ContextSendStream[SessionMessage | Exception]
    handle: McpServerHandle


@dataclass
class MemorySession:
    """An initialized client session on the in-memory server, and the server's handle."""

    client: ClientSession
    handle: McpServerHandle
    initialize_result: types.InitializeResult


@asynccontextmanager
async def memory_streams(
    catalogue: Catalogue,
    invoker: Invoker,
    *,
    instructions: str | None = None,
    server_name: str = "sharedos",
    server_version: str = runner.__version__,
    on_event: EventSink | None = None,
    protocol: ProtocolEpoch = RELEASED_EPOCH,
) -> AsyncIterator[MemoryTransport]:
    """Serve ``catalogue`` through ``invoker`` as connection 1, on memory streams, until the block exits."""
    service = McpService(McpServerHandle(MEMORY_PATH), catalogue, invoker, instructions, server_name, server_version)
    service.on_event = on_event
    service.epoch = protocol
    # The session's socket is never touched: only its SDK server runs, not its read and write loops.
    session = McpSession(service, 1, None)
    options = session.server.create_initialization_options(NotificationOptions(tools_changed=False))
    async with create_client_server_memory_streams() as (client_streams, server_streams), \
            anyio.create_task_group() as tg:
        tg.start_soon(session.server.run, server_streams[0], server_streams[1], options)
        try:
            yield MemoryTransport(client_streams[0], client_streams[1], service.handle)
        finally:
            tg.cancel_scope.cancel()


@asynccontextmanager
async def memory_session(
    catalogue: Catalogue,
    invoker: Invoker,
    *,
    instructions: str | None = None,
    server_name: str = "sharedos",
    server_version: str = runner.__version__,
    on_event: EventSink | None = None,
    client_info: types.Implementation | None = None,
    protocol: ProtocolEpoch = RELEASED_EPOCH,
) -> AsyncIterator[MemorySession]:
    """:func:`memory_streams` with an SDK ``ClientSession`` on it, already through ``initialize``."""
    async with memory_streams(
        catalogue, invoker, instructions=instructions, server_name=server_name, server_version=server_version,
        on_event=on_event, protocol=protocol,
    ) as transport, ClientSession(transport.read, transport.write, client_info=client_info) as client:
        result = await client.initialize()
        yield MemorySession(client, transport.handle, result)


__all__ = ["MemorySession", "MemoryTransport", "memory_session", "memory_streams"]
