"""GitHub Copilot CLI (``copilot -p --output-format json``) on a BYOK provider: its stdout interpreter.

Profile: ``copilot.yaml``. What was measured on which version (install, endpoint,
MCP, tool names, a failing model API, turn time): ``README.md``.
"""

from runner.harnesses.copilot.interpreter import interpret
from runner.harnesses.package import HarnessPackage
from runner.model.names import COPILOT, ToolNaming

HARNESS = HarnessPackage(interpreters={"copilot": interpret}, tool_naming=ToolNaming(direct=(COPILOT,)))

__all__ = ["HARNESS", "interpret"]
