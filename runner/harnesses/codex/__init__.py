"""OpenAI Codex CLI (``codex exec --json``): its stdout interpreter.

Profile: ``codex.yaml``. What was measured on which version (the quirks the profile carries,
how Codex reacts when the model API fails): ``README.md``.
"""

from runner.harnesses.codex.interpreter import interpret
from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.model.names import CODEX, ToolNaming

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "codex": DeclaredPolicy("mixed", "complete", harness_local=("create_goal", "exec_command", "get_goal",
        "list_mcp_resource_templates", "list_mcp_resources", "multi_agent_v1/close_agent",
        "multi_agent_v1/resume_agent", "multi_agent_v1/send_input", "multi_agent_v1/spawn_agent",
        "multi_agent_v1/wait_agent", "read_mcp_resource", "request_user_input", "update_goal", "view_image",
        "write_stdin"), external_direct=("hosted:web_search",),
        evidence=("runner/harnesses/codex/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(
    interpreters={"codex": interpret}, tool_naming=ToolNaming(direct=(CODEX,)), tool_policy=TOOL_POLICY,
)

__all__ = ["HARNESS", "interpret"]
