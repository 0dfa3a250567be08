"""Cline CLI (``cline --json``) on an OpenAI-compatible provider: its stdout interpreter.

Profile: ``cline.yaml``. What was measured on which version (install, endpoint,
MCP, tool names, a failing model API, turn time): ``README.md``.
"""

from runner.harnesses.cline.interpreter import interpret
from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.model.names import CLINE, ToolNaming

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "cline": DeclaredPolicy("mixed", "complete", harness_local=("ask_question", "editor", "fetch_web_content",
        "read_files", "run_commands", "search_codebase", "spawn_agent", "team_attach_outcome_fragment",
        "team_await_runs", "team_broadcast", "team_cancel_run", "team_cleanup", "team_create_outcome",
        "team_finalize_outcome", "team_list_outcomes", "team_list_runs", "team_mission_log", "team_read_mailbox",
        "team_review_outcome_fragment", "team_run_task", "team_send_message", "team_shutdown_teammate",
        "team_spawn_teammate", "team_status", "team_task"),
        evidence=("runner/harnesses/cline/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(
    interpreters={"cline": interpret}, tool_naming=ToolNaming(direct=(CLINE,), hashed=True), tool_policy=TOOL_POLICY,
)

__all__ = ["HARNESS", "interpret"]
