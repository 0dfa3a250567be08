"""OpenAI Codex CLI (``codex exec --json``): its stdout interpreter.

Profile: ``harness_profiles/codex.yaml``.

**When the model API fails** (measured with ``runner exec --model-fault``, Codex 0.169.0, the
profile's bounded retries: ``request_max_retries = 0``, ``stream_max_retries = 0``, ``--disable
unbounded_connection_retries``):

- HTTP 500 (``error``): one request, no retry; Codex prints a top-level ``error`` line and then
  ``turn.failed``, rc 1; the whole turn took 1.0-1.3 s. **Quirk:** the message is Codex's
  own, not the server's -- ``"We’re currently experiencing high demand, which may cause temporary
  errors."`` -- whatever the 500's body says; the turn reports that text, ``harness_failed``.
- A stream cut before ``response.completed`` (``early-close``): one request, no retry;
  ``turn.failed`` with ``"stream disconnected before completion: Transport error: network error:
  error decoding response body"``, rc 1 (turn 1.1 s).
- A request never answered (``stall``): Codex waits (no give-up within a 40 s deadline; its own
  stream idle timeout is longer) until the deadline's SIGTERM, then exits 143 with no terminal frame.
- After the ask the same reactions leave the turn ``escalated`` with ``harnessOutcome: fail``
  (``harness_failed``, or ``harness_wind_down_timeout`` for the stall).

**Re-measured on 0.171.0** (the pin since issue 11; ``runner exec`` on the scripted model, one setting of the
profile taken out at a time, on a loaded 2-core machine):

- The turns: ``escalation`` ends ``escalated``, ``harnessOutcome: complete``, ``callsAfterEscalation: 0``;
  ``persistent`` gives 3 calls after the ask; ``escalation-refused`` ends ``succeeded``. The start-up item
  "Model metadata for `runner-scripted` not found" is still printed.
- The faults, as above: ``error`` one request, the same "We’re currently experiencing high demand" text (twice:
  an ``error`` line, then ``turn.failed``), rc 1; ``early-close`` one request, "stream disconnected before
  completion: Transport error: network error: error decoding response body", rc 1; ``stall`` one request held
  until the deadline, rc 143, no terminal frame; ``error@after-ask`` ``escalated`` with ``fail``/``harness_failed``.
- The unknown slug still needed: with ``gpt-5.5`` on the scripted model the first request offers ``tool_search``
  and no ``mcp__sharedos`` namespace; the model never sees the tools (the turn ``succeeded`` with no call).
- ``wire_api = "chat"`` still refused: "Error loading config.toml: `wire_api = "chat"` is no longer supported"
  (the turn is an infrastructure error: no MCP session).
- **Changed:** ``default_tools_approval_mode = "approve"`` is no longer needed: without it the calls reached the
  server and the turn escalated (0.169.0 failed every call with "MCP tool call requires approval"). The profile
  keeps it: upstream sets it too, and it states the intent.
- Not re-measured: the endless reconnects against a dead endpoint without ``--disable
  unbounded_connection_retries``, the stdin wait, the network traffic without the three switches (strace),
  ``required = true`` with a slow server.
"""

from runner.harnesses.codex.interpreter import interpret
from runner.harnesses.vendor import Vendor

VENDOR = Vendor(interpreters={"codex": interpret})

__all__ = ["VENDOR", "interpret"]
