"""Anthropic Claude Code (``claude -p --output-format stream-json``): its stdout interpreter.

Profile: ``harness_profiles/claude-code.yaml``.
"""

from runner.harnesses.claude_code.interpreter import interpret

__all__ = ["interpret"]
