"""Qwen Code (``qwen -p ... -o stream-json``): its stdout interpreter.

Profile: ``harness_profiles/qwen.yaml``. What was measured on which version: ``docs/columns/qwen.md``.
"""

from runner.harnesses.qwen.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"qwen": interpret})

__all__ = ["VENDOR", "interpret"]
