"""OpenAI Responses: ``POST {base}/responses``, the only dialect Codex speaks.

Evidence (``reference/vendor-clis.md``, Codex 0.169.0 against a scripted server):

- Codex calls only ``POST {base_url}/responses`` (``base_url`` ends in ``/v1``), ``stream: true``,
  ``Accept: text/event-stream``; one POST per model step, nothing else (no ``/models``, no websocket).
  Auth is ``Authorization: Bearer <env_key>``.
- MCP tools arrive as ONE tool ``{"type": "namespace", "name": "mcp__sharedos", "tools": [{"type":
  "function", "name": "echo", ...}]}`` (with an unknown model slug; a known slug defers them behind
  ``tool_search``, which this server does not implement).
- A call must be a ``response.output_item.done`` whose item is a ``function_call`` carrying BOTH
  ``name`` (the bare tool name) and ``namespace`` (``mcp__sharedos``), ``arguments`` as a JSON
  string; a flat ``mcp__sharedos__echo`` without namespace is answered "unsupported call". The
  stream ends with ``response.completed`` carrying ``usage``. The fuller event sequence the real API
  sends (``response.created``, ``output_item.added``, ``output_text.delta``, ...) also works, and is
  what this module emits.
- Final text: a ``message`` item with ``output_text`` content; the turn ends at a response with no
  ``function_call``.
- Tool results come back as ``{"type": "function_call_output", "call_id": ..., "output": ...}`` input
  items after the echoed ``function_call``; the measured fake counted input items whose ``type``
  ends in ``_output``, and so does :meth:`OpenAIResponses.count_tool_results`.

Usage (OpenAI's Responses reference): the response's ``usage`` holds ``input_tokens`` (cached ones included),
``input_tokens_details.cached_tokens``, ``output_tokens`` (reasoning included) and
``output_tokens_details.reasoning_tokens``; streamed, it arrives on the response that ``response.completed`` (or
``response.incomplete`` / ``response.failed``) carries, and is null on the earlier ones. The reader keeps the last
non-null one.
"""

from __future__ import annotations

from runner.core.usage import Usage
from runner.model.dialects.base import (
    Dialect,
    JsonValue,
    RenderContext,
    RequestInfo,
    UsageReader,
    as_dict,
    as_list,
    count_of,
    dumps,
)
from runner.model.names import ExposedTool
from runner.model.script import ToolCallReply
from runner.model.sse import SseEvent


def read_usage(payload: JsonValue) -> Usage | None:
    """The ``usage`` of a response body, or of the response a stream event carries; None when absent or null."""
    body = as_dict(payload)
    response = as_dict(body.get("response")) if "response" in body else body
    usage = response.get("usage")
    given, produced = count_of(usage, "input_tokens"), count_of(usage, "output_tokens")
    if given is None and produced is None:
        return None
    cached = count_of(as_dict(usage).get("input_tokens_details"), "cached_tokens")
    reasoning = count_of(as_dict(usage).get("output_tokens_details"), "reasoning_tokens")
    return Usage(input=given or 0, cached_input=cached or 0, output=produced or 0, reasoning=reasoning or 0)


