"""``copilot -p ... --output-format json`` stdout frames → steps.

Every line is ``{"type", "data", "id", "timestamp", "parentId", "ephemeral"?}`` (measured on 1.0.102;
the evidence: ``README.md``). Rules:

- ``session.mcp_servers_loaded`` (``data.servers[]``: ``name``, ``status``) → one
  :class:`McpStartup` per server that is not ``disabled`` (the built-in servers are listed as
  disabled with ``--disable-builtin-mcps`` and offline mode); ``connected`` only for ``connected``.
- ``assistant.message`` with a non-blank ``data.content`` → a message (a step that calls tools
  carries ``toolRequests`` and usually no content).
- ``session.error`` → ``failed harness_failed`` with ``data.message``; retryable.
- ``result`` (the last line, with ``exitCode``) → ``complete`` when ``exitCode`` is 0, else
  ``failed harness_failed``.
- everything else (``*_delta``, ``tool.execution_*``, ``assistant.turn_*``, ``model.call_*``,
  ``session.*``) yields nothing.
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue, ProtocolError
from runner.core.vocabulary import Code
from runner.harnesses.stream import Completed, Failed, McpStartup, Message, Step

FAILURE_TEXT = "The Copilot CLI reported a failure."


def _failed(text: object) -> Failed:
    message = text if isinstance(text, str) and text else FAILURE_TEXT
    return Failed(ProtocolError.of(Code.HARNESS_FAILED, message, retryable=True))


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    kind = frame.get("type")
    data = frame.get("data")
    data = data if isinstance(data, dict) else {}
    if kind == "session.mcp_servers_loaded":
        servers = data.get("servers")
        return [
            McpStartup(str(s.get("name")), s.get("status") == "connected", str(s.get("error") or s.get("status")))
            for s in (servers if isinstance(servers, list) else [])
            if isinstance(s, dict) and s.get("status") != "disabled"
        ]
    if kind == "assistant.message":
        text = data.get("content")
        return [Message(text)] if isinstance(text, str) and text.strip() else []
    if kind == "session.error":
        return [_failed(data.get("message"))]
    if kind == "result":
        return [Completed()] if frame.get("exitCode") == 0 else [_failed(None)]
    return []
