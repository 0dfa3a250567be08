"""DeepSeek Harness (``dsh --profile headless``): its interpreter and its session-log reader.

Profile: ``deepseek.yaml``; image: ``images/deepseek``. What was measured on which version (the
session log, tool names, model requests, the noexec /tmp, how dsh reacts when the model API fails):
``README.md``.
"""

from runner.harnesses.deepseek.interpreter import interpret
from runner.harnesses.deepseek.session import read_session
from runner.harnesses.package import HarnessPackage
from runner.model.names import CLAUDE, ToolNaming

HARNESS = HarnessPackage(
    interpreters={"deepseek": interpret}, session_readers={"deepseek": read_session},
    tool_naming=ToolNaming(direct=(CLAUDE,), hashed=True),
)

__all__ = ["HARNESS", "interpret", "read_session"]
