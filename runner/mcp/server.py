"""The host-side MCP server: the turn's catalogue over a unix socket, one MCP session per connection.

Built on the SDK's low-level :class:`mcp.server.Server` (upstream ``McpToolServer``, §3.5). What SDK
2.3.0 checks on its own: the JSON-RPC/MCP shape of ``tools/call`` params (``name`` a string,
``arguments`` an object or absent: else -32602), that ``initialize`` came first (else -32602), and the
result against the negotiated version's schema. It does *not* check ``arguments`` against a tool's
``inputSchema``, nor results against ``outputSchema``, and keeps no tool cache, so unknown names and
schema-violating arguments reach the invoker as sent (only the client SDK validates
``structuredContent``). Name resolution (exact, unique portable, raw) is :meth:`Catalogue.resolve`;
every refusal comes back as a result with ``isError`` (§8 items 1, 10). Only a message that cannot be
processed at all gets a JSON-RPC error.

The transport is newline-delimited JSON on a unix socket (the same framing as stdio, so a byte relay
in the container works). A bad line costs only that line, an oversized or truncated one only its
own session; the listener keeps serving until :func:`serve_mcp` exits.

A call handed to the invoker runs to completion even if its connection drops (or the client cancels
it) meanwhile: once it has passed the latch it is part of the turn (§3.4 "Concurrency"), so only
:func:`serve_mcp`'s own exit, after the grace period, may cut it short.
"""

from __future__ import annotations

import logging
import os
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, TypeAlias
from uuid import uuid4

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.buffered import BufferedByteReceiveStream
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server import NotificationOptions, Server, ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

import runner
from runner.core.catalogue import Catalogue
from runner.core.outcomes import JsonValue, ToolCall, ToolResult
from runner.core.protocol import RELEASED_EPOCH, ProtocolEpoch
from runner.mcp.encoding import CATALOG_HASH_META, EXECUTION_ID_META, to_call_tool_result, to_mcp_tool
from runner.mcp.epoch import EpochGate
from runner.mcp.framing import answer_to_unparsable

logger = logging.getLogger(__name__)

MAX_MESSAGE_BYTES = 4 * 1024 * 1024  # one JSON-RPC line; a longer one closes its session
SHUTDOWN_GRACE = 2.0  # seconds sessions get to wind down when serve_mcp exits
WRITE_BUFFER = 64  # queued outbound messages per session, so a shutdown write never waits on the socket
INTERNAL_ERROR_MESSAGE = "SharedOS could not answer this request."
NO_TOOL_NAME_MESSAGE = "tools/call requires a tool name."

EventSink: TypeAlias = Callable[[str, dict[str, JsonValue]], None]


class Invoker(Protocol):
    """The one method every MCP call passes through (the escalation latch, or the envelope)."""

    async def invoke_tool(self, call: ToolCall) -> ToolResult: ...


@dataclass
class McpServerHandle:
    """What the turn sees of a running server: its socket and what has happened on it."""

    path: Path
    connections: int = 0
    sessions_initialized: int = 0
    calls: int = 0
    client_infos: list[dict[str, str]] = field(default_factory=list)  # each client's name and version


