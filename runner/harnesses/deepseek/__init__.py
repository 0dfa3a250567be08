"""DeepSeek Harness (``dsh --profile headless``): its interpreter and its session-log reader.

Profile: ``deepseek.yaml``; image: ``images/deepseek``. What was measured on which version (the
session log, tool names, model requests, the noexec /tmp, how dsh reacts when the model API fails):
``README.md``.
"""

from runner.harnesses.deepseek.interpreter import interpret
from runner.harnesses.deepseek.session import read_session
from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.model.names import CLAUDE, ToolNaming

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "deepseek": DeclaredPolicy("mixed", "complete", harness_local=("bash", "create_goal", "edit", "exit_plan_mode",
        "get_goal", "glob", "grep", "interrupt_agent", "job_kill", "job_list", "job_output", "list_agents", "ralph",
        "read", "read_image", "send_message", "skill", "str_replace_editor", "subagent", "subagent_fork",
        "todo_write", "update_goal", "web_search", "workflow", "write"),
        evidence=("runner/harnesses/deepseek/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(
    interpreters={"deepseek": interpret}, session_readers={"deepseek": read_session},
    tool_naming=ToolNaming(direct=(CLAUDE,), hashed=True),
    tool_policy=TOOL_POLICY,
)

__all__ = ["HARNESS", "interpret", "read_session"]
