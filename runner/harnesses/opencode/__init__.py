"""opencode (``opencode run --format json``): its stdout interpreter.

Profile: ``opencode.yaml``. What was measured on which version: ``README.md``.
"""

from runner.harnesses.opencode.interpreter import interpret
from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.model.names import SERVER_PREFIX, ToolNaming

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "opencode": DeclaredPolicy("mixed", "complete", harness_local=("bash", "edit", "glob", "grep", "read", "skill",
        "task", "todowrite", "webfetch", "write"),
        evidence=("runner/harnesses/opencode/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(
    interpreters={"opencode": interpret}, tool_naming=ToolNaming(direct=(SERVER_PREFIX,)), tool_policy=TOOL_POLICY,
)

__all__ = ["HARNESS", "interpret"]
