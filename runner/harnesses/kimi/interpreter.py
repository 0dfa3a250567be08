"""``kimi -p ... --output-format stream-json`` stdout frames → steps.

Evidence: ``README.md`` (Kimi Code 2.1.0, measured). Every line is one message of the conversation,
keyed by ``role``:

- ``{"role": "assistant", "content": "..."}`` → a message, unless blank. An assistant line with ``tool_calls``
  (``mcp__sharedos__<tool>``, arguments a JSON string) is never a call here (calls travel over MCP); its
  ``content``, when there is one, is still prose.
- ``{"role": "tool", "tool_call_id", "content"}`` (the MCP result, refusals included) yields nothing.
- ``{"role": "meta", "type": ...}``: ``system.version``, ``turn.step.retrying`` (a failed model request about to be
  retried, with ``error_name``/``error_message``), ``session.resume_hint`` (the last line of a completed turn) yield
  nothing. A ``meta`` line whose type is ``error``, or which ends in ``.failed``/``.error`` and carries an error
  message, fails the turn ``harness_failed``, retryable (no such line was seen: kept so a future release that
  prints one is not read as a success).

2.1.0 prints no terminal frame: a completed turn exits 0 after its last assistant line; a model API that keeps
failing exits 1 with only ``error: failed to run prompt: provider.<code>: <message>`` on stderr. So the exit status
decides (0 completes with the joined prose, non-zero fails ``harness_exited_without_outcome``).
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue, ProtocolError
from runner.core.vocabulary import Code
from runner.harnesses.stream import Failed, Message, Step

FAILURE_TEXT = "The Kimi Code CLI reported a failure."


def _meta_failure(frame: dict[str, JsonValue]) -> Failed | None:
    kind = frame.get("type")
    if not isinstance(kind, str) or not (kind == "error" or kind.endswith((".failed", ".error"))):
        return None
    text = frame.get("error_message") or frame.get("message")
    return Failed(ProtocolError.of(Code.HARNESS_FAILED, text if isinstance(text, str) and text else FAILURE_TEXT,
                                   retryable=True))


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    role = frame.get("role")
    if role == "assistant":
        content = frame.get("content")
        return [Message(content)] if isinstance(content, str) and content.strip() else []
    if role == "meta":
        failed = _meta_failure(frame)
        return [failed] if failed else []
    return []