@asynccontextmanager
async def serve_mcp(
    socket_path: Path,
    catalogue: Catalogue,
    invoker: Invoker,
    *,
    instructions: str | None = None,
    server_name: str = "sharedos",
    server_version: str = runner.__version__,
    on_event: EventSink | None = None,
    protocol: ProtocolEpoch = RELEASED_EPOCH,
    sock: socket.socket | None = None,
) -> AsyncIterator[McpServerHandle]:
    """Serve ``catalogue`` on ``socket_path`` until the block exits; then stop every session and unlink.
    ``protocol``: the SharedOS epoch its messages speak (:mod:`runner.mcp.epoch`).

    ``sock``: that path's socket, already bound and listening (the turn binds it before the CLI's container starts,
    so a client that connects while this process is still importing the SDK waits in the backlog, and made reachable
    by the container's uid); it is taken over and closed here. A socket bound here is this process's uid's alone."""
    service = McpService(McpServerHandle(socket_path), catalogue, invoker, instructions, server_name, server_version)
    service.on_event = on_event
    service.epoch = protocol
    if sock is not None:
        listener: anyio.abc.SocketListener = await anyio.abc.SocketListener.from_socket(sock)
    else:
        listener = await anyio.create_unix_listener(socket_path)
    try:
        if sock is None:
            os.chmod(socket_path, 0o600)  # this uid's alone; a client of another uid is handed a socket made for it
        async with anyio.create_task_group() as tg:
            tg.start_soon(service.accept_loop, listener, tg)
            try:
                yield service.handle
            finally:
                with anyio.CancelScope(shield=True):
                    await service.stop(listener)
                tg.cancel_scope.cancel()  # whatever did not wind down within the grace period
    finally:
        with anyio.CancelScope(shield=True):
            await listener.aclose()
        socket_path.unlink(missing_ok=True)


class McpService:
    """What one turn's MCP server serves: its catalogue, through its invoker, to every session it holds (on the
    turn's socket, or one session on memory streams: :mod:`runner.mcp.memory`)."""

    def __init__(
        self,
        handle: McpServerHandle,
        catalogue: Catalogue,
        invoker: Invoker,
        instructions: str | None,
        name: str,
        version: str,
    ) -> None:
        self.handle = handle
        self.catalogue = catalogue
        self.invoker = invoker
        self.instructions = instructions
        self.name = name
        self.version = version
        self.on_event: EventSink | None = None
        self.epoch = RELEASED_EPOCH  # the SharedOS protocol epoch (serve_mcp's protocol)
        self.sessions: set[McpSession] = set()
        self.inflight: set[anyio.CancelScope] = set()  # calls the invoker is running
        self.stopping = False
        # the catalogue is fixed for the turn (ADR 0026): projected once, served as is
        self.listing = types.ListToolsResult(
            tools=[to_mcp_tool(t) for t in catalogue.tools],
            _meta={CATALOG_HASH_META: catalogue.catalog_hash, EXECUTION_ID_META: catalogue.execution_id},
        )

    async def invoke(self, call: ToolCall) -> ToolResult:
        """Run ``call`` through the invoker to completion, whatever happens to the session that sent it.

        The SDK cancels a session's in-flight handlers when its connection ends (and on
        ``notifications/cancelled``). Left unshielded, a call that had already passed the latch would
        be abandoned half way through an asynchronous host, unrecorded, although upstream runs such
        calls to completion. Only :meth:`stop`, after the grace period, cancels it.
        """
        with anyio.CancelScope(shield=True) as scope:
            self.inflight.add(scope)
            try:
                return await self.invoker.invoke_tool(call)
            finally:
                self.inflight.discard(scope)
        raise RuntimeError("the MCP server stopped before the call finished")

    def emit(self, kind: str, data: dict[str, JsonValue]) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(kind, data)
        except Exception:
            logger.exception("on_event(%r) raised", kind)

    # --- listener ----------------------------------------------------------------------------

    async def accept_loop(self, listener: anyio.abc.SocketListener, tg: anyio.abc.TaskGroup) -> None:
        while True:
            try:
                stream = await listener.accept()
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                return
            except Exception:  # EMFILE, ECONNABORTED, ...: never let the listener die
                logger.exception("accept failed on %s", self.handle.path)
                await anyio.sleep(0.05)
                continue
            self.handle.connections += 1
            session = McpSession(self, self.handle.connections, stream)
            self.sessions.add(session)  # registered before it starts, so stop() always reaches it
            tg.start_soon(self.connection, session)

    async def connection(self, session: McpSession) -> None:
        number = session.number
        self.emit("connection.opened", {"connection": number})
        reason = "error"
        try:
            async with session.stream:
                reason = await session.run()
        except anyio.get_cancelled_exc_class():
            reason = "cancelled"
            raise
        except Exception:
            logger.exception("MCP session %d failed", number)
        finally:
            self.sessions.discard(session)
            self.emit("connection.closed", {"connection": number, "reason": reason})

    async def stop(self, listener: anyio.abc.SocketListener) -> None:
        """Stop accepting, then end every session by shutting its socket down, not by cancelling it.

        A task cancelled while it waits on an anyio UNIX socket (asyncio backend, anyio 4.16) can
        make the loop log ``InvalidStateError`` from ``Future.set_result``; a shutdown wakes the
        reader with end-of-stream instead, and each session then unwinds by itself.
        """
        self.stopping = True
        await listener.aclose()
        for session in list(self.sessions):
            session.shutdown()
        with anyio.move_on_after(SHUTDOWN_GRACE):
            while self.sessions:
                await anyio.sleep(0.005)
        for scope in list(self.inflight):
            scope.cancel()  # a call still running after the grace period is cut short with its server


