"""The MCP surface: the SDK server on the per-turn unix socket, and the result encoding.

The same server on in-memory streams, with a connected client session, is :mod:`runner.mcp.memory`
(not imported here: only the benchmark and tests need it)."""

from runner.mcp.encoding import to_call_tool_result, to_mcp_tool
from runner.mcp.server import MAX_MESSAGE_BYTES, Invoker, McpServerHandle, serve_mcp

__all__ = ["MAX_MESSAGE_BYTES", "Invoker", "McpServerHandle", "serve_mcp", "to_call_tool_result", "to_mcp_tool"]
