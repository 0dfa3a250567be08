"""Mistral Vibe (``vibe -p <prompt> --output streaming``, ``mistral-vibe`` 3.0.2 from PyPI on its unified harness, on
Debian trixie's Python 3.13 in its image's own layer).

Profile: ``vibe.yaml``. What was measured: ``README.md``.
"""

from runner.harnesses.package import HarnessPackage
from runner.harnesses.vibe.interpreter import interpret
from runner.harnesses.vibe.naming import NAMING

HARNESS = HarnessPackage(interpreters={"vibe": interpret}, tool_naming=NAMING)

__all__ = ["HARNESS", "interpret"]
