"""Pi (``pi --mode json``): its stdout interpreter, shared by three columns.

Profiles: ``pi.yaml`` (Pi's built-in MCP, default ``codemode`` exposure),
``pi-direct.yaml`` (the same image, ``"exposure": "direct"``) and ``pi-adapter.yaml``
(the older Pi with ``pi-mcp-adapter`` and its ``mcp`` proxy tool). What was measured on which version (codemode,
the ask through a script, direct exposure, the frames each version adds, SIGTERM, the retired ``@mariozechner``
column): ``README.md``.
"""

from runner.harnesses.package import HarnessPackage
from runner.harnesses.pi.interpreter import interpret

HARNESS = HarnessPackage(interpreters={"pi": interpret})

__all__ = ["HARNESS", "interpret"]
