"""``kilo run --format json`` stdout frames → steps: opencode's rules (:mod:`runner.harnesses.opencode.interpreter`),
with Kilo's name in the fallback failure text. Evidence: :mod:`runner.harnesses.kilo`.
"""

from __future__ import annotations

from runner.core.outcomes import Json, ProtocolError
from runner.harnesses.opencode.interpreter import FAILURE_TEXT as OPENCODE_FAILURE_TEXT
from runner.harnesses.opencode.interpreter import interpret as opencode_interpret
from runner.harnesses.stream import Failed, Step

FAILURE_TEXT = "The Kilo Code CLI reported a failure."


def interpret(frame: dict[str, Json]) -> list[Step]:
    steps = opencode_interpret(frame)
    return [
        Failed(ProtocolError.of(s.error.code, FAILURE_TEXT, retryable=s.error.retryable))
        if isinstance(s, Failed) and s.error.message == OPENCODE_FAILURE_TEXT
        else s
        for s in steps
    ]
