"""``cline --json <prompt>`` stdout frames → steps.

Every line is ``{"ts", "type", ...}`` (measured on 3.0.65; the evidence: ``README.md``):
``hook_event`` (``hookEventName`` agent_start, tool_call, tool_result, agent_end, agent_error),
``agent_event`` (``event.type`` iteration_start/_end, content_start/_end, usage, error, done) and
last ``run_result``. Rules:

- ``agent_event`` whose ``event`` is ``content_end`` with ``contentType: "text"`` → a message,
  unless blank (tool content is ``contentType: "tool"``).
- ``run_result`` → ``complete`` when ``finishReason`` is ``completed``, with ``text`` as the output
  when it is a non-blank string; any other reason (``error``, ...) → ``failed harness_failed`` with
  ``text``, retryable.
- a top-level ``{"type": "error", "message"}`` (printed after a failed ``run_result``) →
  ``failed harness_failed``; after ``run_result`` it changes nothing (the first terminal wins).
- everything else yields nothing (an ``agent_event`` ``error`` is followed by ``run_result``).
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue, ProtocolError
from runner.core.vocabulary import Code
from runner.harnesses.stream import Completed, Failed, Message, Step

FAILURE_TEXT = "The Cline CLI reported a failure."


def _failed(text: object) -> Failed:
    message = text if isinstance(text, str) and text.strip() else FAILURE_TEXT
    return Failed(ProtocolError.of(Code.HARNESS_FAILED, message, retryable=True))


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    kind = frame.get("type")
    if kind == "agent_event":
        event = frame.get("event")
        if isinstance(event, dict) and event.get("type") == "content_end" and event.get("contentType") == "text":
            text = event.get("text")
            return [Message(text)] if isinstance(text, str) and text.strip() else []
        return []
    if kind == "run_result":
        text = frame.get("text")
        if frame.get("finishReason") == "completed":
            return [Completed({"text": text} if isinstance(text, str) and text.strip() else None)]
        return [_failed(text)]
    if kind == "error":
        return [_failed(frame.get("message"))]
    return []
