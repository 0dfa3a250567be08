"""Continue's CLI (``cn -p <prompt> --format json``, ``@continuedev/cli`` 1.5.47): its stdout interpreter.

Profile: ``cn.yaml``. What was measured on which version (install, config, MCP names, output, retries, files):
``README.md``.
"""

from runner.harnesses.cn.interpreter import interpret
from runner.harnesses.package import HarnessPackage
from runner.model.names import BARE, ToolNaming

HARNESS = HarnessPackage(interpreters={"cn": interpret}, tool_naming=ToolNaming(direct=(BARE,)))

__all__ = ["HARNESS", "interpret"]
