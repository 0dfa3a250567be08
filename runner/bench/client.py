#!/usr/bin/env python3
"""The timing client of ``python -m runner.bench``: one MCP SDK ``ClientSession``, timed ``tools/call`` round trips.

Standalone on purpose (the standard library, ``anyio`` and the ``mcp`` SDK only, never the ``runner``
package), because the same file runs in two places:

- inside the reference image, copied by :mod:`runner.bench.roundtrip` into the bind-mounted turn
  directory as ``bench_client.py`` and started as
  ``/opt/venv/bin/python /run/runner/bench_client.py WARMUP CALLS TOOL ARGUMENTS_JSON``: it registers
  the server the way the reference harness does (a stdio server ``socat STDIO
  UNIX-CONNECT:/run/runner/mcp.sock``), or with ``direct`` connects straight to the socket
  (:mod:`runner.mcp.unix_client`, copied beside it), times every call inside the container and
  prints one JSON object on stdout;
- in the bench process itself, where :func:`session_timings` drives a session on the real server's
  in-memory streams (:mod:`runner.mcp.memory`, the floor), so both figures come from the same routine.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import TYPE_CHECKING

import anyio
import mcp_types as types
from mcp import ClientSession, StdioServerParameters, stdio_client

if TYPE_CHECKING:  # for the type checker only: in the container there is no runner package
    from mcp.shared._stream_protocols import ReadStream, WriteStream  # the SDK names them only here
    from mcp.shared.message import SessionMessage

    from runner.core.outcomes import JsonValue

CLIENT_INFO = types.Implementation(name="runner-bench", version="1")
SOCKET = "/run/runner/mcp.sock"
RELAY = ("socat", ["STDIO", f"UNIX-CONNECT:{SOCKET}"])


@dataclass
class Timings:
    """Milliseconds per measured call (warm-up calls left out), and how many calls came back as errors."""

    samples_ms: list[float] = field(default_factory=list)
    errors: int = 0
    first_text: str = ""
    init_ms: float | None = None

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "samplesMs": [round(s, 4) for s in self.samples_ms],
            "errors": self.errors,
            "firstText": self.first_text[:200],
            "initMs": None if self.init_ms is None else round(self.init_ms, 3),
            "mcp": _version("mcp"),
        }


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"


async def timed_calls(
    session: ClientSession, warmup: int, calls: int, tool: str, arguments: dict[str, JsonValue]
) -> Timings:
    """``warmup`` untimed calls, then ``calls`` calls each timed around ``session.call_tool``."""
    timings = Timings()
    for index in range(warmup + calls):
        started = time.perf_counter_ns()
        result = await session.call_tool(tool, arguments)
        took = time.perf_counter_ns() - started
        if result.is_error:
            timings.errors += 1
        if index == 0 and result.content and isinstance(result.content[0], types.TextContent):
            timings.first_text = result.content[0].text
        if index >= warmup:
            timings.samples_ms.append(took / 1e6)
    return timings


async def session_timings(
    read: ReadStream[SessionMessage | Exception],
    write: WriteStream[SessionMessage],
    started: float, warmup: int, calls: int, tool: str, arguments: dict[str, JsonValue]
) -> Timings:
    """Open a session on the stream pair, list the tools, then time the calls; ``initMs`` from ``started``."""
    async with ClientSession(read, write, client_info=CLIENT_INFO) as session:
        await session.initialize()
        await session.list_tools()
        init_ms = (time.perf_counter() - started) * 1e3
        timings = await timed_calls(session, warmup, calls, tool, arguments)
    timings.init_ms = init_ms
    return timings


async def run_relay(warmup: int, calls: int, tool: str, arguments: dict[str, JsonValue]) -> Timings:
    """Connect through the relay as the reference harness does, then time the calls."""
    command, args = RELAY
    started = time.perf_counter()
    async with stdio_client(StdioServerParameters(command=command, args=list(args))) as (read, write):
        return await session_timings(read, write, started, warmup, calls, tool, arguments)


async def run_direct(warmup: int, calls: int, tool: str, arguments: dict[str, JsonValue]) -> Timings:
    """Connect the SDK straight to the mounted socket (no relay process), then time the calls."""
    try:
        from runner.mcp.unix_client import unix_client
    except ImportError:  # in the container: the bench copies unix_client.py beside this file
        # the same module as above under its copied name, which exists only in the container: mypy has checked it
        # as runner.mcp.unix_client already
        from unix_client import unix_client  # type: ignore[import-not-found,no-redef]

    started = time.perf_counter()
    async with unix_client(SOCKET) as t:
        return await session_timings(t.read, t.write, started, warmup, calls, tool, arguments)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) not in (4, 5) or (len(args) == 5 and args[4] not in ("relay", "direct")):
        print("usage: bench_client.py WARMUP CALLS TOOL ARGUMENTS_JSON [relay|direct]", file=sys.stderr)
        return 2
    warmup, calls, tool, arguments = int(args[0]), int(args[1]), args[2], json.loads(args[3])
    path = run_direct if args[4:] == ["direct"] else run_relay
    timings = anyio.run(path, warmup, calls, tool, arguments)
    print(json.dumps(timings.to_json()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
