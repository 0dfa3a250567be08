"""Hostile tool arguments over the real socket: escapes are refused with the right code, and nothing costs the server.

Paths are lists of segments resolved against the world's grants (:mod:`runner.core.world`): a
segment may not be ``.``/``..`` nor hold ``/``, ``\\`` or NUL (``invalid_tool_arguments``, decided
before any authority is consulted); a well-formed path outside every grant is ``no_matching_grant``;
naming another owner is ``invalid_request`` (ADR 0012). Oversized and deeply nested arguments are
refused in band, or by a JSON-RPC error for a line the server cannot take apart, or cost their own
session when the line is over :data:`MAX_MESSAGE_BYTES`; a fresh connection is served either way.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, suppress
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp import MCPError

from runner.core.tools import MAX_ARGUMENT_DEPTH
from runner.core.world import POLICY as POLICY_PATH
from runner.mcp.server import MAX_MESSAGE_BYTES
from tests.integration.test_mcp_faults import POLICY, POLICY_TEXT, Turn, body, link, served, until

# served(..., hold=0): the fault tests' SlowHost, holding nothing, in front of the real envelope

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

BOB = {"kind": "human", "userId": "user-bob"}
MALLORY = {"kind": "agent", "agentId": "agent-mallory"}  # the agent itself owns nothing
ALICE_ISH = {"kind": "human", "userId": "user-alice "}  # not the owner, whatever it looks like
SEED = {
    POLICY_PATH: POLICY_TEXT,
    ("Workspace", "scratch", "draft.md"): "draft\n",
    ("Workspace", "ledger", "entry.md"): "ledger entry\n",
}
MB = 1024 * 1024


async def still_serving(turn: Turn) -> None:
    """A fresh connection lists the whole catalogue and a call succeeds."""
    async with link(turn.handle.path) as fresh:
        with anyio.fail_after(5):
            listing = await fresh.session.list_tools()
            read = await fresh.session.call_tool("files.read", POLICY)
    assert len(listing.tools) == len(turn.env.catalogue.tools) == 17
    assert read.is_error is False and body(read)["content"] == POLICY_TEXT


def untouched(turn: Turn) -> None:
    state = turn.env.world.state
    assert state.files == SEED and state.messages == []


# --- escapes ------------------------------------------------------------------------------------

INVALID = ("failed", "invalid_tool_arguments")
NO_GRANT = ("denied", "no_matching_grant")
CROSSING = ("denied", "invalid_request")
WORKSPACE_POLICY = ["Workspace", "policy.md"]


def escape(
    name: str, tool: str, arguments: dict[str, Any], expected: tuple[str, str], resource: list[str] | None = None
) -> Any:
    """One attempt: the (status, code) it must get, and the resource the kernel decided on (None: refused before)."""
    return pytest.param(tool, arguments, expected, resource, id=name)


ESCAPES = [
    escape("dotdot", "files.read", {"path": ["Workspace", "..", "..", "etc", "passwd"]}, INVALID),
    escape("leading-dotdot", "files.read", {"path": ["..", "Vault", "secrets.md"]}, INVALID),
    escape("dot", "files.list", {"path": ["Workspace", "."]}, INVALID),
    escape("dotdot-write", "files.create", {"path": ["Workspace", "scratch", "..", "x"], "content": "x"}, INVALID),
    escape("absolute-segment", "files.read", {"path": ["/etc/passwd"]}, INVALID),
    escape("absolute-string", "files.read", {"path": "/etc/passwd"}, INVALID),
    escape("slash-in-segment", "files.read", {"path": ["Workspace/../Vault/secrets.md"]}, INVALID),
    escape("backslash", "files.read", {"path": ["Workspace", "..\\..\\Vault"]}, INVALID),
    escape("nul", "files.read", {"path": ["Workspace", "policy.md\x00.txt"]}, INVALID),
    escape("empty-path", "files.list", {"path": []}, INVALID),
    escape("outside-grants", "files.read", {"path": ["Vault", "secrets.md"]}, NO_GRANT, ["Vault", "secrets.md"]),
    escape("write-outside-scratch", "files.replace", {"path": WORKSPACE_POLICY, "content": "mine"}, NO_GRANT,
           WORKSPACE_POLICY),
    escape("other-owner", "files.fetch", {"path": WORKSPACE_POLICY, "owner": BOB}, CROSSING, WORKSPACE_POLICY),
    escape("agent-as-owner", "files.fetch", {"path": WORKSPACE_POLICY, "owner": MALLORY}, CROSSING, WORKSPACE_POLICY),
    escape("lookalike-owner", "files.fetch", {"path": WORKSPACE_POLICY, "owner": ALICE_ISH}, CROSSING,
           WORKSPACE_POLICY),
    escape("message-other", "messages.request", {"recipient": BOB, "payload": "hi"}, NO_GRANT, ["human", "user-bob"]),
    # encodings are not decoded: the segment names a (missing) file inside the workspace, nothing more
    escape("percent-encoded", "files.read", {"path": ["Workspace", "%2e%2e", "Vault", "secrets.md"]},
           ("failed", "tool_execution_failed"), ["Workspace", "%2e%2e", "Vault", "secrets.md"]),
]


@pytest.mark.parametrize(("tool", "arguments", "expected", "resource"), ESCAPES)
async def test_escapes_are_refused_with_the_right_code(
    tmp_path: Path, tool: str, arguments: dict[str, Any], expected: tuple[str, str], resource: list[str] | None
) -> None:
    async with served(tmp_path, hold=0) as turn, link(turn.handle.path) as client:
        with anyio.fail_after(5):
            result = await client.session.call_tool(tool, arguments)
            control = await client.session.call_tool("files.read", POLICY)  # the same session goes on
    refused = body(result)
    assert result.is_error is True and (refused["status"], refused["code"]) == expected
    assert result.meta == {"sharedos/status": expected[0], "sharedos/code": expected[1]}
    assert POLICY_TEXT not in json.dumps(refused)
    op = turn.env.operations[0]
    assert (op["tool"], op["outcome"], op["reasonCode"], op["source"]) == (tool, *expected, "kernel")
    if resource is not None:
        assert op["resource"]["path"] == resource
    elif expected == INVALID:
        assert "resource" not in op and "grantId" not in op, "refused before any authority was consulted"
    assert control.is_error is False and body(control)["content"] == POLICY_TEXT
    untouched(turn)


# --- oversized arguments ------------------------------------------------------------------------


def big(size: int) -> str:
    return "x" * size


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("files.read", {"path": ["Workspace", big(1 * MB)]}),
        ("files.create", {"path": ["Workspace", "scratch", "big.md"], "content": big(3 * MB)}),
        ("files.read", {"path": ["Workspace", big(MAX_MESSAGE_BYTES - 4096)]}),
    ],
    ids=["1MB-segment", "3MB-content", "just-under-the-line-bound"],
)
async def test_an_oversized_argument_under_the_line_bound_is_refused_in_band(
    tmp_path: Path, tool: str, arguments: dict[str, Any]
) -> None:
    async with served(tmp_path, hold=0) as turn, link(turn.handle.path) as client:
        with anyio.fail_after(10):
            result = await client.session.call_tool(tool, arguments)
            control = await client.session.call_tool("files.read", POLICY)
        refused = body(result)
        assert (refused["status"], refused["code"]) == INVALID
        assert len(refused["message"]) <= 4096, "the refusal does not echo megabytes back"
        op = turn.env.operations[0]
        assert (op["tool"], op["reasonCode"]) == (tool, "invalid_tool_arguments")
        assert control.is_error is False
        await still_serving(turn)
        untouched(turn)


@pytest.mark.parametrize("size", [MAX_MESSAGE_BYTES + 64 * 1024, 2 * MAX_MESSAGE_BYTES], ids=["just-over", "twice"])
async def test_an_argument_over_the_line_bound_costs_only_its_session(tmp_path: Path, size: int) -> None:
    async with served(tmp_path, hold=0) as turn, link(turn.handle.path) as bystander:
        async with link(turn.handle.path) as client:
            with anyio.fail_after(10), pytest.raises(MCPError):
                await client.session.call_tool("files.read", {"path": ["Workspace", big(size)]})
        await until(lambda: any(c["connection"] == 2 for c in turn.kinds("connection.closed")))
        closed = {c["connection"]: c["reason"] for c in turn.kinds("connection.closed")}
        assert closed == {2: "oversized"}
        assert [r["reason"] for r in turn.kinds("message.rejected")] == ["oversized"]
        assert turn.env.operations == [] and turn.handle.calls == 0, "it never reached the envelope"
        with anyio.fail_after(5):
            assert (await bystander.session.call_tool("files.read", POLICY)).is_error is False
        await still_serving(turn)
        untouched(turn)


# --- deeply nested arguments --------------------------------------------------------------------


def nested(kind: str, depth: int) -> Any:
    """``depth`` levels of arrays or objects, built without recursion."""
    value: Any = "x"
    for _ in range(depth):
        value = [value] if kind == "array" else {"a": value}
    return value


def nested_text(kind: str, depth: int) -> str:
    return "[" * depth + '"x"' + "]" * depth if kind == "array" else '{"a":' * depth + '"x"' + "}" * depth


@pytest.mark.parametrize("kind", ["array", "object"])
@pytest.mark.parametrize("depth", [MAX_ARGUMENT_DEPTH + 8, 150])
async def test_nesting_the_sdk_can_send_is_refused_in_band(tmp_path: Path, kind: str, depth: int) -> None:
    async with served(tmp_path, hold=0) as turn, link(turn.handle.path) as client:
        with anyio.fail_after(5):
            result = await client.session.call_tool("files.read", {"path": nested(kind, depth)})
            control = await client.session.call_tool("files.read", POLICY)
    refused = body(result)
    assert (refused["status"], refused["code"]) == INVALID
    assert f"deeper than {MAX_ARGUMENT_DEPTH} levels" in refused["message"]
    assert turn.env.operations[0]["reasonCode"] == "invalid_tool_arguments"
    assert control.is_error is False


class RawClient:
    """A bare connection that does the handshake by hand: no SDK client can even serialize these lines."""

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.reader = BufferedByteReceiveStream(stream)

    async def request(self, line: str) -> dict[str, Any]:
        await self.stream.send(line.encode() + b"\n")
        with anyio.fail_after(10):
            return json.loads(await self.reader.receive_until(b"\n", MAX_MESSAGE_BYTES))  # type: ignore[no-any-return]


@asynccontextmanager
async def raw_session(path: Path) -> AsyncIterator[RawClient]:
    async with await anyio.connect_unix(path) as stream:
        raw = RawClient(stream)
        hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}
        init = await raw.request(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": hello}))
        assert init["result"]["serverInfo"]["name"] == "sharedos"
        await stream.send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        yield raw
        with suppress(OSError):
            await stream.send_eof()


@pytest.mark.parametrize("kind", ["array", "object"])
@pytest.mark.parametrize("depth", [220, 1_000, 100_000])
async def test_nesting_too_deep_to_parse_is_answered_by_id_and_costs_nothing_else(
    tmp_path: Path, kind: str, depth: int
) -> None:
    """Past the parser's own limit (and Python's recursion limit) the request still gets an answer with its id."""
    line = '{"jsonrpc":"2.0","id":41,"method":"tools/call","params":{"name":"files.read","arguments":{"path":%s}}}'
    async with served(tmp_path, hold=0) as turn:
        async with raw_session(turn.handle.path) as raw:
            reply = await raw.request(line % nested_text(kind, depth))
            assert reply["id"] == 41 and reply["error"]["code"] == types.INVALID_REQUEST
            pong = await raw.request('{"jsonrpc":"2.0","id":42,"method":"ping"}')
            assert pong == {"jsonrpc": "2.0", "id": 42, "result": {}}, "the session goes on"
        assert turn.env.operations == [] and turn.handle.calls == 0
        assert len(turn.kinds("message.rejected")) == 1
        await still_serving(turn)
        untouched(turn)
