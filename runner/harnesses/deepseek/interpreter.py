"""DeepSeek Harness session-event frames → steps (upstream ``deepseek/protocol.ts@49ec635b``, §5.2).

Evidence: ``reference/sharedos-reference.md`` §5.1/§5.2 and §4.6 (the upstream rules, reproduced
here exactly), and the published ``@deepseek-ai/dsh-headless@0.1.0-rc.8`` README.

A frame is a session-log event, bare ``{"type", "data"}`` or wrapped in a JSON-RPC notification
``{"method": "session.event", "params": {"event": {"type", "data"}}}``; both are read, so a recorded
log and a live session speak the same protocol.

- ``tool/call`` ``{callId, name, arguments: "<json string>"}``: a tool call, never acted on here
  (calls travel over MCP) -- except that arguments that are not a JSON object (an empty string is
  ``{}``) fail ``harness_arguments_unparseable`` (no retryable flag), even on the MCP path.
- ``assistant/message`` ``{message: {content: [...]}}``: each ``text`` block is a message;
  ``tool-call`` blocks are skipped deliberately, since ``tool/call`` already carries them.
- ``turn/end`` ``{reason: {kind, error?: {code?, message?}}}``: kinds ``aborted``, ``blocked``,
  ``error``, ``max-tokens`` and ``interrupted`` fail with code ``reason.error.code`` or
  ``harness_turn_<kind, '-' → '_'>`` and the vendor's message or a fixed one, retryable; any other
  kind, ``completed`` included, completes.
- Anything else yields nothing.

**Where the frames come from.** Upstream's open question (§9: "whether ``dsh --profile headless``
prints session-log JSON on stdout") is settled by measurement on 0.1.0-rc.8: it does not. stdout is
the last assistant text and a newline (plain text, so this interpreter sees no frames there), and the
events above are read from the session log after dsh exits (:mod:`runner.harnesses.deepseek.session`),
through this same function. Since SIGTERM also exits 0, "exit 0 completes" is not enough there: the
session reader fails a turn whose log has no ``turn/end``.
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue, ProtocolError
from runner.harnesses.claude_code.interpreter import assistant_steps
from runner.harnesses.codex.interpreter import ARGUMENTS_UNPARSEABLE, arguments_object, cli_code
from runner.harnesses.stream import Completed, Failed, Step

TURN_END_FAILURES: dict[str, str] = {
    "aborted": "The DeepSeek Harness turn was cancelled before it completed.",
    "blocked": "The DeepSeek Harness turn was blocked before it completed.",
    "error": "The DeepSeek Harness turn ended in an error.",
    "max-tokens": "The DeepSeek Harness turn reached its output-token ceiling.",
    "interrupted": "The DeepSeek Harness turn was interrupted and never completed.",
}


def read_event(frame: dict[str, JsonValue]) -> tuple[str, dict[str, JsonValue]] | None:
    """The session-log event a frame carries, wrapped or bare."""
    if frame.get("method") == "session.event":
        params = frame.get("params")
        event = params.get("event") if isinstance(params, dict) else None
        if isinstance(event, dict) and isinstance(kind := event.get("type"), str) and kind:
            data = event.get("data")
            return (kind, data) if isinstance(data, dict) else None
        return None
    kind, data = frame.get("type"), frame.get("data")
    if isinstance(kind, str) and kind and isinstance(data, dict):
        return kind, data
    return None


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    event = read_event(frame)
    if event is None:
        return []
    kind, data = event

    if kind == "tool/call":
        call_id, name, arguments = data.get("callId"), data.get("name"), data.get("arguments")
        if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name and isinstance(arguments, str)):
            return []
        if not arguments_object(arguments):
            text = "DeepSeek Harness sent tool arguments that are not a JSON object."
            return [Failed(ProtocolError.of(ARGUMENTS_UNPARSEABLE, text))]
        return []

    if kind == "assistant/message":  # the same content blocks as Claude Code's assistant frames
        return assistant_steps(data)

    if kind == "turn/end":
        reason = data.get("reason")
        end_kind = reason.get("kind") if isinstance(reason, dict) else None
        if not isinstance(reason, dict) or not isinstance(end_kind, str) or not end_kind:
            return []
        fixed = TURN_END_FAILURES.get(end_kind)
        if fixed is None:
            return [Completed()]
        error = reason.get("error")
        error = error if isinstance(error, dict) else {}
        code = cli_code(error.get("code"), f"harness_turn_{end_kind.replace('-', '_')}")
        message_text = error.get("message")
        text = message_text if isinstance(message_text, str) and message_text else fixed
        return [Failed(ProtocolError.of(code, text, retryable=True))]

    return []
