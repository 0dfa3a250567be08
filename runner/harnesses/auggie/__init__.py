"""Augment Auggie CLI (``auggie --print --output-format json``): why its column is unavailable.

Profile: ``harness_profiles/auggie.yaml`` (``unavailable``; the generic ``exit-code`` interpreter
stands in, nothing here has read its stdout). Measured here on @augmentcode/auggie 0.36.0 (the
newest published, 2026-12-01), Debian 12 x86_64, node 20:

- Install: ``npm install @augmentcode/auggie@0.36.0`` adds plain JavaScript (``augment.mjs``,
  13 MB; 39 MB with node-pty) in 5 s; ``engines.node >= 20``. The image builds offline and
  ``auggie --version`` prints ``0.36.0 (commit 7c61e5bb)``.
- Headless and MCP exist (``--print``, ``--output-format json``, ``--mcp-config``,
  ``--permission``), but a model endpoint does not: ``--help`` has no provider or base-URL option,
  and the bundle reads only ``AUGMENT_API_URL``/``AUGMENT_API_TOKEN``/``AUGMENT_SESSION_AUTH``
  (``{"accessToken", "tenantURL", "scopes"}``) for where to talk.
- With no session, ``auggie --print ... "say hi"`` exits 1 at once: "No auth provided. Please log in
  with `auggie login` or set the AUGMENT_SESSION_AUTH environment variable" (``AUGMENT_API_URL`` +
  ``AUGMENT_API_TOKEN`` gave the same).
- With ``AUGMENT_SESSION_AUTH`` whose ``tenantURL`` is a loopback server that logs and answers 404,
  it sent Augment's own API there: ``POST /get-models``, ``/settings/get-mcp-tenant-configs`` and
  ``/settings/get-mcp-user-configs`` (x3), ``/agents/list-remote-tools`` (x4), ``/chat-stream``
  (``{"model", "message", "chat_history", "blobs", ...}``), ``/report-error``; then "API Error:
  unimplemented". No OpenAI, Anthropic or Gemini request.
- Its "bring your own key" (``bringYourOwnKey`` in settings, ``byokKeys``) travels inside the
  ``chat-stream`` request to that service; it does not change where requests go.

So a turn needs an Augment account and a container that reaches its tenant; the runner's sandbox
runs with network ``none`` and its model endpoint speaks no Augment API.
"""

from runner.harnesses.vendor import Vendor

VENDOR = Vendor()  # nothing of its own: the column is unavailable and the generic ``exit-code`` interpreter stands in
