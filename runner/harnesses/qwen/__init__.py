"""Qwen Code (``qwen -p ... -o stream-json``): its stdout interpreter.

Profile: ``harness_profiles/qwen.yaml``.
"""

from runner.harnesses.qwen.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"qwen": interpret})

__all__ = ["VENDOR", "interpret"]
