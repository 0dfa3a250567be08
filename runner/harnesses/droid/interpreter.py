"""``droid exec -o stream-json`` stdout frames → steps.

Evidence: ``README.md`` (0.225.2, measured on the host against ``python -m runner.model``). Lines:

- ``{"type": "system", "subtype": "init", "cwd", "session_id", "tools": [...], "model", ...}``: no MCP status (the
  MCP tools are not in ``tools`` even when connected: they are deferred) → nothing.
- ``{"type": "message", "role": "assistant", "text": "..."}`` → a message, unless blank; ``role: "user"`` (the
  prompt echoed) → nothing.
- ``{"type": "completion", "finalText": "...", "numTurns", "durationMs", "usage"}`` ends the turn → ``complete``
  with ``{"text": finalText}``.
- ``{"type": "error", "source": "cli", "message": "Exec ended early: ..."}`` (measured: an MCP call refused by its
  autonomy level; exit 1 follows) → ``failed harness_failed`` with its ``message``; a ``completion`` with
  ``is_error: true`` the same [unverified: not seen].
- ``tool_call`` / ``tool_result`` (the ToolSearch and MCP calls, ``isError`` for the refusal) → nothing.
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue, ProtocolError
from runner.core.vocabulary import Code
from runner.harnesses.stream import Completed, Failed, Message, Step

FAILURE_TEXT = "The Factory Droid CLI reported a failure."


def _failed(frame: dict[str, JsonValue]) -> Failed:
    error = frame.get("error")
    candidates = [frame.get("message"), error.get("message") if isinstance(error, dict) else error]
    text = next((c for c in candidates if isinstance(c, str) and c), FAILURE_TEXT)
    return Failed(ProtocolError.of(Code.HARNESS_FAILED, text, retryable=True))


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    kind = frame.get("type")
    if kind == "message" and frame.get("role") == "assistant":
        text = frame.get("text")
        return [Message(text)] if isinstance(text, str) and text.strip() else []
    if kind == "completion":
        if frame.get("is_error") is True:
            return [_failed(frame)]
        text = frame.get("finalText")
        return [Completed({"text": text} if isinstance(text, str) else None)]
    if kind == "error":
        return [_failed(frame)]
    return []
