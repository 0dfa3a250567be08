"""opencode (``opencode run --format json``): its stdout interpreter.

Profile: ``harness_profiles/opencode.yaml``.
"""

from runner.harnesses.opencode.interpreter import interpret

__all__ = ["interpret"]
