"""Kimi Code (``kimi -p <prompt> --output-format stream-json``, ``@moonshot-ai/kimi-code`` 2.1.0): its interpreter.

Profile: ``kimi.yaml``. What was measured on which version (install, endpoint, MCP,
retries, stream, files, timing): ``README.md``.
"""

from runner.harnesses.kimi.interpreter import interpret
from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.model.names import CLAUDE, ToolNaming

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "kimi": DeclaredPolicy("mixed", "complete", harness_local=("Agent", "AgentSwarm", "AskUserQuestion", "Bash",
        "CreateGoal", "CronCreate", "CronDelete", "CronList", "Edit", "EnterPlanMode", "ExitPlanMode", "FetchURL",
        "GetGoal", "Glob", "Grep", "Read", "SetGoalBudget", "Skill", "TaskList", "TaskOutput", "TaskStop",
        "TodoList", "UpdateGoal", "WaitFor", "Write"),
        evidence=("runner/harnesses/kimi/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(
    interpreters={"kimi": interpret}, tool_naming=ToolNaming(direct=(CLAUDE,)), tool_policy=TOOL_POLICY,
)

__all__ = ["HARNESS", "interpret"]
