"""opencode (``opencode run --format json``): its stdout interpreter.

Profile: ``harness_profiles/opencode.yaml``. What was measured on which version: ``docs/columns/opencode.md``.
"""

from runner.harnesses.opencode.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"opencode": interpret})

__all__ = ["VENDOR", "interpret"]
