"""Anthropic Claude Code (``claude -p --output-format stream-json``): its stdout interpreter.

Profile: ``harness_profiles/claude-code.yaml``. What was measured on which version (the quirks the profile
carries, how Claude Code reacts when the model API fails): ``docs/columns/claude-code.md``.
"""

from runner.harnesses.claude_code.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"claude-code": interpret})

__all__ = ["VENDOR", "interpret"]
