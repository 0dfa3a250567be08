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
"""

from runner.harnesses.claude_code.interpreter import interpret

__all__ = ["interpret"]
