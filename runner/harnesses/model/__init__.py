"""The model column (``model.yaml``): runner's own minimal agent loop, the model in the seat.

``agent.py`` in this directory is copied into the model image and run there as
``/opt/venv/bin/python /opt/model/agent.py --dialect ...``. Like the reference client it is a standalone
file (stdlib, the ``mcp`` SDK and ``httpx2`` only) that must never import the ``runner`` package. It
lists SharedOS's tools over MCP (through the same socat relay as every CLI), offers them to the model
in the dialect ``--model-dialect`` picked, executes each call over MCP through the latch, and prints
runner's ``jsonl`` frames. Its stdout is read by the generic ``jsonl`` interpreter.

The column: ``README.md``.
"""

from runner.harnesses.package import DeclaredPolicy, HarnessPackage
from runner.model.names import CLINE, ToolNaming

# its agent prints runner's ``jsonl`` frames, and names the tools as Cline does (without a hash): agent.py
# declared from what its README's "What it offers its model" says was measured (ADR 0027)
TOOL_POLICY = {
    "model": DeclaredPolicy("broker-only", "complete",
        evidence=("runner/harnesses/model/README.md#what-it-offers-its-model-measured-2026-12-06",)),
}

HARNESS = HarnessPackage(tool_naming=ToolNaming(direct=(CLINE,)), tool_policy=TOOL_POLICY)
