"""GitHub Copilot CLI (``copilot -p --output-format json``) on a BYOK provider: its stdout interpreter.

Profile: ``harness_profiles/copilot.yaml``. Measured here on @github/copilot 1.0.102 (the newest
published, 2026-12-01), Debian 12 x86_64, in the runner image against the scripted model:

- Install: ``npm install @github/copilot@1.0.102`` adds 3 packages in 5 s (189 MB); the binary is
  ``node_modules/@github/copilot-linux-x64/copilot``. npm's ``bin/copilot`` is ``npm-loader.js``,
  which runs that binary with ``spawnSync`` (a signal to the loader never reaches the binary): the
  image links the binary directly.
- The binary is a single-executable loader: its first run extracts its JS package (235 MB) into
  ``$XDG_CACHE_HOME/copilot/pkg/linux-x64/1.0.102``. In the image's version check on an empty tmpfs
  HOME that failed (``ENOSPC``). The image extracts it once at build time into /opt/copilot-dist and
  sets ``COPILOT_CLI_DIST_DIR`` to it; with that set a run on an empty HOME wrote nothing there.
- A custom endpoint (``copilot help environment``, "BYOK"): ``COPILOT_PROVIDER_BASE_URL`` (+
  ``_TYPE openai``, ``_API_KEY``, ``COPILOT_MODEL``) with ``COPILOT_OFFLINE=true`` ("skips all
  network access: GitHub authentication, telemetry, web tools, GitHub MCP server, and auto-update";
  no login needed). Measured: it POSTs ``{base_url}/chat/completions`` (OpenAI JS SDK 5.20.1,
  ``stream: true``), one request per step, no side requests; ``"isByok": true`` in
  ``model.call_final_result``.
- MCP: ``--additional-mcp-config @<file>`` with ``{"mcpServers": {"sharedos": {"type": "local",
  "command", "args", "tools": ["*"]}}}``; ``--allow-all-tools`` is required in ``-p`` mode. It
  reports ``session.mcp_server_status_changed`` pending → connected, then ``session.mcp_servers_loaded``
  before the first model request (the five built-in servers as ``disabled``).
- Tool names: the model sees ``<server>-<tool>`` with ``_`` as ``-`` (``sharedos-files-read``,
  ``sharedos-sharedos-escalate``) next to 17 built-in tools (``bash``, ``view``, ``task``...):
  the ``copilot`` scheme of :mod:`runner.model.names`.
- stdout with ``--output-format json``: JSONL events (``session.*``, ``user.message``,
  ``assistant.turn_start``, ``assistant.message_delta``, ``assistant.message``,
  ``assistant.turn_end``, ``assistant.idle``), then ``{"type": "result", "exitCode": 0, "usage": ...}``.
- A model that keeps failing (scripted fault ``error@1``, HTTP 500; ``early-close@1``, a cut
  stream): Copilot retries 5 times by itself (6 requests, 14 s of waits for the 500, 5 s for the cut),
  then prints ``session.error`` ("Failed to get response from the AI model; retried 5 times ... Last
  error: 500 ...") and ``result`` with ``exitCode: 1``, and exits 1.
- Turn time here: 19-21 s for ``runner exec`` of the escalation case (image present, 2 busy cores);
  image build 21 s from a warm npm cache (the 235 MB extraction included).
"""

from runner.harnesses.copilot.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"copilot": interpret})

__all__ = ["VENDOR", "interpret"]
