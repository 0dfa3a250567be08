"""Anthropic Claude Code (``claude -p --output-format stream-json``): its stdout interpreter.

Profile: ``claude-code.yaml``. What was measured on which version (the quirks the profile
carries, how Claude Code reacts when the model API fails): ``README.md``.
"""

from runner.harnesses.claude_code.interpreter import interpret
from runner.harnesses.package import HarnessPackage
from runner.model.names import CLAUDE, ToolNaming

HARNESS = HarnessPackage(interpreters={"claude-code": interpret}, tool_naming=ToolNaming(direct=(CLAUDE,)))

__all__ = ["HARNESS", "interpret"]
