"""``vibe -p ... --output streaming`` stdout frames → steps.

Evidence: ``README.md`` (2.26.1, measured on the host). Every line is a session entry ``{"id",
"sessionId", "turnId", "generationStatus", "type", ...}``:

- ``{"type": "message", "role": "assistant", "content": [{"type": "text", "text": ...}]}`` → each non-blank text
  is a message; ``role: "user"`` (the prompt) → nothing.
- ``{"type": "effect", "title": "sharedos_files.read", "state": "<json>"}`` (a tool run, with its result) →
  nothing (calls travel over MCP).
- An entry whose ``generationStatus`` is ``"failed"``/``"error"`` → ``failed harness_failed`` [unverified: no failing
  turn was run].

No terminal entry was seen: a completed turn exits 0 after its last assistant message, so the exit status decides.
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
