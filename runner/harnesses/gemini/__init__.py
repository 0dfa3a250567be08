"""Google Gemini CLI (``gemini -p ... -o stream-json``): its stdout interpreter.

Profile: ``harness_profiles/gemini.yaml``.
"""

from runner.harnesses.gemini.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"gemini": interpret})

__all__ = ["VENDOR", "interpret"]
