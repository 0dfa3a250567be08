"""DeepSeek Harness (``dsh --profile headless``): its interpreter and its session-log reader.

Profile: ``harness_profiles/deepseek.yaml``.
"""

from runner.harnesses.deepseek.interpreter import interpret
from runner.harnesses.deepseek.session import read_session

__all__ = ["interpret", "read_session"]
