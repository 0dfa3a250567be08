"""Cline CLI (``cline --json``) on an OpenAI-compatible provider: its stdout interpreter.

Profile: ``harness_profiles/cline.yaml``. Measured here on cline 3.0.65 (the newest published,
2026-12-01), Debian 12 x86_64, in the runner image against the scripted model:

- Install: ``npm install cline@3.0.65`` takes 86 s and stages 434 MB (152 MB of it the Bun binary of
  @cline/cli-linux-x64; npm warns EBADENGINE for @cline/agents and @cline/core, node >= 22, but the
  binary embeds its own runtime and runs with node 20 in the image). npm's ``bin/cline`` is a node
  resolver that spawns the binary as a child: the image links the binary directly.
- A custom endpoint: ``cline auth -p openai -k <key> -m <model> -b <base url>`` writes one file,
  ``~/.cline/data/settings/providers.json`` (provider ``openai-compatible``, ``baseUrl``, ``apiKey``,
  ``model``, ``updatedAt``), which the profile renders itself. Traps, both measured: an entry without
  ``updatedAt`` is silently dropped and cline rewrites the file with its default provider ``cline``
  (which needs a login and the network); and ``-P openai-compatible -m <model>`` on the command line
  rewrites the entry with only provider and model (baseUrl and key gone). Either way the turn failed
  after ~65 s of retries ("Cannot connect to API", 6 attempts) with no model request. With the file
  alone it POSTs ``{baseUrl}/chat/completions`` (``stream: true``, ``tool_choice``), one request per
  step, no side requests.
- MCP: ``cline mcp add sharedos --yes -- <command> <args>`` writes
  ``~/.cline/data/settings/cline_mcp_settings.json`` (``mcpServers.<name>.transport`` with ``type:
  stdio``, ``command``, ``args``); the profile renders it. Calls need no approval (act mode,
  ``--auto-approve`` defaults to true). Cline prints no MCP status: the runtime's host-side check
  that an MCP session was opened covers a failed start.
- Tool names: ``<server>__<tool>_<8 hex digits>`` (``sharedos__files_read_5f40265d``,
  ``sharedos__sharedos_escalate_9381461a``), next to its own tools (``read_files``, ``run_commands``,
  ``editor``, ``spawn_agent``, 18 ``team_*``): the ``cline`` scheme of :mod:`runner.model.names`
  with its hash suffix.
- A model that keeps failing (scripted fault ``error@1``, HTTP 500): 6 attempts over 65 s (its AI
  SDK's retries), then ``agent_event`` ``error``, ``run_result`` with ``finishReason: "error"`` and
  the API's message as ``text``, exit 1.
- Turn time here: 30-41 s for ``runner exec`` of the escalation case (image present, 2 busy cores;
  about 1 s between a tool call and its result, hooks included); image build 226 s cold (staging
  the 434 MB npm prefix included; the npm install alone took 86 s).
- State: everything under ``~/.cline/data`` (sessions/<id>/<id>.messages.json, SQLite databases
  under db/, logs/cline.log and logs/hub-daemon.log); that directory is the collected transcript.
"""

from runner.harnesses.cline.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"cline": interpret})

__all__ = ["VENDOR", "interpret"]
