"""opencode (``opencode run --format json``): its stdout interpreter.

Profile: ``opencode.yaml``. What was measured on which version: ``README.md``.
"""

from runner.harnesses.opencode.interpreter import interpret
from runner.harnesses.package import HarnessPackage

HARNESS = HarnessPackage(interpreters={"opencode": interpret})

__all__ = ["HARNESS", "interpret"]
