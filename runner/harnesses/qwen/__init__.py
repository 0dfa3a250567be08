"""Qwen Code (``qwen -p ... -o stream-json``): its stdout interpreter.

Profile: ``qwen.yaml``. What was measured on which version: ``README.md``.
"""

from runner.harnesses.qwen.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"qwen": interpret})

__all__ = ["VENDOR", "interpret"]
