"""Anthropic Claude Code (``claude -p --output-format stream-json``): its stdout interpreter.

Profile: ``claude-code.yaml``. What was measured on which version (the quirks the profile
carries, how Claude Code reacts when the model API fails): ``README.md``.
"""

from runner.harnesses.claude_code.interpreter import interpret
from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.model.names import CLAUDE, ToolNaming

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "claude-code": DeclaredPolicy("broker-only", "complete",
        evidence=("runner/harnesses/claude_code/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(
    interpreters={"claude-code": interpret}, tool_naming=ToolNaming(direct=(CLAUDE,)), tool_policy=TOOL_POLICY,
)

__all__ = ["HARNESS", "interpret"]
