"""Google Gemini CLI (``gemini -p ... -o stream-json``): its stdout interpreter.

Profile: ``harness_profiles/gemini.yaml``. What was measured on which version: ``docs/columns/gemini.md``.
"""

from runner.harnesses.gemini.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"gemini": interpret})

__all__ = ["VENDOR", "interpret"]
