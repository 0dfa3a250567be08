"""Qwen Code (``qwen -p ... -o stream-json``): its stdout interpreter.

Profile: ``qwen.yaml``. What was measured on which version: ``README.md``.
"""

from runner.harnesses.package import HarnessPackage
from runner.harnesses.qwen.interpreter import interpret

HARNESS = HarnessPackage(interpreters={"qwen": interpret})

__all__ = ["HARNESS", "interpret"]
