"""Anthropic Claude Code (``claude -p --output-format stream-json``): its stdout interpreter.

Profile: ``harness_profiles/claude-code.yaml``.

**When the model API fails** (measured with ``runner exec --model-fault``, Claude Code 2.1.328,
``CLAUDE_CODE_MAX_RETRIES=1``):

- HTTP 500 (``error``): two requests -- the first, an ``api_retry`` frame (``error_status: 500``,
  ``retry_delay_ms`` ~0.5-0.6 s), the retry -- then a ``result`` with ``is_error: true``,
  ``terminal_reason: "api_error"`` and ``result: "API Error: 500 <the server's message>. This is a
  server-side issue, usually temporary ..."``, rc 1 (turn 2.1-2.2 s): the turn fails ``api_error`` in
  the CLI's words.
- A stream cut before ``message_stop`` (``early-close``). **Quirk:** three requests, not two -- the
  streamed request, its streamed retry, and then at once a *non-streaming* fallback (``stream:
  false``, ``max_tokens`` 64000 instead of 128000). When that is cut too: ``result: "API Error:
  Connection to the API was lost (ECONNRESET). ..."``, ``api_error``, rc 1 (turn 2.1-2.4 s). (So a fault that lets
  the retry through would be hidden by the fallback; runner's faults stay on once they fire.)
- A request never answered (``stall``): Claude waits (no give-up within a 40 s deadline). The
  deadline's SIGTERM aborts the request, which Claude reports as one more ``api_retry`` frame
  (``error: "unknown"``, ``error_status: null``) before it exits 143 with no ``result``.
- After the ask the same reactions leave the turn ``escalated`` with ``harnessOutcome: fail``
  (``api_error``, or ``harness_wind_down_timeout`` for the stall).

**Re-measured on 2.1.332** (the pin since issue 11; ``runner exec`` on the scripted model, one setting of the
profile taken out at a time, on a loaded 2-core machine):

- The turns: ``escalation`` ends ``escalated``, ``harnessOutcome: complete``, ``callsAfterEscalation: 0``;
  ``persistent`` gives 3 calls after the ask; ``escalation-refused`` ends ``succeeded`` (the ask refused). The
  CLI's default model is still ``claude-opus-5-5`` (no ``--model`` in argv).
- The faults, as above: ``error`` two streamed requests (the ``api_retry`` frame has ``error_status: 500``,
  ``error: "server_error"``, ``retry_delay_ms`` 503), ``api_error``, rc 1; ``early-close`` three requests, the
  third ``stream: false`` with ``max_tokens`` 64000, ``ECONNRESET``, rc 1; ``stall`` one request held until the
  deadline, one ``api_retry`` frame (``error: "unknown"``, ``error_status: null``), rc 143; ``error@after-ask``
  ``escalated`` with ``fail``/``api_error``.
- ``--tools ""`` still needed: without it the first request offers 38 tools, the built-ins (``Agent``, ``Bash``,
  ``CronCreate``, ``Edit``, ``Monitor``, ``ReportFindings``, ``WebFetch``, ``Workflow`` …) beside the 17 MCP ones.
- ``--allowedTools mcp__sharedos`` still needed: without it no call reaches the server (the tool result reads
  "Permission to use mcp__sharedos__files_read has been denied because Claude Code is running in don't ask
  mode") and the turn still ends ``succeeded``.
- ``--verbose`` still needed: without it rc 1, "Error: When using --print, --output-format=stream-json requires
  --verbose" (the turn is an infrastructure error: no MCP report at start-up).
- **Changed:** ``ENABLE_TOOL_SEARCH=false`` is no longer needed on this catalogue: without it the 17 MCP tools
  were offered directly, with one ``DeferredToolPlaceholder`` tool beside them (2.1.328 hid them behind
  ``ToolSearch``), and the turn escalated. The profile keeps the setting: it costs nothing, and it keeps the
  model's tool list the catalogue exactly.
- Not re-measured: the network traffic without ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC`` (strace), the
  retries against a dead endpoint without ``CLAUDE_CODE_MAX_RETRIES``, a failed MCP server (the e2e tests cover
  its detection), the stdin wait.
"""

from runner.harnesses.claude_code.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"claude-code": interpret})

__all__ = ["VENDOR", "interpret"]
