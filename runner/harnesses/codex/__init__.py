"""OpenAI Codex CLI (``codex exec --json``): its stdout interpreter.

Profile: ``harness_profiles/codex.yaml``.
"""

from runner.harnesses.codex.interpreter import interpret

__all__ = ["interpret"]
