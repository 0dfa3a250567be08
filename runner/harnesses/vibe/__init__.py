"""Mistral Vibe (``vibe -p <prompt> --output streaming``, ``mistral-vibe`` 3.0.2 from PyPI on its unified harness, on
Debian trixie's Python 3.13 in its image's own layer).

Profile: ``vibe.yaml``. What was measured: ``README.md``.
"""

from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.harnesses.vibe.interpreter import interpret
from runner.harnesses.vibe.naming import NAMING

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "vibe": DeclaredPolicy("mixed", "unknown", harness_local=("bash", "edit", "read_file", "run_typescript",
        "search_tool_functions", "skill", "todo", "unified_harness_scratchpad", "wait", "write_file"),
        evidence=("runner/harnesses/vibe/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(interpreters={"vibe": interpret}, tool_naming=NAMING, tool_policy=TOOL_POLICY)

__all__ = ["HARNESS", "interpret"]
