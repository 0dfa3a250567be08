"""GitHub Copilot CLI (``copilot -p --output-format json``) on a BYOK provider: its stdout interpreter.

Profile: ``copilot.yaml``. What was measured on which version (install, endpoint,
MCP, tool names, a failing model API, turn time): ``README.md``.
"""

from runner.harnesses.copilot.interpreter import interpret
from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.model.names import COPILOT, ToolNaming

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "copilot": DeclaredPolicy("mixed", "complete", harness_local=("bash", "create", "edit",
        "fetch_copilot_cli_documentation", "glob", "grep", "list_agents", "list_bash", "read_agent", "read_bash",
        "session_store_sql", "skill", "sql", "stop_bash", "task", "view", "write_agent"),
        evidence=("runner/harnesses/copilot/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(
    interpreters={"copilot": interpret}, tool_naming=ToolNaming(direct=(COPILOT,)), tool_policy=TOOL_POLICY,
)

__all__ = ["HARNESS", "interpret"]
