"""Pi (``pi --mode json``): its stdout interpreter, shared by three columns.

Profiles: ``pi.yaml`` (Pi's built-in MCP, default ``codemode`` exposure),
``pi-direct.yaml`` (the same image, ``"exposure": "direct"``) and ``pi-adapter.yaml``
(the older Pi with ``pi-mcp-adapter`` and its ``mcp`` proxy tool). What was measured on which version (codemode,
the ask through a script, direct exposure, the frames each version adds, SIGTERM, the retired ``@mariozechner``
column): ``README.md``.
"""

from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.harnesses.pi.interpreter import interpret
from runner.model.names import CLAUDE, PI_CODEMODE, PI_PROXY, SERVER_PREFIX, SERVER_PREFIX_DEDUPLICATED, ToolNaming

# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "pi": DeclaredPolicy("mixed", "unknown", harness_local=("codemode",),
        evidence=("runner/harnesses/pi/README.md#pi",)),
    "pi-direct": DeclaredPolicy("broker-only", "complete", evidence=("runner/harnesses/pi/README.md#pi-direct",)),
    "pi-adapter": DeclaredPolicy("mixed", "unknown", harness_local=("mcp", "mcpScript", "mcp__sharedos"),
        evidence=("runner/harnesses/pi/README.md#pi-adapter",)),
}

HARNESS = HarnessPackage(interpreters={"pi": interpret}, tool_naming=ToolNaming(
    direct=(CLAUDE, SERVER_PREFIX, SERVER_PREFIX_DEDUPLICATED), proxies=(PI_PROXY, PI_CODEMODE)
), tool_policy=TOOL_POLICY)

__all__ = ["HARNESS", "interpret"]
