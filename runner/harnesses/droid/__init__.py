"""Factory Droid (``droid exec -o stream-json``, ``@factory/cli`` via ``@factory/cli-linux-x64`` 0.225.2): its
interpreter and its tool naming (``naming.py``: ToolSearch).

Profile: ``droid.yaml``. What was measured on which version (install, endpoint, MCP,
retries, stream, files, timing): ``README.md``.
"""

from runner.harnesses.droid.interpreter import interpret
from runner.harnesses.droid.naming import NAMING
from runner.harnesses.package import DeclaredPolicy, HarnessPackage

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "droid": DeclaredPolicy("mixed", "unknown", harness_local=("ToolSearch",),
        evidence=("runner/harnesses/droid/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(interpreters={"droid": interpret}, tool_naming=NAMING, tool_policy=TOOL_POLICY)

__all__ = ["HARNESS", "interpret"]
