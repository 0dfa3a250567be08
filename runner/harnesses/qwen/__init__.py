"""Qwen Code (``qwen -p ... -o stream-json``): its stdout interpreter.

Profile: ``qwen.yaml``. What was measured on which version: ``README.md``.
"""

from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.harnesses.qwen.interpreter import interpret
from runner.model.names import CLAUDE, QWEN_PROXY, ToolNaming

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "qwen": DeclaredPolicy("mixed", "unknown", harness_local=("agent", "edit", "get_goal", "glob", "grep_search",
        "list_agents", "notebook_edit", "read_file", "run_shell_command", "skill", "tool_call", "tool_search",
        "update_goal", "write_file"),
        evidence=("runner/harnesses/qwen/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(
    interpreters={"qwen": interpret}, tool_naming=ToolNaming(direct=(CLAUDE,), proxies=(QWEN_PROXY,), hashed=True),
    tool_policy=TOOL_POLICY,
)

__all__ = ["HARNESS", "interpret"]
