"""Google Gemini CLI (``gemini -p ... -o stream-json``): its stdout interpreter.

Profile: ``gemini.yaml``. What was measured on which version: ``README.md``.
"""

from runner.harnesses.gemini.interpreter import interpret
from runner.harnesses.package import HarnessPackage
from runner.model.names import GEMINI, ToolNaming

HARNESS = HarnessPackage(interpreters={"gemini": interpret}, tool_naming=ToolNaming(direct=(GEMINI,)))

__all__ = ["HARNESS", "interpret"]
