"""OpenAI Codex CLI (``codex exec --json``): its stdout interpreter.

Profile: ``codex.yaml``. What was measured on which version (the quirks the profile carries,
how Codex reacts when the model API fails): ``README.md``.
"""

from runner.harnesses.codex.interpreter import interpret
from runner.harnesses.package import HarnessPackage
from runner.model.names import CODEX, ToolNaming

HARNESS = HarnessPackage(interpreters={"codex": interpret}, tool_naming=ToolNaming(direct=(CODEX,)))

__all__ = ["HARNESS", "interpret"]
