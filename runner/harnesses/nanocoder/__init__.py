"""Nanocoder (``nanocoder ... --json run <prompt>``, ``@nanocollective/nanocoder`` 1.30.0): its stdout interpreter.

Profile: ``nanocoder.yaml``. What was measured on which version (install, config, MCP names, the JSON report, exit
codes, files): ``README.md``.
"""

from runner.harnesses.nanocoder.interpreter import interpret
from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.model.names import BARE, ToolNaming

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "nanocoder": DeclaredPolicy("mixed", "complete", harness_local=("agent", "ask_user", "check_skill", "diff_edit",
        "execute_bash", "fetch_url", "file_op", "find_files", "list_directory", "lsp_get_diagnostics", "read_file",
        "search_file_contents", "string_replace", "write_file", "write_tasks"),
        evidence=("runner/harnesses/nanocoder/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(
    interpreters={"nanocoder": interpret}, tool_naming=ToolNaming(direct=(BARE,)), tool_policy=TOOL_POLICY,
)

__all__ = ["HARNESS", "interpret"]
