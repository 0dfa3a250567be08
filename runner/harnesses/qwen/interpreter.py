"""``qwen -p ... -o stream-json`` stdout frames → steps.

Evidence: ``README.md`` (Qwen Code 0.24.4, measured against a scripted model and a stdio MCP server),
and the 0.24.4 bundle (``buildSystemMessage`` builds the init frame with
``mcp_servers: [{name, status: getMCPServerStatus(name)}]``).

Qwen's stream is Claude-Code-like, so the rules are Claude's
(:mod:`runner.harnesses.claude_code.interpreter`):

- ``{"type": "system", "subtype": "init", "mcp_servers": [{"name": "sharedos", "status":
  "connected"}], ...}`` → one :class:`McpStartup` per server, connected only for ``"connected"``
  (the other statuses Qwen knows are ``"connecting"`` and ``"disconnected"``). The profile sets
  ``mcp_startup_required: true``.
- ``{"type": "assistant", "message": {"content": [{"type": "text", "text": ...}]}}`` → messages;
  ``tool_use`` blocks (``mcp__sharedos__<tool>`` with ``alwaysLoadTools``, or the deferred proxy
  ``tool_call {name, arguments}``) are never calls here (calls travel over MCP).
- ``{"type": "result", "subtype": "success", "is_error": false, "result": "FINAL: ..."}`` ends the
  turn: ``is_error: true`` fails with code ``subtype`` (unless it is ``"success"``), else
  ``terminal_reason``, else ``harness_failed``; otherwise it completes with ``{"text": result}``.
- ``user`` tool results (``is_error: true`` for the MCP refusal), ``stream_event`` (``goal_state``)
  and every other frame yield nothing.

Ending without a result: SIGTERM to the launched PID kills only Qwen's launcher -- its two worker
processes keep running, finish the turn and still print a ``result`` to the inherited stdout; a
process-group SIGTERM ends it in 0.06 s with stderr "Operation cancelled." and **no** ``result``.
The profile therefore signals the process group, and a turn without a result is decided by the exit
status.
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue
from runner.harnesses.claude_code.interpreter import stream_json_steps
from runner.harnesses.stream import Step

FAILURE_TEXT = "The Qwen Code harness reported a failure."


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    return stream_json_steps(frame, FAILURE_TEXT)
