#!/usr/bin/env python3
"""Reference harness client: a scripted stand-in for a vendor coding-agent CLI.

Runs inside the harness container as::

    /opt/venv/bin/python /opt/reference/client.py --script /run/runner/script.json \
        [--server-command socat --server-arg STDIO --server-arg UNIX-CONNECT:/run/runner/mcp.sock]

Standalone on purpose: only the standard library and the `mcp` SDK (2.x) are used,
never the `runner` package. Like a vendor CLI, it registers its MCP server as a stdio
server: it spawns the relay command and speaks MCP over the relay's stdin/stdout.

The script (JSON, written by the runner) is an already-expanded action list, executed
in order without improvisation::

    {"harness": "reference", "server": "sharedos", "actions": [
        {"do": "call", "tool": "files.read", "arguments": {"path": ["Workspace", "policy.md"]}},
        {"do": "say", "text": "..."},
        {"do": "flood", "bytes": 52428800},
        {"do": "exit", "code": 3},
        {"do": "hang"},
        {"do": "finish", "text": "final answer"}]}

Frames (JSON Lines on stdout, one compact object per line, flushed per line):

- ``{"type":"session.started","harness":"reference","version":...,"mcp_servers":[{"name":...,
  "status":"connected","tools":<count>,"protocol_version":...}]}``
- ``{"type":"session.started",...,"mcp_servers":[{"name":...,"status":"failed","error":...}]}``
  followed by ``{"type":"turn.failed","error":{"code":"mcp_unavailable","message":...}}``, exit 1
- ``{"type":"tool.call","seq":n,"name":...,"arguments":{...}}``
- ``{"type":"tool.result","seq":n,"name":...,"is_error":bool,"text":...}``, or for a JSON-RPC
  error response ``{"type":"tool.result","seq":n,"name":...,"is_error":true,
  "error":{"code":...,"message":...[,"data":...]}}``
- ``{"type":"message","text":...}``
- ``{"type":"turn.completed","text":...}`` (terminal, exit 0)
- ``{"type":"turn.failed","error":{"code":"reference_client_error","message":...}}`` (terminal, exit 1)

Everything else (diagnostics, the relay's own stderr) goes to stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import signal
import sys
import tempfile
import traceback
from collections.abc import Sequence
from contextlib import AsyncExitStack, suppress
from dataclasses import dataclass, field
from importlib import metadata
from typing import IO, Any, NoReturn, cast

import anyio
import mcp_types as types
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

HARNESS = "reference"
CLIENT_NAME = "reference-harness"
CLIENT_VERSION = "1.0"

DEFAULT_SERVER_NAME = "sharedos"
DEFAULT_SERVER_COMMAND = "socat"
DEFAULT_SERVER_ARGS = ("STDIO", "UNIX-CONNECT:/run/runner/mcp.sock")

CONNECT_ATTEMPTS = 3
"""How many times to try spawning the relay and completing initialize + tools/list."""
CONNECT_RETRY_DELAY = 0.5
"""Seconds between connection attempts (the socket may appear slightly late)."""
CONNECT_TIMEOUT = 15.0
"""Seconds one attempt may spend on initialize + tools/list once the relay is running.
A timed-out attempt is not retried."""

FLOOD_LINE = b"x" * 1023 + b"\n"
FLOOD_CHUNK = FLOOD_LINE * 1024  # 1 MiB per write

EXIT_OK = 0
EXIT_FAILED = 1

ERROR_MCP_UNAVAILABLE = "mcp_unavailable"
ERROR_CLIENT = "reference_client_error"

ACTION_KINDS = frozenset({"call", "say", "flood", "exit", "hang", "finish"})

log = logging.getLogger("reference-harness")


def mcp_version() -> str:
    try:
        return metadata.version("mcp")
    except metadata.PackageNotFoundError:
        return "unknown"


def version_line() -> str:
    return f"{CLIENT_NAME} {CLIENT_VERSION} (mcp {mcp_version()})"


# --------------------------------------------------------------------------- frames


def _stdout() -> IO[bytes]:
    return sys.stdout.buffer


def emit(frame: dict[str, Any]) -> None:
    """Write one frame as a compact JSON line and flush it."""
    line = json.dumps(frame, separators=(",", ":"), ensure_ascii=True) + "\n"
    out = _stdout()
    out.write(line.encode("ascii"))
    out.flush()


def flush_all() -> None:
    for stream in (sys.stdout, sys.stderr):
        with suppress(OSError, ValueError):
            stream.flush()


def turn_failed(code: str, message: str) -> dict[str, Any]:
    return {"type": "turn.failed", "error": {"code": code, "message": message}}


# --------------------------------------------------------------------------- script


class ScriptError(Exception):
    """The script file is missing, unreadable or malformed."""


@dataclass(frozen=True)
class Script:
    server: str
    actions: list[dict[str, Any]]


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _check_action(index: int, action: object) -> dict[str, Any]:
    where = f"actions[{index}]"
    if not isinstance(action, dict):
        raise ScriptError(f"{where} is not an object")
    act = cast(dict[str, Any], action)
    kind = act.get("do")
    if kind not in ACTION_KINDS:
        raise ScriptError(f"{where}: unknown action {kind!r} (expected one of {sorted(ACTION_KINDS)})")
    if kind == "call":
        if not isinstance(act.get("tool"), str):
            raise ScriptError(f"{where}: call needs a string 'tool'")
        if "arguments" in act and not isinstance(act["arguments"], dict):
            raise ScriptError(f"{where}: call 'arguments' must be an object when present")
    elif kind in ("say", "finish"):
        if not isinstance(act.get("text"), str):
            raise ScriptError(f"{where}: {kind} needs a string 'text'")
    elif kind == "flood":
        if not _is_int(act.get("bytes")) or act["bytes"] < 0:
            raise ScriptError(f"{where}: flood needs a non-negative integer 'bytes'")
    elif kind == "exit" and (not _is_int(act.get("code")) or not 0 <= act["code"] <= 255):
        raise ScriptError(f"{where}: exit needs an integer 'code' in 0..255")
    return act


def load_script(path: str) -> Script:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except OSError as exc:
        raise ScriptError(f"cannot read script {path}: {exc}") from exc
    except ValueError as exc:
        raise ScriptError(f"script {path} is not valid JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ScriptError("script is not a JSON object")
    # "harness" names the profile that wrote the script (a copy of the reference profile under
    # another id plays the same script), so it is informational only
    server = data.get("server", DEFAULT_SERVER_NAME)
    if not isinstance(server, str) or not server:
        raise ScriptError("script 'server' must be a non-empty string")
    actions = data.get("actions")
    if not isinstance(actions, list):
        raise ScriptError("script 'actions' must be a list")
    return Script(server=server, actions=[_check_action(i, a) for i, a in enumerate(actions)])


# --------------------------------------------------------------------------- connection


class ConnectError(Exception):
    """The MCP server could not be reached or did not complete initialize + tools/list."""


@dataclass
class Connection:
    stack: AsyncExitStack
    session: ClientSession
    protocol_version: str
    tool_count: int


@dataclass(frozen=True)
class RelaySpec:
    command: str
    args: list[str] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        return " ".join([self.command, *self.args])


def _drain(relay_stderr: IO[str]) -> str:
    """Return what the relay wrote to stderr so far and copy it to our stderr."""
    try:
        relay_stderr.flush()
        relay_stderr.seek(0)
        text = relay_stderr.read()
        relay_stderr.seek(0)
        relay_stderr.truncate()
    except (OSError, ValueError):
        return ""
    if text:
        sys.stderr.write(text if text.endswith("\n") else text + "\n")
        sys.stderr.flush()
    return text


def _drain_into(relay_stderr: IO[str], sink: list[str]) -> None:
    sink.append(_drain(relay_stderr))


def _describe_failure(exc: BaseException, relay: RelaySpec, relay_text: str) -> str:
    if isinstance(exc, TimeoutError):
        what = f"no initialize/tools/list answer within {CONNECT_TIMEOUT:g} s"
    elif isinstance(exc, MCPError) and exc.code == types.CONNECTION_CLOSED:
        what = "the relay closed the connection before initialize completed"
    elif isinstance(exc, MCPError):
        what = f"JSON-RPC error {exc.code}: {exc.message}"
    elif isinstance(exc, OSError):
        what = f"cannot start the relay: {exc}"
    else:
        what = f"{type(exc).__name__}: {exc}"
    lines = [line.strip() for line in relay_text.splitlines() if line.strip()]
    detail = f" (relay stderr: {lines[-1]})" if lines else ""
    return f"{what}; relay `{relay.describe()}`{detail}"


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


async def _unwind(stack: AsyncExitStack, exc: BaseException) -> Exception:
    """Close a failed attempt's contexts as `async with` would; return the error to report.

    Passing the exception in matters: a cancellation delivered by a crashed task of the
    transport or session is turned back into that task's error by its task group.
    Genuine outside cancellations and KeyboardInterrupt are re-raised.
    """
    error: BaseException = exc
    try:
        await stack.__aexit__(type(exc), exc, exc.__traceback__)
    except BaseException as close_exc:
        # Task groups wrap what they re-raise in an ExceptionGroup; report a leaf,
        # preferring the original error when it is among them.
        leaves = _leaves(close_exc)
        if exc not in leaves:
            error = next((leaf for leaf in leaves if isinstance(leaf, Exception)), close_exc)
            log.warning("closing the failed attempt raised %s: %s", type(close_exc).__name__, close_exc)
    if not isinstance(error, Exception):
        raise error
    return error


async def connect(relay: RelaySpec) -> Connection:
    """Spawn the relay, initialize and list tools, retrying a bounded number of times."""
    params = StdioServerParameters(command=relay.command, args=list(relay.args), env=dict(relay.env))
    client_info = types.Implementation(name=CLIENT_NAME, version=CLIENT_VERSION)
    last_error = "no connection attempt was made"
    for attempt in range(1, CONNECT_ATTEMPTS + 1):
        stack = AsyncExitStack()
        # The relay's stderr is captured (and copied to ours once the relay is stopped)
        # so a failed attempt can say why in words. LIFO: drained after the transport
        # closes, before the file does. Without a writable temp dir it goes straight to
        # our stderr instead.
        relay_stderr: IO[str] = sys.stderr
        relay_text: list[str] = []
        try:
            relay_stderr = stack.enter_context(
                tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace")  # noqa: SIM115 - owned by the stack
            )
            stack.callback(_drain_into, relay_stderr, relay_text)
        except OSError as exc:
            log.warning("cannot capture the relay's stderr (%s); passing it through", exc)
        try:
            # The transport and session contexts are entered outside the timeout scope:
            # their task groups must outlive it.
            read_stream, write_stream = await stack.enter_async_context(
                stdio_client(params, errlog=cast(Any, relay_stderr))
            )
            session = await stack.enter_async_context(ClientSession(read_stream, write_stream, client_info=client_info))
            with anyio.fail_after(CONNECT_TIMEOUT):
                init = await session.initialize()
                listing = await session.list_tools()
        except BaseException as exc:
            error = await _unwind(stack, exc)
            last_error = _describe_failure(error, relay, "".join(relay_text))
            log.warning("MCP connection attempt %d/%d failed: %s", attempt, CONNECT_ATTEMPTS, last_error)
            if isinstance(error, TimeoutError):
                break  # the server is there but silent: retrying would only multiply the wait
            if attempt < CONNECT_ATTEMPTS:
                await anyio.sleep(CONNECT_RETRY_DELAY)
            continue
        return Connection(
            stack=stack,
            session=session,
            protocol_version=init.protocol_version,
            tool_count=len(listing.tools),
        )
    raise ConnectError(last_error)


# --------------------------------------------------------------------------- actions


def flood(size: int) -> None:
    """Write `size` bytes of non-JSON junk lines (1023 'x' + newline, last one shorter)."""
    out = _stdout()
    sys.stdout.flush()
    full_lines, rest = divmod(size, len(FLOOD_LINE))
    chunks, lines = divmod(full_lines, len(FLOOD_CHUNK) // len(FLOOD_LINE))
    for _ in range(chunks):
        out.write(FLOOD_CHUNK)
    if lines:
        out.write(FLOOD_LINE * lines)
    if rest:
        out.write(b"x" * (rest - 1) + b"\n")
    out.flush()


def exit_now(code: int) -> NoReturn:
    """Exit immediately with `code`: no terminal frame, no session shutdown."""
    flush_all()
    os._exit(code)


def hang() -> NoReturn:
    """Ignore polite signals and block forever, without spinning, until SIGKILL.

    Blocks the event-loop thread itself, so nothing the relay or the session's
    background tasks do (EOF, errors, the relay exiting) can wake or end the process.
    The relay runs in its own session (the SDK spawns it with start_new_session), so
    signals sent to our process group do not reach it either.
    """
    flush_all()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, signal.SIG_IGN)
    while True:
        signal.pause()


def _result_frame(seq: int, name: str, result: types.CallToolResult) -> dict[str, Any]:
    text = ""
    if result.content and isinstance(result.content[0], types.TextContent):
        text = result.content[0].text
    return {"type": "tool.result", "seq": seq, "name": name, "is_error": bool(result.is_error), "text": text}


def _error_frame(seq: int, name: str, exc: MCPError) -> dict[str, Any]:
    error: dict[str, Any] = {"code": exc.code, "message": exc.message}
    if exc.data is not None:
        error["data"] = exc.data
    return {"type": "tool.result", "seq": seq, "name": name, "is_error": True, "error": error}


async def run_actions(session: ClientSession, actions: Sequence[dict[str, Any]]) -> str | None:
    """Execute the actions in order; return the finish text, or None if they ran out."""
    seq = 0
    for action in actions:
        kind = action["do"]
        if kind == "call":
            seq += 1
            name: str = action["tool"]
            arguments: dict[str, Any] | None = action.get("arguments")
            emit({"type": "tool.call", "seq": seq, "name": name, "arguments": arguments})
            try:
                result = await session.call_tool(name, arguments)
            except MCPError as exc:
                emit(_error_frame(seq, name, exc))
            else:
                emit(_result_frame(seq, name, result))
        elif kind == "say":
            emit({"type": "message", "text": action["text"]})
        elif kind == "flood":
            flood(action["bytes"])
        elif kind == "exit":
            exit_now(action["code"])
        elif kind == "hang":
            hang()
        elif kind == "finish":
            return cast(str, action["text"])
        else:  # load_script rejects unknown kinds; keep the invariant loud
            raise AssertionError(f"unhandled action {kind!r}")
    return None


# --------------------------------------------------------------------------- main


async def run(script: Script, relay: RelaySpec) -> int:
    version = version_line()
    try:
        conn = await connect(relay)
    except ConnectError as exc:
        message = f"MCP server {script.server!r} is unavailable: {exc}"
        emit(
            {
                "type": "session.started",
                "harness": HARNESS,
                "version": version,
                "mcp_servers": [{"name": script.server, "status": "failed", "error": str(exc)}],
            }
        )
        emit(turn_failed(ERROR_MCP_UNAVAILABLE, message))
        return EXIT_FAILED

    emit(
        {
            "type": "session.started",
            "harness": HARNESS,
            "version": version,
            "mcp_servers": [
                {
                    "name": script.server,
                    "status": "connected",
                    "tools": conn.tool_count,
                    "protocol_version": conn.protocol_version,
                }
            ],
        }
    )

    failure: BaseException | None = None
    ran_out = False
    final_text: str | None = None
    try:
        async with conn.stack:
            try:
                final_text = await run_actions(conn.session, script.actions)
                ran_out = final_text is None
            except Exception as exc:
                failure = exc
                log.error("reference client failed:\n%s", "".join(traceback.format_exception(exc)))
    except Exception as exc:
        # Closing the session failed (or a session task crashed and cancelled the
        # script). After a completed script this is only logged.
        log.error("closing the MCP session failed:\n%s", "".join(traceback.format_exception(exc)))
        if failure is None and final_text is None and not ran_out:
            failure = exc

    if failure is not None:
        emit(turn_failed(ERROR_CLIENT, f"{type(failure).__name__}: {failure}"))
        return EXIT_FAILED
    if final_text is not None:
        emit({"type": "turn.completed", "text": final_text})
    return EXIT_OK


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="client.py",
        description="Reference harness: replay a runner script against an MCP server reached over stdio.",
    )
    parser.add_argument("--version", action="store_true", help="print the version line and exit")
    parser.add_argument("--script", help="path of the action script (JSON)")
    parser.add_argument(
        "--server-command",
        help=f"relay command to spawn as the stdio MCP server (default: {DEFAULT_SERVER_COMMAND})",
    )
    parser.add_argument(
        "--server-arg",
        action="append",
        dest="server_args",
        metavar="ARG",
        help="argument for the relay command, repeatable "
        f"(default when --server-command is not given: {' '.join(DEFAULT_SERVER_ARGS)})",
    )
    parser.add_argument(
        "--server-env",
        action="append",
        dest="server_env",
        default=[],
        metavar="KEY=VALUE",
        help="extra environment variable for the relay, repeatable",
    )
    args = parser.parse_args(argv)
    if not args.version and not args.script:
        parser.error("--script is required")
    for item in args.server_env:
        if "=" not in item:
            parser.error(f"--server-env expects KEY=VALUE, got {item!r}")
    return args


def relay_from_args(args: argparse.Namespace) -> RelaySpec:
    command: str = args.server_command or DEFAULT_SERVER_COMMAND
    server_args: list[str] | None = args.server_args
    if server_args is None:
        server_args = list(DEFAULT_SERVER_ARGS) if args.server_command is None else []
    env = dict(item.split("=", 1) for item in args.server_env)
    return RelaySpec(command=command, args=server_args, env=env)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.version:
        print(version_line(), flush=True)
        return EXIT_OK
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s")
    try:
        script = load_script(args.script)
        return anyio.run(run, script, relay_from_args(args))
    except ScriptError as exc:
        log.error("%s", exc)
        message = f"invalid script: {exc}"
    except Exception as exc:
        log.error("reference client crashed:\n%s", "".join(traceback.format_exception(exc)))
        message = f"{type(exc).__name__}: {exc}"
    try:
        emit(turn_failed(ERROR_CLIENT, message))
    except (OSError, ValueError) as exc:
        log.error("cannot write the turn.failed frame: %s", exc)
    return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
