"""Kimi Code (``kimi -p <prompt> --output-format stream-json``, ``@moonshot-ai/kimi-code`` 2.1.0): its interpreter.

Profile: ``kimi.yaml``. What was measured on which version (install, endpoint, MCP,
retries, stream, files, timing): ``README.md``.
"""

from runner.harnesses.kimi.interpreter import interpret
from runner.harnesses.package import HarnessPackage
from runner.model.names import CLAUDE, ToolNaming

HARNESS = HarnessPackage(interpreters={"kimi": interpret}, tool_naming=ToolNaming(direct=(CLAUDE,)))

__all__ = ["HARNESS", "interpret"]
