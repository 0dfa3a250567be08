"""``nanocoder ... --json run <prompt>`` stdout → steps.

Evidence: ``README.md`` (Nanocoder 1.30.0, measured, and its ``dist/plain/shell.js``). ``--json``
streams nothing: when the run is over it writes one report, pretty-printed over many lines (``JSON.stringify(report,
null, 2)``), which :class:`runner.harnesses.stream.StreamReader` reads as one document once the CLI has exited::

    {"kind": "success" | "error" | "tool-approval-required", "exitCode": 0 | 1 | 2, "finalText": "...",
     "reasoning": null, "toolCalls": [{"name": "files.read", "arguments": {...}, "result": "...", "error": null}],
     "filesChanged": [], "usage": {"inputTokens": ..., "outputTokens": ..., "totalTokens": ...},
     "message": "<only with kind error>", "toolNames": ["<only with kind tool-approval-required>"]}

Rules: ``finalText`` (every assistant text of the run, joined with no separator) → a message, unless blank;
``kind`` ``success`` → ``complete``; ``error`` → ``failed harness_failed`` with ``message``, retryable;
``tool-approval-required`` → ``failed harness_failed`` naming ``toolNames`` (``--mode yolo`` should never ask), not
retryable. ``toolCalls`` yield nothing (calls travel over MCP). The exit status agrees (0, 1, 2; ``shell.js``), and
decides when no report came (a model API failure prints none: exit 1, the error on stderr).
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue, ProtocolError
from runner.core.vocabulary import Code
from runner.harnesses.stream import Completed, Failed, Message, Step

FAILURE_TEXT = "The Nanocoder CLI reported a failure."


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    kind = frame.get("kind")
    if kind not in ("success", "error", "tool-approval-required"):
        return []
    text = frame.get("finalText")
    steps: list[Step] = [Message(text)] if isinstance(text, str) and text.strip() else []
    if kind == "success":
        return [*steps, Completed()]
    if kind == "error":
        detail = frame.get("message")
        error = detail if isinstance(detail, str) and detail else FAILURE_TEXT
        return [*steps, Failed(ProtocolError.of(Code.HARNESS_FAILED, error, retryable=True))]
    names = frame.get("toolNames")
    listed = ", ".join(n for n in names if isinstance(n, str)) if isinstance(names, list) else ""
    text = f"Nanocoder stopped for a tool approval ({listed or 'unnamed tools'}) although --mode yolo was given."
    return [*steps, Failed(ProtocolError.of(Code.HARNESS_FAILED, text, retryable=False))]
