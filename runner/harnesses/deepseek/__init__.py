"""DeepSeek Harness (``dsh --profile headless``): its stdout interpreter.

Profile: ``harness_profiles/deepseek.yaml``.
"""

from runner.harnesses.deepseek.interpreter import interpret

__all__ = ["interpret"]
