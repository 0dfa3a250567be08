"""Google Gemini CLI (``gemini -p ... -o stream-json``): its stdout interpreter.

Profile: ``gemini.yaml``. What was measured on which version: ``README.md``.
"""

from runner.harnesses.gemini.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"gemini": interpret})

__all__ = ["VENDOR", "interpret"]
