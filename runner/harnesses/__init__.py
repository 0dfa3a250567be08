"""Harnesses: the coding-agent CLIs the runner drives inside containers.

Each subpackage describes one harness. `reference` is the project's own stand-in
for a vendor CLI: a scripted MCP client that runs inside the container and
replays an action list written by the runner.
"""
