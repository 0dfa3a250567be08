"""Nanocoder (``nanocoder ... --json run <prompt>``, ``@nanocollective/nanocoder`` 1.30.0): its stdout interpreter.

Profile: ``nanocoder.yaml``. What was measured on which version (install, config, MCP names, the JSON report, exit
codes, files): ``README.md``.
"""

from runner.harnesses.nanocoder.interpreter import interpret
from runner.harnesses.package import HarnessPackage
from runner.model.names import BARE, ToolNaming

HARNESS = HarnessPackage(interpreters={"nanocoder": interpret}, tool_naming=ToolNaming(direct=(BARE,)))

__all__ = ["HARNESS", "interpret"]