class McpSession:
    """One connection: framing on the socket, one SDK ``Server.run`` behind memory streams."""

    def __init__(self, service: McpService, number: int, stream: anyio.abc.SocketStream | None) -> None:
        self.service = service
        self.number = number
        self._stream = stream  # None: only the SDK server runs (runner.mcp.memory), never the socket loops
        self.initialized = False
        self.server: Server[Any] = Server(
            service.name,
            version=service.version,
            instructions=service.instructions,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
        )
        if service.epoch.stamps:  # outermost: a refused pin leaves no trace, and every answer is stamped last
            self.server.middleware.append(EpochGate(service.epoch, self.refused_pin))
        self.server.middleware.append(self._observe)

    @property
    def stream(self) -> anyio.abc.SocketStream:
        if self._stream is None:
            raise RuntimeError(f"MCP session {self.number} has no socket: it runs on memory streams")
        return self._stream

    def shutdown(self) -> None:
        """Wake whoever waits on the socket: the reader with end-of-stream, the writer with a broken pipe."""
        raw = self.stream.extra(anyio.abc.SocketAttribute.raw_socket)
        with suppress(OSError):
            raw.shutdown(socket.SHUT_RDWR)

    async def run(self) -> str:
        read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
        write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](WRITE_BUFFER)
        replies = write_send.clone()  # the reader's own answers to lines the SDK never sees
        options = self.server.create_initialization_options(NotificationOptions(tools_changed=False))
        broken = False

        async def write_loop() -> None:
            nonlocal broken
            async with write_recv:
                async for message in write_recv:
                    text = message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    try:
                        await self.stream.send(text.encode() + b"\n")
                    except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                        broken = True
                        self.shutdown()  # the reader sees end-of-stream and the session unwinds
                        return

        async with anyio.create_task_group() as tg:
            tg.start_soon(self.server.run, read_recv, write_send, options)
            tg.start_soon(write_loop)
            outcome = await self.read_loop(BufferedByteReceiveStream(self.stream), read_send, replies)
        if self.service.stopping and outcome in ("eof", "disconnected"):
            return "server_closed"
        return "disconnected" if broken and outcome == "eof" else outcome

    async def read_loop(
        self,
        reader: BufferedByteReceiveStream,
        read_send: MemoryObjectSendStream[SessionMessage | Exception],
        replies: MemoryObjectSendStream[SessionMessage],
    ) -> str:
        async with read_send, replies:
            while True:
                try:
                    line = await reader.receive_until(b"\n", MAX_MESSAGE_BYTES)
                except anyio.IncompleteRead:
                    if reader.buffer.strip():
                        self.reject("truncated", len(reader.buffer))
                        return "truncated"
                    return "eof"
                except anyio.DelimiterNotFound:
                    self.reject("oversized", len(reader.buffer))
                    return "oversized"
                except (anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
                    return "disconnected"
                if len(line) > MAX_MESSAGE_BYTES:  # a chunk can carry a line past the bound with its newline
                    self.reject("oversized", len(line))
                    return "oversized"
                if not line.strip():
                    continue
                try:
                    message = types.jsonrpc_message_adapter.validate_json(line, by_name=False)
                except ValueError:
                    error = self.answer_unparsable(line)
                    with suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                        await replies.send(SessionMessage(error))
                    continue
                try:
                    await read_send.send(SessionMessage(message))
                except (anyio.BrokenResourceError, anyio.ClosedResourceError):
                    return "session_ended"

    def answer_unparsable(self, line: bytes) -> types.JSONRPCError:
        """-32700 (id null) for non-JSON or a message with no usable id; -32600 with the id otherwise."""
        reason, answer = answer_to_unparsable(line)
        self.reject(reason, len(line))
        return answer

    def reject(self, reason: str, size: int) -> None:
        self.service.emit("message.rejected", {"connection": self.number, "reason": reason, "bytes": size})

    def refused_pin(self, method: str, received: JsonValue) -> None:
        self.service.emit("protocol.refused", {"connection": self.number, "method": method, "received": received})

    # --- MCP ---------------------------------------------------------------------------------

    async def _observe(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        """Middleware: notices the handshake (or a 2026 per-request envelope) once per session."""
        params = ctx.params or {}
        if ctx.method == "initialize" and ctx.request_id is not None:
            result = await call_next(ctx)
            version = result.get("protocolVersion") if isinstance(result, dict) else None
            self.mark_initialized(params.get("clientInfo"), version)
            return result
        if ctx.request_id is not None and ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            meta = params.get("_meta")
            info = meta.get(types.CLIENT_INFO_META_KEY) if isinstance(meta, dict) else None
            self.mark_initialized(info, ctx.protocol_version)
        return await call_next(ctx)

    def mark_initialized(self, client_info: JsonValue, protocol_version: JsonValue) -> None:
        if self.initialized:
            return
        self.initialized = True
        handle = self.service.handle
        info = client_info if isinstance(client_info, dict) else {}
        entry = {k: value for k in ("name", "version") if isinstance(value := info.get(k), str)}
        handle.sessions_initialized += 1
        handle.client_infos.append(entry)
        self.service.emit(
            "session.initialized",
            {"connection": self.number, "clientInfo": {**entry}, "protocolVersion": protocol_version},
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self.service.emit("tools.listed", {"connection": self.number, "count": len(self.service.listing.tools)})
        return self.service.listing

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if not params.name:
            raise MCPError(code=types.INVALID_PARAMS, message=NO_TOOL_NAME_MESSAGE)
        service = self.service
        service.handle.calls += 1
        resolved = service.catalogue.resolve(params.name)
        alias = params.name if params.name != resolved else None
        arguments = params.arguments if params.arguments is not None else {}
        call = ToolCall(call_id=str(uuid4()), tool=resolved, arguments=arguments, alias=alias)
        event: dict[str, JsonValue] = {
            "connection": self.number, "callId": call.call_id, "tool": resolved, "alias": alias
        }
        try:
            result = await service.invoke(call)
            encoded = to_call_tool_result(result, service.catalogue.get(resolved))
        except Exception as err:
            logger.exception("tools/call %r could not be answered", resolved)
            service.emit("tool.called", {**event, "status": "error", "code": None, "error": repr(err)})
            raise MCPError(code=types.INTERNAL_ERROR, message=INTERNAL_ERROR_MESSAGE) from None
        code = result.error.code if result.error is not None else None
        service.emit("tool.called", {**event, "status": result.status.value, "code": code})
        return encoded


__all__ = ["MAX_MESSAGE_BYTES", "Invoker", "McpServerHandle", "serve_mcp"]
