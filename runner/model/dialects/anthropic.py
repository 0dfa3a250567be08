"""Anthropic Messages: ``POST {base}/v1/messages?beta=true``, what Claude Code speaks.

Evidence (``reference/vendor-clis.md``, Claude Code 2.1.328 against a scripted server):

- ``ANTHROPIC_BASE_URL`` has no ``/v1``; the CLI appends ``/v1/messages?beta=true``. With
  ``CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1`` nothing else is called (no count_tokens, no
  ``/models``); without it a ``HEAD {base}/api/hello`` preconnect also arrives (answered 200 by
  the server, outside any dialect). ``count_tokens`` is answered anyway. Auth is ``x-api-key``.
- Body: ``model, max_tokens, stream: true, thinking, context_management, output_config, metadata,
  system[], tools[], messages[]``; ``messages[]`` holds a ``role: "system"`` entry after the first
  user message, which this module tolerates (it reads only ``content`` blocks).
- Tools are flat ``mcp__<server>__<tool>`` (with ``ENABLE_TOOL_SEARCH=false``; otherwise they are
  ``defer_loading`` placeholders behind ToolSearch, which this module does not count as exposed).
- The SSE it needs: ``message_start`` -> ``content_block_start`` (``tool_use`` with ``input: {}``,
  or ``text`` with ``text: ""``) -> ``content_block_delta`` (``input_json_delta`` /
  ``text_delta``) -> ``content_block_stop`` -> ``message_delta`` (``stop_reason`` ``tool_use`` |
  ``end_turn``, ``usage.output_tokens``) -> ``message_stop``, each with its ``event:`` line.
- Tool results come back as ``tool_result`` blocks in user messages (``is_error`` kept); the step
  counts ``tool_result`` blocks.

Usage (Anthropic's Messages API reference, "Streaming Messages"): ``usage`` on the message (the JSON body, or
``message_start``'s ``message``) holds ``input_tokens`` (the input *after* the last cache breakpoint, so without
the cache), ``cache_creation_input_tokens``, ``cache_read_input_tokens`` and ``output_tokens``; ``message_delta``'s
``usage`` holds the counts again, cumulative, at least ``output_tokens`` (newer answers repeat the input counts
too). :class:`AnthropicUsage` keeps the latest value of each field and reads ``input`` as the sum of the three
input counts, ``cached_input`` as the cache read; no reasoning split is given (thinking is output). The scripted
model reports ``input_tokens`` less the cached part, the cached part as ``cache_read_input_tokens``, and the output
in ``message_delta`` (``message_start`` says 1, as the API does before any content).
"""

from __future__ import annotations

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
from runner.model.script import ToolCallReply
from runner.model.sse import SseEvent

USAGE_KEYS = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens", "output_tokens")


class AnthropicUsage(UsageReader):
    """One message's usage from its body, or from ``message_start`` and ``message_delta``: each field's latest
    value wins (``message_delta``'s counts are cumulative)."""

    def __init__(self) -> None:
        super().__init__(lambda _payload: None)
        self.fields: dict[str, int] = {}

    def feed(self, payload: JsonValue) -> None:
        body = as_dict(payload)
        kind = body.get("type")
        if kind == "message_start":
            reported = as_dict(body.get("message")).get("usage")
        elif kind in ("message_delta", "message"):
            reported = body.get("usage")
        else:
            return
        if not isinstance(reported, dict):
            return
        for key in USAGE_KEYS:
            if (value := count_of(reported, key)) is not None:
                self.fields[key] = value
        if "input_tokens" in self.fields or "output_tokens" in self.fields:
            got = self.fields.get
            cached = got("cache_read_input_tokens", 0)
            self.usage = Usage(input=got("input_tokens", 0) + got("cache_creation_input_tokens", 0) + cached,
                               cached_input=cached, output=got("output_tokens", 0))


