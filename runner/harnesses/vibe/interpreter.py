"""``vibe -p ... --output streaming`` stdout frames → steps.

Evidence: ``README.md`` (2.26.1 on its legacy harness, then 3.0.2 on its unified one: the same entries). Every line
is a session entry ``{"id", "sessionId", "turnId", "generationStatus", "type", ...}``:

- ``{"type": "message", "role": "assistant", "content": [{"type": "text", "text": ...}]}`` → each non-blank text
  is a message; ``role: "user"`` (the prompt) → nothing.
- ``{"type": "effect", "title": "mcp_sharedos.files_read", "state": {...}}`` (a tool run, with its result: 3.x
  prints one per call a ``run_typescript`` script makes, 2.x one per direct call, ``sharedos_files.read``) →
  nothing (calls travel over MCP). 3.x adds ``outcome: {"type": "committed"}`` to every assistant message: not a
  terminal.
- An entry whose ``generationStatus`` is ``"failed"``/``"error"`` → ``failed harness_failed`` [unverified: no failing
  turn was run].

No terminal entry was seen: a completed turn exits 0 after its last assistant message, so the exit status decides
(3.x: 2 after a model API error, 3 when stopped by ``--max-turns``, ``--time-limit`` or SIGTERM).
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue, ProtocolError
from runner.core.vocabulary import Code
from runner.harnesses.stream import Failed, Message, Step

FAILURE_TEXT = "The Mistral Vibe CLI reported a failure."


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    if frame.get("generationStatus") in ("failed", "error"):
        return [Failed(ProtocolError.of(Code.HARNESS_FAILED, FAILURE_TEXT, retryable=True))]
    if frame.get("type") != "message" or frame.get("role") != "assistant":
        return []
    content = frame.get("content")
    blocks = content if isinstance(content, list) else []
    return [
        Message(text)
        for block in blocks
        if isinstance(block, dict) and isinstance(text := block.get("text"), str) and text.strip()
    ]
