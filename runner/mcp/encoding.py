"""The MCP encoding of the catalogue and of tool results (upstream §3.5 ``toMcpTool``, §4.1 ``toCallToolResult``).

Pure functions, no I/O. A refusal (``denied``/``failed``) is a *result* with ``isError: true`` and
``_meta``, never a JSON-RPC error (§8 item 1).
"""

from __future__ import annotations

import json

import mcp_types as types

from runner.core.outcomes import JsonValue, ToolResult
from runner.core.tools import PublishedTool
from runner.core.vocabulary import ResultStatus

STATUS_META = "sharedos/status"
CODE_META = "sharedos/code"
NAMESPACE_META = "sharedos/namespace"
SOURCE_META = "sharedos/source"
CATALOG_HASH_META = "sharedos/catalogHash"
EXECUTION_ID_META = "sharedos/executionId"


def compact_json(value: JsonValue) -> str:
    """``JSON.stringify(value)``: compact separators, non-ASCII kept as is."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def render_text(output: JsonValue) -> str:
    """``renderText``: a string output unchanged, anything else as compact JSON."""
    return output if isinstance(output, str) else compact_json(output)


def refusal_body(result: ToolResult) -> dict[str, JsonValue]:
    """``{status, code, message, retryable?}`` in exactly that key order."""
    if result.error is None:
        raise ValueError(f"a {result.status.value} result carries no error")
    body: dict[str, JsonValue] = {
        "status": result.status.value,
        "code": result.error.code,
        "message": result.error.message,
    }
    if result.error.retryable is not None:
        body["retryable"] = result.error.retryable
    return body


def to_call_tool_result(result: ToolResult, published: PublishedTool | None) -> types.CallToolResult:
    """``toCallToolResult``: the wire answer to one ``tools/call``."""
    if result.status is ResultStatus.SUCCEEDED:
        output = result.output
        structured = published is not None and published.output_schema is not None and isinstance(output, dict)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=render_text(output))],
            structured_content=output if structured else None,
            is_error=False,
        )
    body = refusal_body(result)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=compact_json(body))],
        is_error=True,
        _meta={STATUS_META: body["status"], CODE_META: body["code"]},
    )


def to_mcp_tool(published: PublishedTool) -> types.Tool:
    """``toMcpTool``: name, description, schemas, annotations and the SharedOS ``_meta``."""
    return types.Tool(
        name=published.name,
        description=published.description,
        input_schema=published.input_schema,
        output_schema=published.output_schema,
        annotations=types.ToolAnnotations.model_validate(published.annotations),
        _meta={NAMESPACE_META: published.namespace, SOURCE_META: published.source},
    )
