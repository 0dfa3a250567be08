"""Qwen Code (``qwen -p ... -o stream-json``): its stdout interpreter.

Profile: ``qwen.yaml``. What was measured on which version: ``README.md``.
"""

from runner.harnesses.package import HarnessPackage
from runner.harnesses.qwen.interpreter import interpret
from runner.model.names import CLAUDE, QWEN_PROXY, ToolNaming

HARNESS = HarnessPackage(
    interpreters={"qwen": interpret}, tool_naming=ToolNaming(direct=(CLAUDE,), proxies=(QWEN_PROXY,), hashed=True),
)

__all__ = ["HARNESS", "interpret"]