class AnthropicMessages(Dialect):
    name = "anthropic-messages"

    def match_path(self, method: str, path: str) -> bool:
        path = path.rstrip("/")
        return method == "POST" and (path.endswith("/messages") or path.endswith("/messages/count_tokens"))

    def looks_like(self, body: JsonValue) -> bool:
        """Messages without OpenAI-only features (``role: tool`` messages, ``{"function": ...}`` tools)."""
        if not isinstance(body, dict) or not isinstance(messages := body.get("messages"), list):
            return False
        if any(as_dict(m).get("role") == "tool" for m in messages):
            return False
        return not any(isinstance(t, dict) and "function" in t for t in as_list(body.get("tools")))

    def count_tool_results(self, body: JsonValue) -> int:
        return sum(
            1
            for message in as_list(as_dict(body).get("messages"))
            for block in as_list(as_dict(message).get("content"))
            if isinstance(block, dict) and block.get("type") == "tool_result"
        )

    def exposed_tools(self, body: JsonValue) -> list[ExposedTool]:
        return [
            ExposedTool(name)
            for tool in as_list(as_dict(body).get("tools"))
            if isinstance(tool, dict)
            and isinstance(name := tool.get("name"), str)
            and tool.get("defer_loading") is not True
        ]

    def wants_stream(self, info: RequestInfo, body: JsonValue) -> bool:
        return as_dict(body).get("stream") is True

    def generates(self, info: RequestInfo) -> bool:
        return info.method == "POST" and not info.path.rstrip("/").endswith("/count_tokens")

    def usage_reader(self) -> UsageReader:
        return AnthropicUsage()

    def auxiliary(self, info: RequestInfo, body: JsonValue, model: str) -> Rendered | None:
        if info.path.rstrip("/").endswith("/count_tokens"):
            return Rendered(body={"input_tokens": estimate_tokens(body)})
        return None

    # --- rendering ----------------------------------------------------------------------------

    def _message(self, ctx: RenderContext, content: list[JsonValue], stop_reason: str | None) -> dict[str, JsonValue]:
        return {
            "id": f"msg_runner_{ctx.step}", "type": "message", "role": "assistant", "model": ctx.model,
            "content": content, "stop_reason": stop_reason, "stop_sequence": None,
            "usage": {
                "input_tokens": ctx.usage.input - ctx.usage.cached_input,
                "output_tokens": ctx.usage.output if stop_reason else 1,
                "cache_creation_input_tokens": 0,
                "cache_read_input_tokens": ctx.usage.cached_input,
            },
        }

    @staticmethod
    def _tool_use(reply: ToolCallReply, *, streaming: bool) -> dict[str, JsonValue]:
        return {"type": "tool_use", "id": f"toolu_runner_{reply.step}", "name": reply.target.name,
                "input": {} if streaming else reply.target.arguments}

    def _events(self, ctx: RenderContext, text: str | None, reply: ToolCallReply | None) -> list[SseEvent]:
        events: list[SseEvent] = []

        def emit(kind: str, **fields: JsonValue) -> None:
            events.append(SseEvent.json({"type": kind, **fields}, kind))

        emit("message_start", message=self._message(ctx, [], None))
        index = 0
        if text is not None:
            emit("content_block_start", index=index, content_block={"type": "text", "text": ""})
            emit("content_block_delta", index=index, delta={"type": "text_delta", "text": text})
            emit("content_block_stop", index=index)
            index += 1
        if reply is not None:
            emit("content_block_start", index=index, content_block=self._tool_use(reply, streaming=True))
            emit("content_block_delta", index=index,
                 delta={"type": "input_json_delta", "partial_json": dumps(reply.target.arguments)})
            emit("content_block_stop", index=index)
        stop_reason = "tool_use" if reply is not None else "end_turn"
        emit("message_delta", delta={"stop_reason": stop_reason, "stop_sequence": None},
             usage={"output_tokens": ctx.usage.output})
        emit("message_stop")
        return events

    def tool_call_events(self, reply: ToolCallReply, ctx: RenderContext) -> list[SseEvent]:
        return self._events(ctx, reply.preamble or None, reply)

    def tool_call_body(self, reply: ToolCallReply, ctx: RenderContext) -> JsonValue:
        content: list[JsonValue] = [{"type": "text", "text": reply.preamble}] if reply.preamble else []
        content.append(self._tool_use(reply, streaming=False))
        return self._message(ctx, content, "tool_use")

    def text_events(self, text: str, ctx: RenderContext) -> list[SseEvent]:
        return self._events(ctx, text, None)

    def text_body(self, text: str, ctx: RenderContext) -> JsonValue:
        return self._message(ctx, [{"type": "text", "text": text}], "end_turn")

    def error_body(self, status: int, message: str) -> JsonValue:
        kind = {401: "authentication_error", 403: "permission_error", 404: "not_found_error",
                503: "overloaded_error"}.get(
            status, "invalid_request_error" if status < 500 else "api_error"
        )
        return {"type": "error", "error": {"type": kind, "message": message}}


DIALECT = AnthropicMessages()
