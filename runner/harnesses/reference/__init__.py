"""The reference harness: the project's own stand-in for a vendor coding-agent CLI.

`client.py` in this directory is copied into the reference image and run there as
`/opt/venv/bin/python /opt/reference/client.py --script /run/runner/script.json`.
It is a standalone file (stdlib plus the `mcp` SDK only) and must never import the
`runner` package. It registers its MCP server as a stdio server, reaching the host
through a relay command (by default `socat STDIO UNIX-CONNECT:/run/runner/mcp.sock`),
executes the already-expanded action list in order, and reports what happened as
JSON Lines frames on stdout; diagnostics go to stderr.

The column: `README.md`.
"""

from runner.harnesses.package import HarnessPackage

HARNESS = HarnessPackage()  # nothing of its own: its client prints runner's ``jsonl`` frames
