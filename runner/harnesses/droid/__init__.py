"""Factory Droid (``droid exec -o stream-json``, ``@factory/cli`` via ``@factory/cli-linux-x64`` 0.225.2): its
interpreter, and what was measured.

Profile: ``harness_profiles/droid.yaml``. Measured on the host, 2026-12-01, against ``python -m runner.model``
playing the escalation script and a stdio MCP server with ``files.read`` and ``sharedos.escalate``, then in the
pinned image through ``runner exec``:

- **Install.** ``@factory/cli`` has one version, 0.225.1; it installs, but its postinstall (skipped by npm 11) and
  its launcher ``bin/droid`` look for the optional dependency ``@factory/cli-linux-x64@0.225.1``, which is not
  published (the platform package has 0.99.0, 0.105.1, 0.109.3, 0.117.0, 0.215.0, 0.225.2). The platform package
  0.225.2 alone is the whole CLI: a 254 MB glibc ELF, ``droid --version`` → ``0.225.2``.
- **Custom endpoint: yes.** ``~/.factory/settings.json`` ``{"customModels": [{"model", "displayName", "baseUrl",
  "apiKey", "provider": "generic-chat-completion-api", "maxOutputTokens"}]}`` and ``droid exec -m custom:<model>``:
  the CLI POSTed ``/v1/chat/completions`` to the base URL, with no ``FACTORY_API_KEY`` and no login (init frame
  ``"model": "custom:runner-0"``).
- **MCP: connected, but never offered directly.** ``~/.factory/mcp.json`` ``{"mcpServers": {"sharedos": {"type":
  "stdio", "command", "args"}}}``: the log says "MCP server connected" (``McpHub``). Every MCP tool is *deferred*:
  the request carries a ``ToolSearch`` function and a system reminder "Deferred tools: sharedos___files_read,
  sharedos___sharedos_escalate" ("Load a listed tool with ToolSearch: pass query "select:<name>"... Do not call an
  omitted tool directly (it fails with InputValidationError)"). With ``--only-tools MCP:sharedos`` the request's
  tools were ``["ToolSearch"]`` alone. No setting to turn the deferral off was found in the binary (only metrics
  named ``mcp_tool_search_*``). Until the scripted model learnt it, it answered that request as a side request
  ("OK.") and the turn made no call. It now plays it (:mod:`runner.model.names`, "Deferred tools"): ``ToolSearch
  {"query": "select:sharedos___files_read,sharedos___sharedos_escalate"}`` → "Loaded 2 tool(s): ...", and the next
  request offers ``sharedos___files_read`` & co. (``<server>___<tool>``), which reach the MCP server by their real
  names.
- **Autonomy.** With no ``--auto`` or ``--auto medium`` the first MCP call ends the run: tool result "Exec ended
  early: MCP tool sharedos___files_read requires higher autonomy to proceed. Re-run with --auto high", then
  ``{"type": "error", "source": "cli", "message": ...}``, exit 1. ``--auto high`` runs them.
- **MCP start-up.** In the default toolset the first model request went out at 20:59:40.4 and the server connected
  at 20:59:43.7 (``mcp_server_start_latency_ms`` 6865 under load): the first request went out without the server's
  tools, as Codex's did without ``required``. With ``--only-tools MCP:sharedos`` the server was connected before
  the first request in every run (3 on the host, every ``runner exec``); whether Droid waits for a server its tool
  selector names, or was just in time, is not known. A turn whose first request lacked the tools would end without
  a call (the ToolSearch select finds nothing), not hang.
- **A failing model API** (HTTP 500 on every request): Droid retries with a growing backoff (requests 6, 14, 35,
  30 s apart, measured; no retry setting was found) and never gives up before the turn deadline: the turn ends
  ``cancelled`` at the deadline.
- **Stream.** ``system``/``init`` (tools, model, session id), ``message`` (``role``, ``text``), ``tool_call`` /
  ``tool_result`` (``isError``, ``value`` or ``error``), ``completion`` (``finalText``, ``numTurns``, ``durationMs``,
  ``usage``) then exit 0, or ``error`` (``source``, ``message``) then exit 1.
  Read by :mod:`runner.harnesses.droid.interpreter`.
- **Files.** ``~/.factory/``: ``sessions/<cwd with / → ->/<session>.jsonl``, ``logs/droid-log-single.log``,
  ``settings.json``, ``mcp.json``, ``telemetry/``, ``cache/``.
- **Timing.** 12.6 s for the whole turn on the host, 33.9 s for ``runner exec`` (image check, container, turn,
  settle), under load.
"""

from runner.harnesses.droid.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"droid": interpret})

__all__ = ["VENDOR", "interpret"]
