"""Kilo Code (``kilo run --format json``, ``@kilocode/cli`` 7.7.7): opencode's stream, read by opencode's rules.

Profile: ``harness_profiles/kilo.yaml``. Kilo Code is a fork of opencode, and what a turn depends on was measured to
be opencode's (7.7.7 on the host, 2026-12-01, against ``python -m runner.model`` playing the escalation script and a
stdio MCP server with ``files.read`` and ``sharedos.escalate``; then in the pinned image through ``runner exec``):

- **Install.** 7.8.1 (latest) does not install: its postinstall looks for ``@kilocode/cli-linux-x64@7.8.1`` (and
  the baseline and musl variants), which the registry does not have (npm ETARGET); the platform package's versions
  are 7.0.33, 7.7.2, 7.7.7, 7.7.9. 7.7.7 is the newest launcher with a platform package. ``bin/kilo`` is a node
  launcher that spawns the native Bun binary ``node_modules/@kilocode/cli-linux-x64/bin/kilo`` (169 MB); the image
  links the binary itself.
- **Same as opencode.** ``kilo run --format json -m <provider>/<model>`` with the prompt on stdin; the config is
  opencode.json's shape (``provider.<id>.npm = "@ai-sdk/openai-compatible"``, ``options.baseURL``, ``mcp.<name> =
  {"type": "local", "command": [...]}``); the model sees the MCP tools as ``<server>_<tool>``
  (``sharedos_files_read``, ``sharedos_sharedos_escalate``: the scripted model's ``server-prefix`` scheme); MCP
  calls need no approval (each ``tool_use`` event records the rule ``{"permission": "*", "action": "allow"}``);
  the stdout events are opencode's (``step_start``, ``tool_use`` once a tool ended, ``text``, ``step_finish`` with
  ``reason: "tool-calls"`` then ``"stop"``), so :mod:`runner.harnesses.opencode.interpreter` reads them.
- **Different from opencode.** The config file is ``~/.config/kilo/kilo.json`` (``KILO_CONFIG``,
  ``KILO_CONFIG_CONTENT``, ``KILO_CONFIG_DIR`` also exist; an ``opencode.json`` is read too); the variables are
  ``KILO_*`` (``KILO_DISABLE_MODELS_FETCH``, ``KILO_DISABLE_AUTOUPDATE``); the data directory is
  ``~/.local/share/kilo`` (``kilo.db``, the session store, and ``log/``). Kilo adds services opencode has not:
  PostHog telemetry (``KILO_TELEMETRY_LEVEL``; "all" enables it; at exit with no network it logs "Timeout while
  shutting down PostHog" after ~2 s), a codebase indexer ("initializing project indexing", off with
  ``KILO_DISABLE_CODEBASE_INDEXING``), a cloud session ingest, and a model-list fetch from its own gateway
  (provider ``kilo``: ``model fetch error {"kind": "network"}``, harmless). The profile turns them off.
- **A failing model API** (HTTP 500 on every request): retried 5 times, 2, 5, 10, 19 and 32 s apart, then
  opencode's ``error`` event (the API's message) and exit 1: 134 s and 181 s for the whole turn under load.
  ``KILO_SESSION_RETRY_LIMIT=0`` did not change it (6 requests again); no other retry switch was found.
- **Slow start.** A turn costs Kilo ~13 s of CPU (``user`` time on the host; opencode's turns took 4-9 s of wall
  time), most of it before the first model request, with the switches above set (the indexer still logs
  "initializing project indexing"). Wall time follows the machine's load: 31 s on the host at load ~6, 48 s at
  ~12; in the image 79 s for a whole ``runner exec`` cell at load ~12, of which the three model requests took
  ~8 s. Its deadline and ``cell_seconds`` are sized for that.
"""

from runner.harnesses.kilo.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"kilo": interpret})

__all__ = ["VENDOR", "interpret"]
