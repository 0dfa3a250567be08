"""The MCP encoding (§3.5 toMcpTool, §4.1 toCallToolResult), checked on the JSON the SDK server sends."""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types
import pytest
from mcp_types import methods

from runner.core.catalogue import resolve_catalogue
from runner.core.envelope import Envelope, ServerIdentity
from runner.core.latch import EscalationLatch
from runner.core.outcomes import ProtocolError, ToolCall, ToolResult
from runner.core.tools import PublishedTool
from runner.core.vocabulary import ESCALATION_FALLBACK_REASON, ESCALATION_NOTE, ResultStatus
from runner.core.world import build_world
from runner.mcp.encoding import to_call_tool_result, to_mcp_tool

HANDSHAKE_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
PENDING_TEXT = (
    '{"status":"denied","code":"escalation_pending",'
    '"message":"This turn ended by asking a human to decide; nothing further runs on it.","retryable":false}'
)
CALL = ToolCall("call-1", "files.read", {"path": ["Workspace", "policy.md"]})


def wire(result: types.CallToolResult, version: str = "2025-11-25") -> dict[str, Any]:
    """What the low-level server writes: the handler's dump, then the per-version surface sieve."""
    dumped = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    return methods.serialize_server_result("tools/call", version, dumped)


def published(output_schema: dict[str, Any] | None = None) -> PublishedTool:
    return PublishedTool(
        name="files.read",
        description="Read a file's text.",
        input_schema={"type": "object"},
        output_schema=output_schema,
        annotations={"readOnlyHint": True},
        namespace="files",
        source="shipped",
    )


OBJECT_SCHEMA = {"type": "object"}


# --- success ---------------------------------------------------------------------------------


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_success_string_is_text_unchanged_without_meta(version: str) -> None:
    body = wire(to_call_tool_result(ToolResult.ok(CALL, 'as is: {"a": 1}\n'), published()), version)
    assert body == {"content": [{"type": "text", "text": 'as is: {"a": 1}\n'}], "isError": False}


def test_success_object_is_compact_json_and_keeps_non_ascii() -> None:
    output = {"path": ["Workspace", "é.md"], "content": "ünïcode ✓", "n": [1, 2.5, None, True]}
    body = wire(to_call_tool_result(ToolResult.ok(CALL, output), published()))
    assert body["content"][0]["text"] == '{"path":["Workspace","é.md"],"content":"ünïcode ✓","n":[1,2.5,null,true]}'
    assert set(body) == {"content", "isError"}
    assert body["isError"] is False


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_structured_content_needs_an_output_schema_and_an_object(version: str) -> None:
    output = {"path": ["Workspace", "policy.md"], "content": "x"}
    with_schema = wire(to_call_tool_result(ToolResult.ok(CALL, output), published(OBJECT_SCHEMA)), version)
    assert with_schema == {
        "content": [{"type": "text", "text": '{"path":["Workspace","policy.md"],"content":"x"}'}],
        "structuredContent": output,
        "isError": False,
    }
    # no schema, or the output is not a JSON object: text only
    assert "structuredContent" not in wire(to_call_tool_result(ToolResult.ok(CALL, output), published()), version)
    assert "structuredContent" not in wire(to_call_tool_result(ToolResult.ok(CALL, output), None), version)
    for not_object in ([1, 2], None, "text", 3):
        body = wire(to_call_tool_result(ToolResult.ok(CALL, not_object), published(OBJECT_SCHEMA)), version)
        assert set(body) == {"content", "isError"}
    assert wire(to_call_tool_result(ToolResult.ok(CALL, None), None))["content"][0]["text"] == "null"


# --- refusals --------------------------------------------------------------------------------


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
def test_denied_body_key_order_and_meta(version: str) -> None:
    error = ProtocolError("no_matching_grant", "No grant covers write on files:Workspace/policy.md.")
    result = ToolResult.refused(CALL, ResultStatus.DENIED, error)
    body = wire(to_call_tool_result(result, published(OBJECT_SCHEMA)), version)
    assert body == {
        "content": [
            {
                "type": "text",
                "text": '{"status":"denied","code":"no_matching_grant",'
                '"message":"No grant covers write on files:Workspace/policy.md."}',
            }
        ],
        "isError": True,
        "_meta": {"sharedos/status": "denied", "sharedos/code": "no_matching_grant"},
    }


