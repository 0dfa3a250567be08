"""``cn -p ... --format json`` stdout → steps.

Evidence: ``README.md`` (cn 1.5.47, measured, and its bundle's headless loop). ``--format json`` prints no
stream: once the turn is over, one line with the model's last answer, ``{"response": "<text>", "status": "success",
"note": "Response was not valid JSON, so it was wrapped in a JSON object"}`` -- unless that answer is itself valid
JSON, which cn then prints as it is (so a line of any shape may be the model's own words). Other lines it may print
are auto-compaction notices (``{"status": "info" | "success" | "warning", "message": ...}``). Errors never reach
stdout: a failed model request (after cn's own retries, about 110 s of them) prints ``{"status": "error", "message":
...}`` on stderr and exits 1.

Rules: a line with a string ``response`` → that text as a message, unless blank; anything else → nothing. No line
is a terminal: cn exits 0 after a completed turn, 1 after a failure, so the exit status decides (a ``response`` line
is the model's, and a model could write one).
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue
from runner.harnesses.stream import Message, Step


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    text = frame.get("response")
    return [Message(text)] if isinstance(text, str) and text.strip() else []
