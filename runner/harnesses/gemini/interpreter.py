"""``gemini -p ... -o stream-json`` stdout frames → steps.

Evidence: ``README.md`` (Gemini CLI 0.61.0, measured against a scripted model and a stdio MCP
server), and the 0.61.0 bundle (``JsonStreamEventType``: ``init``,
``message``, ``tool_use``, ``tool_result``, ``error``, ``result``; ``emitFinalResult`` and the
``handle*Error`` functions).

Frames and rules:

- ``{"type": "message", "role": "assistant", "content": "...", "delta": true}``: a message. The
  CLI emits assistant prose *only* as delta chunks (one ``message`` per streamed chunk, all
  ``delta: true``). Each chunk becomes one :class:`Message`, in order. Joining the chunks of one
  reply into a single message needs state across frames, which a stream interpreter (a pure
  ``frame -> steps`` function, shared by every turn) does not have: until the stream layer grows a
  way to continue the previous message, a multi-chunk reply reaches the outcome's text joined with
  newlines. The scripted model answers in one chunk, so scripted turns are exact.
- ``{"type": "result", "status": "success"}`` → ``complete``; any other status (``"error"``, with
  ``error: {type, message}`` when the CLI had one -- auth, turn limit, cancellation, fatal tool
  error, invalid stream) → ``failed harness_failed`` with ``error.message``; retryable.
- ``{"type": "error", "severity": "warning"|"error", "message": ...}`` yields nothing: the CLI
  prints it for warnings, loop detection and invalid streams and then either carries on or ends with
  a ``result`` of status ``error``, which is the failure.
- ``init`` (no MCP status in it), user ``message``, ``tool_use`` / ``tool_result`` (an MCP refusal is
  ``status: "error"``, and the loop continues) yield nothing.

Ending without a result: with ``GEMINI_CLI_NO_RELAUNCH=true`` (or a process-group signal) SIGTERM
ends the CLI in 0.06-0.18 s **with exit status 0** and no ``result`` event (measured); the runtime's
deadline handling, not the exit status, is what tells that turn was stopped. Without the variable,
Gemini relaunches itself as a child and a SIGTERM to the launched PID does not stop the turn at all.
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue, ProtocolError
from runner.core.vocabulary import Code
from runner.harnesses.stream import Completed, Failed, Message, Step

FAILURE_TEXT = "The Gemini CLI reported a failed turn."


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    kind = frame.get("type")
    if kind == "message":
        content = frame.get("content")
        if frame.get("role") == "assistant" and isinstance(content, str) and content:
            return [Message(content)]
        return []
    if kind == "result":
        if frame.get("status") == "success":
            return [Completed()]
        error = frame.get("error")
        detail = error.get("message") if isinstance(error, dict) else None
        text = detail if isinstance(detail, str) and detail else FAILURE_TEXT
        return [Failed(ProtocolError.of(Code.HARNESS_FAILED, text, retryable=True))]
    return []
