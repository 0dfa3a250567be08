"""Google Gemini CLI (``gemini -p ... -o stream-json``): its stdout interpreter.

Profile: ``harness_profiles/gemini.yaml``. What was measured on which version: ``docs/columns/gemini.md``.
"""

from runner.harnesses.gemini.interpreter import interpret

__all__ = ["interpret"]
