"""opencode (``opencode run --format json``): its stdout interpreter.

Profile: ``opencode.yaml``. What was measured on which version: ``README.md``.
"""

from runner.harnesses.opencode.interpreter import interpret
from runner.harnesses.package import HarnessPackage
from runner.model.names import SERVER_PREFIX, ToolNaming

HARNESS = HarnessPackage(interpreters={"opencode": interpret}, tool_naming=ToolNaming(direct=(SERVER_PREFIX,)))

__all__ = ["HARNESS", "interpret"]
