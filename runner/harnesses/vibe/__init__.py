"""Mistral Vibe (``vibe -p <prompt> --output streaming``, ``mistral-vibe`` 2.26.1 from PyPI, on Debian trixie's
Python 3.13 in its image's own layer).

Profile: ``vibe.yaml``. What was measured: ``README.md``.
"""

from runner.harnesses.package import HarnessPackage
from runner.harnesses.vibe.interpreter import interpret
from runner.model.names import SERVER_PREFIX, ToolNaming

HARNESS = HarnessPackage(interpreters={"vibe": interpret}, tool_naming=ToolNaming(direct=(SERVER_PREFIX,)))

__all__ = ["HARNESS", "interpret"]
