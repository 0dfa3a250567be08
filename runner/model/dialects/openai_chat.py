"""OpenAI Chat Completions: ``POST {base}/chat/completions`` (+ ``GET {base}/models``).

Evidence (``reference/vendor-clis.md``; Pi 0.73.1 + pi-mcp-adapter, Qwen Code 0.24.4, opencode 1.18.33,
all against a scripted server whose base URL ended in ``/v1``):

- All three POST ``/v1/chat/completions`` with ``stream: true``; Qwen also sends
  ``stream_options.include_usage`` and ``max_tokens``. The measured fake also answered
  non-streaming requests and ``GET /v1/models``; so does this module.
- Tools are ``tools[] = {"type": "function", "function": {"name": ...}}``. Names seen:
  opencode ``<server>_<tool>`` (plus ``list_mcp_resources`` & co.); Pi with ``directTools``
  ``<server>_<tool>``, by default only the gateway ``mcp`` (arguments ``{tool, args}``, where
  ``tool`` is ``<server>_<tool>``) next to ``mcp__<server>`` and ``mcpScript``; Qwen by default only
  the proxies ``tool_search`` / ``tool_call`` (arguments ``{name: "mcp__<server>__<tool>",
  arguments}``), with ``alwaysLoadTools`` also ``mcp__<server>__<tool>`` directly.
- Tool results come back as ``role: "tool"`` messages (Pi prefixes ``Error: `` to an isError
  result, Qwen sends a long "MCP tool ... reported tool error" text, opencode the plain text); the
  step counts them (and legacy ``role: "function"`` messages).
- opencode's first request is a title generator with no tools, Qwen adds a memory-extraction
  request unless turned off: both are side requests here.

DeepSeek's ``dsh`` 0.1.0-rc.8 (``runner/harnesses/deepseek``, measured here) speaks the same dialect with
DeepSeek's extensions: every request is streamed (``stream: true``, ``stream_options.include_usage``; its
adapter has no non-streamed path), the turn's requests carry ``thinking: {"type": "enabled"}``,
``reasoning_effort: "high"`` and ``max_tokens: 256000``, and a parallel session-title request carries
``thinking: {"type": "disabled"}``, ``max_tokens: 64`` and no tools (a side request here, answered with
text). DeepSeek's API streams a thinking model's reasoning as ``delta.reasoning_content`` before the
answer, and its clients send it back as ``reasoning_content`` on the assistant message of later
requests; so a request that enables thinking is answered with one short ``reasoning_content`` delta
first (:data:`REASONING_TEXT`), which dsh keeps as a ``reasoning`` block and returns (measured).

The SSE stream is the standard one: ``chat.completion.chunk`` objects as bare ``data:`` lines (no
``event:`` lines), the tool call's name first with empty arguments and then the arguments (the
way the real API streams them), a chunk with ``finish_reason`` (``tool_calls`` | ``stop``), a
usage chunk with empty ``choices`` when ``stream_options.include_usage`` is set, and
``data: [DONE]``.

Usage (OpenAI's Chat Completions reference): ``usage`` holds ``prompt_tokens`` (cached ones included),
``completion_tokens`` (reasoning included), ``prompt_tokens_details.cached_tokens`` and
``completion_tokens_details.reasoning_tokens``; DeepSeek reports its cache hits as ``prompt_cache_hit_tokens``
instead, read when ``cached_tokens`` is absent. Streamed, OpenAI sends it only when asked
(``stream_options.include_usage``), in a last chunk with empty ``choices``; DeepSeek's API puts it on the chunk that
carries ``finish_reason`` whether asked or not. The scripted model does as OpenAI when asked and as DeepSeek when
not, so every answer reports its usage; the reader keeps the last ``usage`` object any chunk carries.
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
    text_tokens,
)
from runner.model.names import ExposedTool
from runner.model.script import ToolCallReply
from runner.model.sse import SseEvent

ANTHROPIC_BLOCKS = frozenset({"tool_use", "tool_result", "thinking", "redacted_thinking"})
REASONING_TEXT = "The scripted model follows the case's script."


def read_usage(payload: JsonValue) -> Usage | None:
    """The ``usage`` of a completion or a chunk, or None (absent, null, or without its two counts)."""
    usage = as_dict(payload).get("usage")
    prompt, completion = count_of(usage, "prompt_tokens"), count_of(usage, "completion_tokens")
    if prompt is None and completion is None:
        return None
    cached = count_of(as_dict(usage).get("prompt_tokens_details"), "cached_tokens")
    if cached is None:
        cached = count_of(usage, "prompt_cache_hit_tokens")  # DeepSeek
    reasoning = count_of(as_dict(usage).get("completion_tokens_details"), "reasoning_tokens")
    return Usage(input=prompt or 0, cached_input=cached or 0, output=completion or 0, reasoning=reasoning or 0)


class OpenAIChat(Dialect):
    name = "openai-chat"

    def match_path(self, method: str, path: str) -> bool:
        path = path.rstrip("/")
        if method == "POST":
            return path.endswith("/chat/completions") or path == "chat/completions"
        return method == "GET" and (path.endswith("/v1/models") or path in ("/models", "models"))

    def looks_like(self, body: JsonValue) -> bool:
        """Messages without Anthropic-only features (top-level ``system``, content blocks such as
        ``tool_use``/``tool_result``, flat ``{"name", "input_schema"}`` tools)."""
        if not isinstance(body, dict) or not isinstance(messages := body.get("messages"), list):
            return False
        if "system" in body or "anthropic_version" in body:
            return False
        if any(isinstance(t, dict) and "input_schema" in t for t in as_list(body.get("tools"))):
            return False
        return not any(
            isinstance(block, dict) and block.get("type") in ANTHROPIC_BLOCKS
            for message in messages
            for block in as_list(as_dict(message).get("content"))
        )

    def count_tool_results(self, body: JsonValue) -> int:
        return sum(
            1
            for message in as_list(as_dict(body).get("messages"))
            if isinstance(message, dict) and message.get("role") in ("tool", "function")
        )

    def exposed_tools(self, body: JsonValue) -> list[ExposedTool]:
        out: list[ExposedTool] = []
        for tool in as_list(as_dict(body).get("tools")):
            if isinstance(name := as_dict(as_dict(tool).get("function")).get("name"), str):
                out.append(ExposedTool(name))
        for function in as_list(as_dict(body).get("functions")):  # the legacy form
            if isinstance(name := as_dict(function).get("name"), str):
                out.append(ExposedTool(name))
        return out

    def wants_stream(self, info: RequestInfo, body: JsonValue) -> bool:
        return as_dict(body).get("stream") is True

    def usage_reader(self) -> UsageReader:
        return UsageReader(read_usage)

    def reasoning_tokens(self, body: JsonValue) -> int:
        return text_tokens(REASONING_TEXT) if self.thinking(body) else 0

    def auxiliary(self, info: RequestInfo, body: JsonValue, model: str) -> Rendered | None:
        if info.method == "GET":
            return Rendered(body={"object": "list", "data": [
                {"id": model, "object": "model", "created": 0, "owned_by": "runner"},
            ]})
        return None

    # --- rendering ----------------------------------------------------------------------------

    @staticmethod
    def _usage(ctx: RenderContext) -> dict[str, JsonValue]:
        usage = ctx.usage
        return {
            "prompt_tokens": usage.input,
            "completion_tokens": usage.output,
            "total_tokens": usage.total,
            "prompt_tokens_details": {"cached_tokens": usage.cached_input},
            "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
        }

    @staticmethod
    def _include_usage(ctx: RenderContext) -> bool:
        return as_dict(ctx.body.get("stream_options")).get("include_usage") is True

    @staticmethod
    def thinking(body: JsonValue) -> bool:
        """DeepSeek's thinking mode: ``thinking: {"type": "enabled"}`` in the request."""
        return as_dict(as_dict(body).get("thinking")).get("type") == "enabled"

    def _chunks(self, deltas: list[dict[str, JsonValue]], finish: str, ctx: RenderContext) -> list[SseEvent]:
        base: dict[str, JsonValue] = {"id": f"chatcmpl-runner-{ctx.step}", "object": "chat.completion.chunk",
                                      "created": ctx.created, "model": ctx.model}
        if self.thinking(ctx.body):
            deltas = [{"role": "assistant", "content": None, "reasoning_content": REASONING_TEXT}, *deltas]
        events = [
            SseEvent.json({**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]})
            for delta in deltas
        ]
        last: dict[str, JsonValue] = {**base, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
        if not self._include_usage(ctx):
            last["usage"] = self._usage(ctx)  # DeepSeek's way: on the finishing chunk, asked or not
        events.append(SseEvent.json(last))
        if self._include_usage(ctx):
            events.append(SseEvent.json({**base, "choices": [], "usage": self._usage(ctx)}))
        events.append(SseEvent("[DONE]"))
        return events

    def tool_call_events(self, reply: ToolCallReply, ctx: RenderContext) -> list[SseEvent]:
        opening: dict[str, JsonValue] = {"index": 0, "id": reply.call_id, "type": "function",
                   "function": {"name": reply.target.name, "arguments": ""}}
        deltas: list[dict[str, JsonValue]] = []
        if reply.preamble:
            deltas += [{"role": "assistant", "content": reply.preamble}, {"tool_calls": [opening]}]
        else:
            deltas.append({"role": "assistant", "content": None, "tool_calls": [opening]})
        deltas.append({"tool_calls": [{"index": 0, "function": {"arguments": dumps(reply.target.arguments)}}]})
        return self._chunks(deltas, "tool_calls", ctx)

    def tool_call_body(self, reply: ToolCallReply, ctx: RenderContext) -> JsonValue:
        call: dict[str, JsonValue] = {"id": reply.call_id, "type": "function",
                "function": {"name": reply.target.name, "arguments": dumps(reply.target.arguments)}}
        message: dict[str, JsonValue] = {"role": "assistant", "content": reply.preamble or None, "tool_calls": [call]}
        return self._completion(message, "tool_calls", ctx)

    def text_events(self, text: str, ctx: RenderContext) -> list[SseEvent]:
        return self._chunks([{"role": "assistant", "content": ""}, {"content": text}], "stop", ctx)

    def text_body(self, text: str, ctx: RenderContext) -> JsonValue:
        return self._completion({"role": "assistant", "content": text}, "stop", ctx)

    def _completion(self, message: dict[str, JsonValue], finish: str, ctx: RenderContext) -> dict[str, JsonValue]:
        if self.thinking(ctx.body):
            message = {**message, "reasoning_content": REASONING_TEXT}
        return {
            "id": f"chatcmpl-runner-{ctx.step}", "object": "chat.completion", "created": ctx.created,
            "model": ctx.model, "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": self._usage(ctx),
        }

    def error_body(self, status: int, message: str) -> JsonValue:
        kind = "server_error" if status >= 500 else "invalid_request_error"  # the types the real API sends
        return {"error": {"message": message, "type": kind, "param": None, "code": None}}


DIALECT = OpenAIChat()
