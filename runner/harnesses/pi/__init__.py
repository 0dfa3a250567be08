"""Pi (``pi --mode json``): its stdout interpreter, shared by three columns.

Profiles: ``pi.yaml`` (Pi's built-in MCP, default ``codemode`` exposure),
``pi-direct.yaml`` (the same image, ``"exposure": "direct"``) and ``pi-adapter.yaml``
(the older Pi with ``pi-mcp-adapter`` and its ``mcp`` proxy tool). What was measured on which version (codemode,
the ask through a script, direct exposure, the frames each version adds, SIGTERM, the retired ``@mariozechner``
column): ``README.md``.
"""

from runner.harnesses.package import HarnessPackage
from runner.harnesses.pi.interpreter import interpret
from runner.model.names import CLAUDE, PI_CODEMODE, PI_PROXY, SERVER_PREFIX, SERVER_PREFIX_DEDUPLICATED, ToolNaming

HARNESS = HarnessPackage(interpreters={"pi": interpret}, tool_naming=ToolNaming(
    direct=(CLAUDE, SERVER_PREFIX, SERVER_PREFIX_DEDUPLICATED), proxies=(PI_PROXY, PI_CODEMODE)
))

__all__ = ["HARNESS", "interpret"]
