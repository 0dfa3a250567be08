"""Google Gemini CLI (``gemini -p ... -o stream-json``): its stdout interpreter.

Profile: ``gemini.yaml``. What was measured on which version: ``README.md``.
"""

from runner.harnesses.gemini.interpreter import interpret
from runner.harnesses.package import HarnessPackage

HARNESS = HarnessPackage(interpreters={"gemini": interpret})

__all__ = ["HARNESS", "interpret"]
