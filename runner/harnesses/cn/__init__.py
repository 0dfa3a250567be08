"""Continue's CLI (``cn -p <prompt> --format json``, ``@continuedev/cli`` 1.5.47): its stdout interpreter.

Profile: ``cn.yaml``. What was measured on which version (install, config, MCP names, output, retries, files):
``README.md``.
"""

from runner.harnesses.cn.interpreter import interpret
from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.model.names import BARE, ToolNaming

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "cn": DeclaredPolicy("mixed", "complete", harness_local=("AskQuestion", "Bash", "CheckBackgroundJob",
        "Checklist", "Edit", "Exit", "Fetch", "List", "Read", "Skills", "Write"),
        evidence=("runner/harnesses/cn/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(
    interpreters={"cn": interpret}, tool_naming=ToolNaming(direct=(BARE,)), tool_policy=TOOL_POLICY,
)

__all__ = ["HARNESS", "interpret"]
