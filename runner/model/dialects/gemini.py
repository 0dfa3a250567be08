"""Gemini: ``POST {base}/v1beta/models/{model}:streamGenerateContent?alt=sse`` (+ ``:generateContent``,
``:countTokens``), what Gemini CLI speaks.

Evidence (``reference/vendor-clis.md``, Gemini CLI 0.61.0 with ``GOOGLE_GEMINI_BASE_URL`` pointing at a
scripted server, no path in the base URL):

- Request: ``POST /v1beta/models/<model>:streamGenerateContent?alt=sse`` with ``{contents: [{role,
  parts: [{text} | {functionCall} | {functionResponse}]}], tools: [{functionDeclarations: [...]}],
  systemInstruction, generationConfig}``. In ``-p`` mode only these were made (no next-speaker
  check, router or countTokens with that model name); the measured fake also answered
  ``:generateContent``, ``:countTokens`` and JSON-mode (``responseMimeType: application/json``) side
  calls, and so does this module (a JSON-mode side call gets the smallest object its
  ``responseJsonSchema``/``responseSchema`` accepts; see :func:`minimal_instance`).
- Tools are ``mcp_<server>_<tool>``; the MCP server receives the real names.
- Response: SSE ``data:`` lines (no ``event:``), each a ``GenerateContentResponse``:
  ``{"candidates": [{"content": {"role": "model", "parts": [{"functionCall": {"name", "args"}}]},
  "finishReason": "STOP"}], "usageMetadata": {...}}``. One chunk per answer was enough.
- Tool results come back as ``functionResponse`` parts (``response.output`` wrapped in
  ``<untrusted_context>``, or ``response.error`` for an MCP isError); the step counts them.

Without ``alt=sse`` the streaming method answers a JSON array of chunks, as the real API does.

Usage (the Gemini API's ``UsageMetadata``): ``promptTokenCount`` (the cached part included),
``cachedContentTokenCount``, ``candidatesTokenCount`` (the answer, without thoughts), ``thoughtsTokenCount``,
``toolUsePromptTokenCount`` and ``totalTokenCount``. Read as ``input`` = prompt + tool-use prompt, ``cached_input``
= cached content, ``output`` = candidates + thoughts, ``reasoning`` = thoughts. A stream repeats the metadata, the
last chunk's being the whole answer's; the reader keeps the last. The scripted model leaves
``cachedContentTokenCount`` and ``thoughtsTokenCount`` out when they are 0, as the API does.
"""

from __future__ import annotations

import re

from runner.core.usage import Usage
from runner.model.dialects.base import (
    Dialect,
    JsonValue,
    RenderContext,
    Rendered,
    RequestInfo,
    UsageReader,
    as_dict,
    as_list,
    count_of,
    dumps,
    estimate_tokens,
)
from runner.model.names import ExposedTool
from runner.model.script import Reply, ToolCallReply
from runner.model.sse import SseEvent

PATH = re.compile(r"(?:^|/)models/(?P<model>[^/:]+):(?P<method>streamGenerateContent|generateContent|countTokens)$")


def parse_path(path: str) -> tuple[str, str] | None:
    """``(model, method)`` of a Gemini model path, or None."""
    match = PATH.search(path)
    return (match["model"], match["method"]) if match else None


def minimal_instance(schema: JsonValue, depth: int = 0) -> JsonValue:
    """The smallest value a (JSON / OpenAPI-subset) schema accepts: required properties only, the
    first enum value, zero, false, empty string/list. Good enough for a side call's JSON answer."""
    schema = as_dict(schema)
    if depth > 8:
        return None
    if (enum := as_list(schema.get("enum"))):
        return enum[0]
    for key in ("anyOf", "oneOf"):
        if (options := as_list(schema.get(key))):
            return minimal_instance(options[0], depth + 1)
    kind = str(schema.get("type", "object" if "properties" in schema else "string")).lower()
    if kind == "object":
        properties = as_dict(schema.get("properties"))
        return {
            name: minimal_instance(properties.get(name), depth + 1)
            for name in as_list(schema.get("required"))
            if isinstance(name, str)  # a property's name: anything else is no schema a client sends
        }
    scalars: dict[str, JsonValue] = {"array": [], "integer": 0, "number": 0, "boolean": False, "null": None}
    return scalars.get(kind, "")


def read_usage(payload: JsonValue) -> Usage | None:
    """The ``usageMetadata`` of one ``GenerateContentResponse``, or None."""
    metadata = as_dict(payload).get("usageMetadata")
    prompt, candidates = count_of(metadata, "promptTokenCount"), count_of(metadata, "candidatesTokenCount")
    thoughts = count_of(metadata, "thoughtsTokenCount") or 0
    if prompt is None and candidates is None and not thoughts:
        return None
    tool_prompt = count_of(metadata, "toolUsePromptTokenCount") or 0
    return Usage(input=(prompt or 0) + tool_prompt, cached_input=count_of(metadata, "cachedContentTokenCount") or 0,
                 output=(candidates or 0) + thoughts, reasoning=thoughts)


