"""Kilo Code (``kilo run --format json``, ``@kilocode/cli`` 7.7.7): opencode's stream, read by opencode's rules.

Profile: ``kilo.yaml``. What was measured on which version (install, endpoint,
MCP, tool names, a failing model API, turn time): ``README.md``.
"""

from runner.harnesses.kilo.interpreter import interpret
from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.model.names import SERVER_PREFIX, ToolNaming

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "kilo": DeclaredPolicy("mixed", "complete", harness_local=("background_process", "bash", "board_post",
        "board_read", "cancel_wakeup", "edit", "glob", "grep", "kilo_local_recall", "read", "schedule_wakeup",
        "skill", "task", "todowrite", "webfetch", "write"),
        evidence=("runner/harnesses/kilo/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(
    interpreters={"kilo": interpret}, tool_naming=ToolNaming(direct=(SERVER_PREFIX,)), tool_policy=TOOL_POLICY,
)

__all__ = ["HARNESS", "interpret"]
