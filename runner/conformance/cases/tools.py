"""Tool providers that misbehave: a requirement outside the tool's ceiling, a mismatched result.

The ``tools`` suite, in suite order: ``tool-ceiling-escape``, ``invalid-tool-result``.
"""

from __future__ import annotations

from runner.conformance.cases.model import Attempt, Case, Expect
from runner.conformance.cases.shared import BASELINE, read_own
from runner.core.world import POLICY

CASES: tuple[Case, ...] = (
    Case(
        id="tool-ceiling-escape",
        kind="tool_ceiling_escape",
        invariant="Tool resolves a requirement outside its ceiling",
        expected_outcome="Reject",
        conditions=(BASELINE,),
        attempts=(
            Attempt(
                "invoke-the-escaping-tool", "attack", "files.index", None,
                Expect(("failed",), ("invalid_tool_requirement",)),
            ),
            read_own("read-own-workspace"),
        ),
    ),
    Case(
        id="invalid-tool-result",
        kind="invalid_tool_result",
        invariant="Provider returns a mismatched or malformed result",
        expected_outcome="Reject",
        conditions=(BASELINE,),
        attempts=(
            Attempt(
                "invoke-the-mismatched-tool", "attack", "files.describe", {"path": list(POLICY)},
                Expect(("failed",), ("invalid_tool_result",)),
            ),
            read_own("read-own-workspace"),
        ),
    ),
)
