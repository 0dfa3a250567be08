"""``kilo run --format json`` stdout frames → steps: opencode's rules (:mod:`runner.harnesses.opencode.interpreter`),
with Kilo's name in the fallback failure text. Evidence: ``README.md``.
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue
from runner.harnesses.opencode.interpreter import opencode_steps
from runner.harnesses.stream import Step

FAILURE_TEXT = "The Kilo Code CLI reported a failure."


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    return opencode_steps(frame, FAILURE_TEXT)
