"""Cline CLI (``cline --json``) on an OpenAI-compatible provider: its stdout interpreter.

Profile: ``cline.yaml``. What was measured on which version (install, endpoint,
MCP, tool names, a failing model API, turn time): ``README.md``.
"""

from runner.harnesses.cline.interpreter import interpret
from runner.harnesses.package import HarnessPackage
from runner.model.names import CLINE, ToolNaming

HARNESS = HarnessPackage(interpreters={"cline": interpret}, tool_naming=ToolNaming(direct=(CLINE,), hashed=True))

__all__ = ["HARNESS", "interpret"]
