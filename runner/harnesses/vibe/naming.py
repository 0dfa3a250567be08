"""How Mistral Vibe 3.x names the MCP tools it offers its model (measured on 3.0.2, its unified harness).

The request declares no MCP tool: ``run_typescript`` (``{"code": string}``) and ``search_tool_functions`` sit beside
Vibe's own tools, the system prompt lists the connector group ``mcp_<server>``, and a script reaches an MCP tool as
``tools.mcp_<server>.<portable>`` (``tools.mcp_sharedos.sharedos_escalate``). The sandbox runs ``main()``; its return
value is the one tool result the next request carries (the MCP result's ``structuredContent``, else its text); an
``isError`` result throws inside the script (``run_typescript failed: {"name":"mcp_tool_error",...}``), and an unknown
tool fails with ``TypeError: tools.mcp_sharedos.nope is not a function`` (no MCP call). ``search_tool_functions``
(``best_match``, ``details``) is what a real model is told to call first; a script needs neither (``README.md``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from runner.core.outcomes import JsonValue
from runner.model.names import ProxyScheme, ToolNaming

RUN_TYPESCRIPT_TOOL = "run_typescript"


def script(canonical: str, arguments: Mapping[str, JsonValue], server: str = "sharedos") -> str:
    """The TypeScript a model sends ``run_typescript`` to call ``canonical`` once and return its result."""
    group = re.sub(r"[^A-Za-z0-9_]", "_", f"mcp_{server}")
    method = re.sub(r"[^A-Za-z0-9_]", "_", canonical)
    call = f"tools.{group}.{method}({json.dumps(dict(arguments), sort_keys=True)})"
    return f"async function main() {{\n  return await {call};\n}}"


SCHEME = ProxyScheme("vibe-codemode", RUN_TYPESCRIPT_TOOL, lambda c, args, s: {"code": script(c, args, s)})
NAMING = ToolNaming(proxies=(SCHEME,))
