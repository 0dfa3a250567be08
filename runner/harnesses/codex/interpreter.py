"""``codex exec --json`` stdout frames → steps (upstream ``codex/protocol.ts@57319d17``, §5.2).

Evidence: ``README.md`` (Codex 0.169.0 and 0.171.0, measured against a scripted model and a stdio MCP
server) and ``reference/sharedos-reference.md`` §5.2 (the upstream rules).

A ``codex exec --json`` turn prints ``thread.started``, ``turn.started``, ``item.started`` /
``item.completed`` events and ends with ``turn.completed`` or ``turn.failed``. Upstream reads two
shapes with one function, because the same protocol also serves its Responses-API driver; the
rules, checked in this order, are:

1. ``{"type": "function_call", "call_id", "name", "arguments": "<json string>"}``: a tool call,
   which on the MCP path is never acted on (calls travel over MCP, §8 item 9) -- *except* that
   arguments that are not a JSON object (an empty string counts as ``{}``) fail the turn
   ``harness_arguments_unparseable``, with no retryable flag. ``codex exec --json`` itself never
   prints such a frame (its MCP calls are ``item.*`` events of type ``mcp_tool_call``).
2. ``{"type": "response.failed"}``: ``failed``, code ``error.code`` or ``harness_failed``, message
   ``error.message``, then ``message``, then a fixed text; retryable.
3. ``{"type": "response.completed"}``: ``complete``, with ``{"text": response.output_text}`` when
   present.
4. ``{"type": "message", "content": [...]}``: one message per ``output_text`` block.
5. ``item.completed`` whose item is an ``agent_message``: a message carrying ``item.text`` unless it
   is blank. This is the model's prose on the CLI path (measured: ``{"type": "item.completed",
   "item": {"id": "item_4", "type": "agent_message", "text": "FINAL: done"}}``).
6. ``turn.completed``: ``complete`` with no output, so the turn's output is the joined messages.
7. ``turn.failed``: ``failed harness_failed``, message ``error.message`` or "The Codex CLI reported
   a failed turn."; retryable (measured: ``{"type": "turn.failed", "error": {"message": "Connection
   failed: error sending request"}}``, rc 1).
8. Everything else (``thread.started``, ``turn.started``, ``item.started``, ``mcp_tool_call`` and
   ``error`` items, reasoning) yields nothing.

**Where this deviates from upstream, and why.** Upstream's rule 2 also fails the turn on a
top-level ``{"type": "error", "message": ...}`` line. In Codex 0.169 those lines are *non-fatal
retry notices* (measured: ``{"type": "error", "message": "Reconnecting... waiting for network
..."}`` repeated while the endpoint is down, the turn continuing afterwards); a fatal error is
always followed by ``turn.failed``, which carries the same text. Since the first terminal wins,
following upstream would end a turn as failed on the first retry notice even when Codex then
recovers and completes. So this interpreter follows the measurement: a top-level ``error`` line is
kept in the transcript and yields no step; ``turn.failed`` is the failure. (The profile bounds the
retries -- ``request_max_retries = 0``, ``stream_max_retries = 0``, ``--disable
unbounded_connection_retries`` -- so a dead endpoint reaches ``turn.failed`` in about a second.)

The benign ``item.completed`` of type ``error`` printed at start-up ("Model metadata for
`runner-scripted` not found. Defaulting to fallback metadata") is the price of the deliberately
unknown model slug and yields nothing (rule 8).

SIGTERM: the native binary dies in ~0.035 s with no terminal event (stdout stops after the last
``item.completed``), so the exit status decides: ``harness_exited_without_outcome``.
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue, ProtocolError
from runner.core.vocabulary import Code
from runner.harnesses.stream import Completed, Failed, Message, Step
from runner.intake.payload import Malformed, loads

ARGUMENTS_UNPARSEABLE = "harness_arguments_unparseable"


def arguments_object(raw: str) -> bool:
    """Upstream ``parseToolArguments``: an empty (or blank) string is ``{}``; otherwise the string must
    parse to a JSON object."""
    if raw.strip() == "":
        return True
    try:
        return isinstance(loads(raw), dict)  # the intake's: a string nested a hundred thousand deep is not one
    except Malformed:
        return False


def cli_code(value: JsonValue, default: str) -> str:
    """A code the CLI named, when it is a usable one (1..256 non-blank characters)."""
    if isinstance(value, str) and 1 <= len(value.strip()) <= 256:
        return value
    return default


def _text(value: JsonValue) -> str | None:
    return value if isinstance(value, str) else None


def _dict(value: JsonValue) -> dict[str, JsonValue]:
    return value if isinstance(value, dict) else {}


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    kind = frame.get("type")

    if kind == "function_call":
        call_id, name, arguments = frame.get("call_id"), frame.get("name"), frame.get("arguments")
        if not (isinstance(call_id, str) and call_id and isinstance(name, str) and name):
            return []
        if not isinstance(arguments, str):
            return []
        if not arguments_object(arguments):
            text = "Codex sent tool arguments that are not a JSON object."
            return [Failed(ProtocolError.of(ARGUMENTS_UNPARSEABLE, text))]
        return []  # a well-formed call: ignored on the MCP path

    if kind == "response.failed":
        error = _dict(frame.get("error")) or _dict(_dict(frame.get("response")).get("error"))
        text = _text(error.get("message")) or _text(frame.get("message")) or "The Codex harness reported a failure."
        code = cli_code(error.get("code"), Code.HARNESS_FAILED)
        return [Failed(ProtocolError.of(code, text, retryable=True))]

    if kind == "response.completed":
        output_text = _text(_dict(frame.get("response")).get("output_text"))
        return [Completed({"text": output_text} if output_text is not None else None)]

    if kind == "message":
        content = frame.get("content")
        if not isinstance(content, list):
            return []
        return [
            Message(said)
            for block in content
            if isinstance(block, dict)
            and block.get("type") == "output_text"
            and isinstance(said := block.get("text"), str)
        ]

    if kind == "item.completed":
        item = _dict(frame.get("item"))
        prose = _text(item.get("text"))
        if item.get("type") == "agent_message" and prose is not None and prose.strip():
            return [Message(prose)]
        return []

    if kind == "turn.completed":
        return [Completed()]

    if kind == "turn.failed":
        reason = _text(_dict(frame.get("error")).get("message"))
        text = reason if reason and reason.strip() else "The Codex CLI reported a failed turn."
        return [Failed(ProtocolError.of(Code.HARNESS_FAILED, text, retryable=True))]

    return []
