"""Mistral Vibe (``vibe -p <prompt> --output streaming``, ``mistral-vibe`` 2.26.1 from PyPI): an ``unavailable``
column, with what was measured.

Profile: ``harness_profiles/vibe.yaml``. Measured on the host, 2026-12-01, with Python 3.13.0 (pyenv), against
``python -m runner.model`` playing the escalation script and a stdio MCP server with ``files.read`` and
``sharedos.escalate``:

- **Install.** Every release requires Python >= 3.12 (3.0.0: >= 3.14), and no runner image has one (bookworm's
  3.11 in ``images/base``; the node base has none): that is why the column is unavailable. 3.0.3 (newest) does not
  install anywhere: it pins ``certifi==2026.10.19``, which is not published (``2026.10.19.post1`` is). 2.26.1
  resolves to 98 wheels for CPython 3.13 (``mistral_vibe-2.26.1-cp312-abi3``, ``mcp`` 1.28.1, ``textual``,
  ``mistralai`` ...) and installs offline from them.
- **Custom endpoint: yes.** ``~/.vibe/config.toml``: ``active_model = <alias>``, ``[[providers]] name, api_base,
  api_key_env_var, api_style = "openai", backend = "generic"``, ``[[models]] name, provider, alias``. The model
  endpoint saw ``POST /v1/chat/completions``. No Mistral account is needed.
- **MCP: yes, with ``--legacy-harness``.** ``[[mcp_servers]] name, transport = "stdio", command, args``. With the
  default ("unified") harness the request's tools were ``search_tool_functions``, ``run_typescript``, ``read_file``
  ... and no MCP tool: the scripted model answered it as a side request ("OK.") and no call was made. With
  ``--legacy-harness`` the tools include ``sharedos_files.read`` and ``sharedos_sharedos.escalate`` (``<server>_``
  + the MCP name as it is, dots kept: the scripted model's ``server-prefix`` scheme with the canonical form), both
  calls reached the server, and the final text came back: exit 0 in 16.3 s under load. ``--auto-approve`` lets the
  calls run without a prompt (``-p`` otherwise follows the agent's approval settings).
- **Stream.** ``--output streaming``: one session entry per line (``message`` user/assistant, ``effect`` per tool
  run), no terminal entry (:mod:`runner.harnesses.vibe.interpreter`).
- **Files.** ``~/.vibe/``: ``config.toml``, ``trusted_folders.toml``, ``vibehistory``, ``logs/vibe.log``,
  ``logs/session/session_<date>_<time>_<id>/``, ``logs/mcp-descriptors/`` (the MCP tool list it discovered).
"""

from runner.harnesses.vendor import Vendor
from runner.harnesses.vibe.interpreter import interpret

VENDOR = Vendor(interpreters={"vibe": interpret})

__all__ = ["VENDOR", "interpret"]
