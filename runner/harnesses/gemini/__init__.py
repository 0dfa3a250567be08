"""Google Gemini CLI (``gemini -p ... -o stream-json``): its stdout interpreter.

Profile: ``gemini.yaml``. What was measured on which version: ``README.md``.
"""

from runner.harnesses.gemini.interpreter import interpret
from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.model.names import GEMINI, ToolNaming

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "gemini": DeclaredPolicy("mixed", "complete", harness_local=("activate_skill", "enter_plan_mode", "glob",
        "google_web_search", "grep_search", "invoke_agent", "list_background_processes", "list_directory",
        "read_background_output", "read_file", "replace", "run_shell_command", "update_topic", "web_fetch",
        "write_file"), evidence=("runner/harnesses/gemini/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(
    interpreters={"gemini": interpret}, tool_naming=ToolNaming(direct=(GEMINI,)), tool_policy=TOOL_POLICY,
)

__all__ = ["HARNESS", "interpret"]
