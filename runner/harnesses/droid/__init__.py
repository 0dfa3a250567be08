"""Factory Droid (``droid exec -o stream-json``, ``@factory/cli`` via ``@factory/cli-linux-x64`` 0.225.2): an
``unavailable`` column, with what was measured.

Profile: ``harness_profiles/droid.yaml``. Measured on the host, 2026-12-01, against ``python -m runner.model``
playing the escalation script and a stdio MCP server with ``files.read`` and ``sharedos.escalate``:

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
  named ``mcp_tool_search_*``). The scripted model does not play ``ToolSearch`` (it would have to call
  ``ToolSearch {"query": "select:..."}`` first, which also adds a tool result to the conversation, and then the
  tools under the ``<server>___<tool>`` scheme), so it answered the request as a side request ("OK.") and the turn
  made no call.
- **MCP start-up is not awaited.** In the default toolset the first model request went out at 20:59:40.4 and the
  server connected at 20:59:43.7 (``mcp_server_start_latency_ms`` 6865 under load): the first request can go out
  without the server's tools, as Codex did without ``required``.
- **Stream.** ``system``/``init`` (tools, model, session id), ``message`` (``role``, ``text``), ``completion``
  (``finalText``, ``numTurns``, ``durationMs``, ``usage``); exit 0. Read by :mod:`runner.harnesses.droid.interpreter`.
- **Files.** ``~/.factory/``: ``sessions/<cwd with / → ->/<session>.jsonl``, ``logs/droid-log-single.log``,
  ``settings.json``, ``mcp.json``, ``telemetry/``, ``cache/``.
- **Timing.** 15.6 s for ``droid exec`` (one model request) on the host under load.
"""

from runner.harnesses.droid.interpreter import interpret

__all__ = ["interpret"]
