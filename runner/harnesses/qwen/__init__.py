"""Qwen Code (``qwen -p ... -o stream-json``): its stdout interpreter.

Profile: ``harness_profiles/qwen.yaml``.
"""

from runner.harnesses.qwen.interpreter import interpret

__all__ = ["interpret"]