class OpenAIResponses(Dialect):
    name = "openai-responses"

    def match_path(self, method: str, path: str) -> bool:
        return method == "POST" and (path.rstrip("/").endswith("/responses") or path.rstrip("/") == "responses")

    def looks_like(self, body: JsonValue) -> bool:
        return isinstance(body, dict) and "input" in body and "messages" not in body and "contents" not in body

    def count_tool_results(self, body: JsonValue) -> int:
        return sum(
            1
            for item in as_list(as_dict(body).get("input"))
            if isinstance(item, dict) and str(item.get("type", "")).endswith("_output")
        )

    def exposed_tools(self, body: JsonValue) -> list[ExposedTool]:
        out: list[ExposedTool] = []
        for tool in as_list(as_dict(body).get("tools")):
            if not isinstance(tool, dict):
                continue
            name = tool.get("name")
            if tool.get("type") == "namespace" and isinstance(name, str):
                for inner in as_list(tool.get("tools")):
                    if isinstance(inner, dict) and isinstance(inner_name := inner.get("name"), str):
                        out.append(ExposedTool(inner_name, name))
            elif isinstance(name, str):
                out.append(ExposedTool(name))
        return out

    def wants_stream(self, info: RequestInfo, body: JsonValue) -> bool:
        return as_dict(body).get("stream") is True

    def usage_reader(self) -> UsageReader:
        return UsageReader(read_usage)

    # --- rendering ----------------------------------------------------------------------------

    def _response(self, ctx: RenderContext, status: str, output: list[JsonValue]) -> dict[str, JsonValue]:
        body: dict[str, JsonValue] = {
            "id": f"resp_runner_{ctx.step}",
            "object": "response",
            "created_at": ctx.created,
            "status": status,
            "model": ctx.model,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "usage": None,
        }
        if status == "completed":
            usage = ctx.usage
            body["usage"] = {
                "input_tokens": usage.input,
                "input_tokens_details": {"cached_tokens": usage.cached_input},
                "output_tokens": usage.output,
                "output_tokens_details": {"reasoning_tokens": usage.reasoning},
                "total_tokens": usage.total,
            }
        return body

    @staticmethod
    def _message(text: str, item_id: str, status: str = "completed") -> dict[str, JsonValue]:
        content: list[JsonValue] = (
            [{"type": "output_text", "text": text, "annotations": []}] if status == "completed" else []
        )
        return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": content}

    @staticmethod
    def _function_call(reply: ToolCallReply, status: str = "completed") -> dict[str, JsonValue]:
        item: dict[str, JsonValue] = {
            "type": "function_call",
            "id": f"fc_runner_{reply.step}",
            "call_id": reply.call_id,
            "name": reply.target.name,
            "arguments": dumps(reply.target.arguments) if status == "completed" else "",
            "status": status,
        }
        if reply.target.namespace is not None:
            item["namespace"] = reply.target.namespace
        return item

    def _items(self, reply: ToolCallReply | None, text: str | None, ctx: RenderContext) -> list[JsonValue]:
        items: list[JsonValue] = []
        if text is not None:
            items.append(self._message(text, f"msg_runner_{ctx.step}"))
        if reply is not None:
            items.append(self._function_call(reply))
        return items

    def _events(self, reply: ToolCallReply | None, text: str | None, ctx: RenderContext) -> list[SseEvent]:
        events: list[SseEvent] = []

        def emit(kind: str, **fields: JsonValue) -> None:
            events.append(SseEvent.json({"type": kind, "sequence_number": len(events), **fields}, kind))

        emit("response.created", response=self._response(ctx, "in_progress", []))
        emit("response.in_progress", response=self._response(ctx, "in_progress", []))
        done: list[JsonValue] = []
        if text is not None:
            index, item_id = len(done), f"msg_runner_{ctx.step}"
            part: dict[str, JsonValue] = {"type": "output_text", "text": text, "annotations": []}
            emit("response.output_item.added", output_index=index, item=self._message(text, item_id, "in_progress"))
            emit("response.content_part.added", item_id=item_id, output_index=index, content_index=0,
                 part={**part, "text": ""})
            emit("response.output_text.delta", item_id=item_id, output_index=index, content_index=0, delta=text)
            emit("response.output_text.done", item_id=item_id, output_index=index, content_index=0, text=text)
            emit("response.content_part.done", item_id=item_id, output_index=index, content_index=0, part=part)
            item = self._message(text, item_id)
            emit("response.output_item.done", output_index=index, item=item)
            done.append(item)
        if reply is not None:
            index = len(done)
            item = self._function_call(reply)
            arguments = item["arguments"]
            emit("response.output_item.added", output_index=index, item=self._function_call(reply, "in_progress"))
            emit("response.function_call_arguments.delta", item_id=item["id"], output_index=index, delta=arguments)
            emit("response.function_call_arguments.done", item_id=item["id"], output_index=index,
                 arguments=arguments)
            emit("response.output_item.done", output_index=index, item=item)
            done.append(item)
        emit("response.completed", response=self._response(ctx, "completed", done))
        return events

    def tool_call_events(self, reply: ToolCallReply, ctx: RenderContext) -> list[SseEvent]:
        return self._events(reply, reply.preamble or None, ctx)

    def tool_call_body(self, reply: ToolCallReply, ctx: RenderContext) -> JsonValue:
        return self._response(ctx, "completed", self._items(reply, reply.preamble or None, ctx))

    def text_events(self, text: str, ctx: RenderContext) -> list[SseEvent]:
        return self._events(None, text, ctx)

    def text_body(self, text: str, ctx: RenderContext) -> JsonValue:
        return self._response(ctx, "completed", self._items(None, text, ctx))

    def error_body(self, status: int, message: str) -> JsonValue:
        kind = "server_error" if status >= 500 else "invalid_request_error"  # the types the real API sends
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}


DIALECT = OpenAIResponses()
