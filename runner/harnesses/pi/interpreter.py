"""``pi --mode json`` stdout frames → steps (every Pi profile: ``pi``, ``pi-direct``, ``pi-adapter``).

Evidence: ``README.md`` (Pi 0.73.1, then 1.6.0 and 0.86.1: the same frames and rules; what 1.6.0 adds is
listed there), ``reference/sharedos-reference.md`` §5.2 (upstream ``pi/protocol.ts@75eaa9bb``, written for
``--mode rpc``), and Pi 0.73.1's own code (``dist/modes/print-mode.js``, ``dist/core/agent-session.js``).

Why ``--mode json`` and not upstream's ``--mode rpc``: json mode is what vendor-clis.md verified
end to end (3 MCP calls through the adapter, offline, non-root); rpc mode was not tested there. In
json mode the prompt is a command-line argument and Pi exits by itself after ``agent_end``; stdin is
not read. The frames are Pi's ``AgentSessionEvent`` (``docs/json.md``), the same events rpc mode
streams, so upstream's rules apply unchanged, plus one for the assistant's ``stopReason``:

- ``{"type": "message_end", "message": {"role": "assistant", "content": [...], "stopReason": ...}}``:
  each ``text`` block is a message; ``toolCall`` blocks (``mcp`` proxy calls, or ``sharedos_<tool>``
  direct tools) are never acted on (calls travel over MCP). ``message_update`` deltas are ignored:
  the assembled message is authoritative, and reading both would double the prose.
- The same assistant message with ``stopReason: "error"`` (or ``"aborted"``) fails the turn
  ``harness_failed`` with its ``errorMessage``; retryable. vendor-clis.md: "the last assistant
  message's ``stopReason``/``errorMessage`` gives the outcome" -- and Pi json mode exits **0** even
  then (``print-mode.js`` sets exit code 1 for an error only in text mode), so without this rule a
  failed model request would complete the turn. It is read on ``message_end`` rather than from
  ``agent_end.messages`` because ``agent_end`` repeats the whole transcript and may exceed the frame
  size limit.
- ``{"type": "agent_end"}``: ``complete``, unless ``willRetry`` is true (upstream). Pi 0.73.1 emits
  ``agent_end`` *before* deciding on an automatic retry and without ``willRetry``, so a retried error
  would be indistinguishable from a final one; the profiles therefore turn Pi's agent-level retry
  off (``settings.json`` ``retry.enabled: false``), which makes an error ``message_end`` final.
- rpc-mode frames, kept from upstream: ``{"type": "response", "success": false}`` fails
  ``harness_command_rejected`` (message ``error`` or "Pi rejected the <command> command."),
  ``{"type": "error"}`` fails ``harness_failed``; both retryable.
- ``session``, ``agent_start``, ``turn_start``/``turn_end`` (one per model call), ``message_start``,
  user and ``toolResult`` messages, ``tool_execution_*`` (a call Pi is already running, never a
  request) and ``auto_retry_*`` yield nothing.

Ending without ``agent_end``: SIGTERM exits 143 within 0.27 s and stdout stops after
``turn_start`` (measured), so the exit status decides. A failed MCP start is silent in the stream
(stderr "MCP: Failed to connect to ...", rc 0): Pi reports no MCP status, so the runtime's host-side
check that an MCP session was opened is what catches it.
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue, ProtocolError
from runner.core.vocabulary import Code
from runner.harnesses.stream import Completed, Failed, Message, Step

COMMAND_REJECTED = "harness_command_rejected"
FAILED_STOP_REASONS = frozenset({"error", "aborted"})


def _assistant(message: dict[str, JsonValue]) -> list[Step]:
    content = message.get("content")
    steps: list[Step] = []
    if isinstance(content, list):
        steps += [
            Message(text)
            for block in content
            if isinstance(block, dict) and block.get("type") == "text" and isinstance(text := block.get("text"), str)
        ]
    stop = message.get("stopReason")
    if isinstance(stop, str) and stop in FAILED_STOP_REASONS:  # a list or an object is no stop reason (unhashable)
        detail = message.get("errorMessage")
        text = detail if isinstance(detail, str) and detail else f"Pi's model request ended with stopReason {stop!r}."
        steps.append(Failed(ProtocolError.of(Code.HARNESS_FAILED, text, retryable=True)))
    return steps


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    kind = frame.get("type")
    if kind == "message_end":
        message = frame.get("message")
        if isinstance(message, dict) and message.get("role") == "assistant":
            return _assistant(message)
        return []
    if kind == "response":
        if frame.get("success") is not False:
            return []
        error, command = frame.get("error"), frame.get("command")
        what = command if isinstance(command, str) and command else "requested"
        text = error if isinstance(error, str) and error else f"Pi rejected the {what} command."
        return [Failed(ProtocolError.of(COMMAND_REJECTED, text, retryable=True))]
    if kind == "error":
        message = frame.get("message")
        text = message if isinstance(message, str) and message else "The Pi harness reported a failure."
        return [Failed(ProtocolError.of(Code.HARNESS_FAILED, text, retryable=True))]
    if kind == "agent_end":
        return [] if frame.get("willRetry") is True else [Completed()]
    return []
