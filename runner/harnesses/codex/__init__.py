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
"""

from runner.harnesses.codex.interpreter import interpret

__all__ = ["interpret"]
