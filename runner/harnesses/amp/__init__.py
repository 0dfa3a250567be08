"""Sourcegraph Amp CLI (``amp -x --stream-json``): why its column is unavailable.

Profile: ``harness_profiles/amp.yaml`` (``unavailable``; the generic ``exit-code`` interpreter stands
in, nothing here has read its stdout). Measured here on 2026-12-01, Debian 12 x86_64, node 20:

- Packages: ``@sourcegraph/amp`` (latest 0.0.1790142911-g7618fb) is a shim whose bin is
  ``node_modules/@ampcode/cli/bin/amp.exe``; the CLI is ``@ampcode/cli`` (latest
  0.0.1790712063-gb89205) with one native binary per platform as optional dependencies.
- The newest does not install here: ``npm install @ampcode/cli@0.0.1790712063-gb89205`` adds 1
  package (48 KB), because ``@ampcode/cli-linux-x64`` has no such version (its newest is
  0.0.1790142911-g7618fb); ``bin/amp.exe`` is then a shell stub printing "Amp native binary not
  installed". The pin, 0.0.1790142911-g7618fb, installs in 5 s (97 MB) and its binary prints
  ``0.0.1790142911-g7618fb (released 2026-09-23...)``. npm 11 does not run ``install.cjs`` (the
  postinstall that links the binary over the stub): the image links the binary directly.
- In the image build's version check (read-only root, tmpfs /tmp) the binary failed: its Bun
  runtime (1.4.1) extracts a native module to ``/tmp/.bun-1000-<hash>.node`` and cannot map it
  ("failed to map segment from shared object", ``ERR_DLOPEN_FAILED``, rc 1); ``docker run
  --network none <image> amp --version`` printed the version. A runnable column would need an
  executable TMPDIR.
- Headless and MCP exist (``-x/--execute``, ``--stream-json``, "Claude Code-compatible";
  ``--mcp-config``, ``amp.mcpServers``, ``amp.dangerouslyAllowAll``), but a model endpoint does not:
  the settings reference has no provider or base URL; ``AMP_URL`` is "URL for the Amp service".
- With no ``AMP_API_KEY``: "No API key found. Starting login flow...", a browser URL, and "paste your
  code here" (killed by ``timeout 30``).
- With ``AMP_URL`` = a loopback server logging and answering 404 and ``AMP_API_KEY`` set: ``POST
  /api/internal?getUserInfo`` (``{"method": "getUserInfo"}``), ``POST /api/internal?loadPlugins``,
  then "Error: API request for getUserInfo failed: 404". The agent's model calls run through that
  service; no OpenAI or Anthropic request is ever made by the CLI.

So a turn needs an Amp account and a container that reaches ampcode.com; the runner's sandbox runs
with network ``none`` and its model endpoint speaks no Amp API.
"""

from runner.harnesses.vendor import Vendor

VENDOR = Vendor()  # nothing of its own: the column is unavailable and the generic ``exit-code`` interpreter stands in
