"""Kilo Code (``kilo run --format json``, ``@kilocode/cli`` 7.7.7): opencode's stream, read by opencode's rules.

Profile: ``kilo.yaml``. What was measured on which version (install, endpoint,
MCP, tool names, a failing model API, turn time): ``README.md``.
"""

from runner.harnesses.kilo.interpreter import interpret
from runner.harnesses.package import HarnessPackage
from runner.model.names import SERVER_PREFIX, ToolNaming

HARNESS = HarnessPackage(interpreters={"kilo": interpret}, tool_naming=ToolNaming(direct=(SERVER_PREFIX,)))

__all__ = ["HARNESS", "interpret"]
