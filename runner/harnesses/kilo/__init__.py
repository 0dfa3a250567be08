"""Kilo Code (``kilo run --format json``, ``@kilocode/cli`` 7.7.7): opencode's stream, read by opencode's rules.

Profile: ``kilo.yaml``. What was measured on which version (install, endpoint,
MCP, tool names, a failing model API, turn time): ``README.md``.
"""

from runner.harnesses.kilo.interpreter import interpret
from runner.harnesses.package import HarnessPackage

HARNESS = HarnessPackage(interpreters={"kilo": interpret})

__all__ = ["HARNESS", "interpret"]