class Gemini(Dialect):
    name = "gemini"

    def match_path(self, method: str, path: str) -> bool:
        return method == "POST" and parse_path(path) is not None

    def looks_like(self, body: JsonValue) -> bool:
        return isinstance(body, dict) and isinstance(body.get("contents"), list)

    def count_tool_results(self, body: JsonValue) -> int:
        return sum(
            1
            for content in as_list(as_dict(body).get("contents"))
            for part in as_list(as_dict(content).get("parts"))
            if isinstance(part, dict) and ("functionResponse" in part or "function_response" in part)
        )

    def exposed_tools(self, body: JsonValue) -> list[ExposedTool]:
        out: list[ExposedTool] = []
        for tool in as_list(as_dict(body).get("tools")):
            tool = as_dict(tool)
            for declaration in as_list(tool.get("functionDeclarations", tool.get("function_declarations"))):
                if isinstance(name := as_dict(declaration).get("name"), str):
                    out.append(ExposedTool(name))
        return out

    def wants_stream(self, info: RequestInfo, body: JsonValue) -> bool:
        parsed = parse_path(info.path)
        return parsed is not None and parsed[1] == "streamGenerateContent"

    def generates(self, info: RequestInfo) -> bool:
        parsed = parse_path(info.path)
        return info.method == "POST" and parsed is not None and parsed[1] != "countTokens"

    def usage_reader(self) -> UsageReader:
        return UsageReader(read_usage)

    def model_name(self, info: RequestInfo, body: JsonValue, default: str) -> str:
        parsed = parse_path(info.path)
        return parsed[0] if parsed else default

    def auxiliary(self, info: RequestInfo, body: JsonValue, model: str) -> Rendered | None:
        parsed = parse_path(info.path)
        if parsed and parsed[1] == "countTokens":
            return Rendered(body={"totalTokens": estimate_tokens(body)})
        return None

    def side_text(self, body: JsonValue, text: str) -> str:
        config = as_dict(as_dict(body).get("generationConfig"))
        if config.get("responseMimeType") == "application/json":
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
            return dumps(minimal_instance(schema) if schema else {})
        return text

    # --- rendering ----------------------------------------------------------------------------

    @staticmethod
    def _usage(usage: Usage) -> dict[str, JsonValue]:
        metadata: dict[str, JsonValue] = {"promptTokenCount": usage.input}
        if usage.cached_input:
            metadata["cachedContentTokenCount"] = usage.cached_input
        metadata["candidatesTokenCount"] = usage.output - usage.reasoning
        if usage.reasoning:
            metadata["thoughtsTokenCount"] = usage.reasoning
        metadata["totalTokenCount"] = usage.total
        return metadata

    def _chunk(self, parts: list[JsonValue], ctx: RenderContext) -> dict[str, JsonValue]:
        return {
            "candidates": [{"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}],
            "usageMetadata": self._usage(ctx.usage),
            "modelVersion": ctx.model,
            "responseId": f"runner-{ctx.step}",
        }

    @staticmethod
    def _call_parts(reply: ToolCallReply) -> list[JsonValue]:
        parts: list[JsonValue] = [{"text": reply.preamble}] if reply.preamble else []
        parts.append({"functionCall": {"name": reply.target.name, "args": reply.target.arguments}})
        return parts

    def tool_call_events(self, reply: ToolCallReply, ctx: RenderContext) -> list[SseEvent]:
        return [SseEvent.json(self._chunk(self._call_parts(reply), ctx))]

    def tool_call_body(self, reply: ToolCallReply, ctx: RenderContext) -> JsonValue:
        return self._chunk(self._call_parts(reply), ctx)

    def text_events(self, text: str, ctx: RenderContext) -> list[SseEvent]:
        return [SseEvent.json(self._chunk([{"text": text}], ctx))]

    def text_body(self, text: str, ctx: RenderContext) -> JsonValue:
        return self._chunk([{"text": text}], ctx)

    def render(self, reply: Reply, ctx: RenderContext, *, stream: bool, info: RequestInfo) -> Rendered:
        if stream and info.query.get("alt") != "sse":  # streaming without SSE: a JSON array of chunks
            rendered = super().render(reply, ctx, stream=False, info=info)
            return Rendered(status=rendered.status, body=[rendered.body])
        return super().render(reply, ctx, stream=stream, info=info)

    def error_body(self, status: int, message: str) -> JsonValue:
        kind = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                409: "ABORTED", 503: "UNAVAILABLE"}.get(
            status, "INTERNAL"
        )
        return {"error": {"code": status, "message": message, "status": kind}}


DIALECT = Gemini()
