"""``opencode run --format json`` stdout frames → steps.

Evidence: ``README.md`` (opencode 1.18.33, measured against a scripted model and a stdio MCP
server), and opencode's ``packages/opencode/src/cli/cmd/run.ts``
(the ``emit(type, data)`` calls of the non-interactive loop).

Every line is ``{"type", "timestamp", "sessionID", ...}``. Rules:

- ``{"type": "text", "part": {"type": "text", "text": "FINAL: ..."}}`` (emitted once a text part is
  complete) → a message, unless blank.
- ``{"type": "step_finish", "part": {"reason": "stop"}}`` → ``complete``. opencode 1.18.33 has no
  dedicated final event: the turn ends at the last ``step_finish`` with ``reason: "stop"`` followed
  by exit 0; a step that called tools finishes with ``reason: "tool-calls"`` and yields nothing.
- ``{"type": "error", "error": {"name": ..., "data": {"message": ...}}}`` (a ``session.error``
  mirrored to stdout; ``run`` then exits 1) → ``failed harness_failed`` with ``data.message``, else
  ``message``, else ``name``; retryable.
- ``{"type": "done", "reason": "idle"}``, which newer opencode releases print once the session goes
  idle (``run.ts`` ``finish()``), → ``complete``; 1.18.33 does not print it, and after a ``stop``
  step it changes nothing (the first terminal wins).
- ``step_start``, ``tool_use`` (emitted only when a tool completes or errs -- the MCP refusal is
  ``state.status: "error"``, and the loop continues), ``reasoning`` yield nothing.

Ending without a ``stop`` step: SIGTERM exits 143 in 0.18 s with the stream stopped after a
``step_start`` (measured), so the exit status decides. opencode reports no MCP status on stdout; the
runtime's host-side MCP-session check covers a failed start.
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue, ProtocolError
from runner.core.vocabulary import Code
from runner.harnesses.stream import Completed, Failed, Message, Step

FAILURE_TEXT = "The opencode CLI reported a failure."


def _error_text(error: JsonValue, failure_text: str) -> str:
    if isinstance(error, dict):
        data = error.get("data")
        detail = data.get("message") if isinstance(data, dict) else None
        for candidate in (detail, error.get("message"), error.get("name")):
            if isinstance(candidate, str) and candidate:
                return candidate
    if isinstance(error, str) and error:
        return error
    return failure_text


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    return opencode_steps(frame)


def opencode_steps(frame: dict[str, JsonValue], failure_text: str = FAILURE_TEXT) -> list[Step]:
    """The rules above, with ``failure_text`` where an error frame says nothing (a fork names itself: Kilo)."""
    kind = frame.get("type")
    part = frame.get("part")
    part = part if isinstance(part, dict) else {}
    if kind == "text":
        text = part.get("text")
        return [Message(text)] if isinstance(text, str) and text.strip() else []
    if kind == "step_finish":
        return [Completed()] if part.get("reason") == "stop" else []
    if kind == "error":
        return [Failed(ProtocolError.of(Code.HARNESS_FAILED, _error_text(frame.get("error"), failure_text),
                                       retryable=True))]
    if kind == "done":
        return [Completed()]
    return []
