"""An MCP SDK client transport straight over the turn's unix socket, without a relay process.

Newline-delimited JSON, the framing :mod:`runner.mcp.server` speaks (the stdio framing, so CLIs reach
it through a byte relay such as socat). Used where no relay is wanted: the bench's direct
measurement from inside a container, and the integration tests. Standalone on purpose (``anyio`` and
the ``mcp`` SDK only, never the rest of ``runner``): the bench copies this file into the container.

It ends by shutting the socket down, never by cancelling a task that waits on it;
:meth:`UnixTransport.drop` pulls the connection out from under a session at any moment, as a crashing
relay would.
"""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import SessionMessage

LINE_LIMIT = 8 * 1024 * 1024  # longer than any line the server sends
_GONE = (anyio.IncompleteRead, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError)


@dataclass
class UnixTransport:
    """The stream pair a ``ClientSession`` takes, and the connection under it."""

    read: MemoryObjectReceiveStream[SessionMessage | Exception]
    write: MemoryObjectSendStream[SessionMessage]
    stream: anyio.abc.SocketStream

    def drop(self) -> None:
        with suppress(OSError):
            self.stream.extra(anyio.abc.SocketAttribute.raw_socket).shutdown(socket.SHUT_RDWR)


@asynccontextmanager
async def unix_client(path: object, line_limit: int = LINE_LIMIT) -> AsyncIterator[UnixTransport]:
    stream = await anyio.connect_unix(str(path))
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)

    async def reader() -> None:
        buffered = BufferedByteReceiveStream(stream)
        async with read_send:
            while True:
                try:
                    line = await buffered.receive_until(b"\n", line_limit)
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                    await read_send.send(SessionMessage(message))
                except _GONE:
                    return

    async def writer() -> None:
        async with write_recv:
            async for message in write_recv:
                data = message.message.model_dump_json(by_alias=True, exclude_unset=True).encode() + b"\n"
                try:
                    await stream.send(data)
                except _GONE:
                    return

    transport = UnixTransport(read_recv, write_send, stream)
    async with stream, anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield transport
        finally:
            transport.drop()
            write_send.close()
            read_recv.close()