def test_failed_body_carries_retryable_last_when_defined() -> None:
    for retryable, tail in ((True, ',"retryable":true}'), (False, ',"retryable":false}'), (None, "}")):
        error = ProtocolError("tool_execution_failed", "The tool files.read failed. disk", retryable)
        result = ToolResult.refused(CALL, ResultStatus.FAILED, error)
        body = wire(to_call_tool_result(result, published()))
        prefix = '{"status":"failed","code":"tool_execution_failed","message":"The tool files.read failed. disk"'
        assert body["content"][0]["text"] == prefix + tail
        assert body["_meta"] == {"sharedos/status": "failed", "sharedos/code": "tool_execution_failed"}
        assert body["isError"] is True
        assert "structuredContent" not in body


def test_a_refusal_without_an_error_is_a_bug() -> None:
    with pytest.raises(ValueError):
        to_call_tool_result(ToolResult(CALL.call_id, CALL.tool, ResultStatus.DENIED), None)


# --- the latch's answers, through the real latch ---------------------------------------------


def _latch() -> tuple[Envelope, EscalationLatch]:
    env = Envelope(build_world(), "exec-1", ServerIdentity("runner.reference.mcp", "0.1.0"))
    return env, EscalationLatch(env, env.catalogue.names)


@pytest.mark.anyio
async def test_the_ask_and_the_pending_refusal_byte_for_byte() -> None:
    env, latch = _latch()
    ask = await latch.invoke_tool(ToolCall("c1", "sharedos.escalate", {"reason": "  Need the owner to approve  "}))
    body = wire(to_call_tool_result(ask, env.catalogue.get("sharedos.escalate")))
    note = json.dumps(ESCALATION_NOTE, ensure_ascii=False)
    assert body == {
        "content": [
            {"type": "text", "text": f'{{"escalated":true,"reason":"Need the owner to approve","note":{note}}}'}
        ],
        "isError": False,
    }
    later = await latch.invoke_tool(CALL)
    body = wire(to_call_tool_result(later, env.catalogue.get(CALL.tool)))
    assert body == {
        "content": [{"type": "text", "text": PENDING_TEXT}],
        "isError": True,
        "_meta": {"sharedos/status": "denied", "sharedos/code": "escalation_pending"},
    }


@pytest.mark.anyio
async def test_a_malformed_ask_answers_with_the_fallback_reason() -> None:
    _, latch = _latch()
    ask = await latch.invoke_tool(ToolCall("c1", "sharedos.escalate", {"reason": 42}))
    text = wire(to_call_tool_result(ask, None))["content"][0]["text"]
    assert json.loads(text) == {"escalated": True, "reason": ESCALATION_FALLBACK_REASON, "note": ESCALATION_NOTE}


# --- tool projection -------------------------------------------------------------------------


def test_tool_projection_keys_and_meta() -> None:
    tool = published(OBJECT_SCHEMA)
    body = to_mcp_tool(tool).model_dump(by_alias=True, mode="json", exclude_none=True)
    assert body == {
        "name": "files.read",
        "description": "Read a file's text.",
        "inputSchema": {"type": "object"},
        "outputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": True},
        "_meta": {"sharedos/namespace": "files", "sharedos/source": "shipped"},
    }
    without = to_mcp_tool(published()).model_dump(by_alias=True, mode="json", exclude_none=True)
    assert "outputSchema" not in without


def test_catalogue_projection_survives_the_list_sieve() -> None:
    catalogue = resolve_catalogue(build_world(), "exec-1")
    listing = types.ListToolsResult(tools=[to_mcp_tool(t) for t in catalogue.tools])
    dumped = listing.model_dump(by_alias=True, mode="json", exclude_none=True)
    tools = methods.serialize_server_result("tools/list", "2025-11-25", dumped)["tools"]
    assert [t["name"] for t in tools] == sorted(catalogue.names)
    by_name = {t["name"]: t for t in tools}
    for entry in catalogue.tools:
        sent = by_name[entry.name]
        assert set(sent) == {"name", "description", "inputSchema", "annotations", "_meta"}
        assert sent["inputSchema"] == entry.input_schema
        assert sent["annotations"] == entry.annotations
        assert sent["_meta"] == {"sharedos/namespace": entry.namespace, "sharedos/source": entry.source}
    assert by_name["files.read"]["annotations"] == {"readOnlyHint": True}
    assert by_name["files.delete"]["annotations"] == {"readOnlyHint": False, "destructiveHint": True}
