"""What every dialect module provides, and the shapes they render into.

**Usage.** Every dialect reads the usage its answers carry (:meth:`Dialect.usage_reader`: fed the answer's JSON
payloads in order, each SSE event's data or the one JSON body) into one :class:`~runner.core.usage.Usage`, and the
scripted model reports usage in every answer as the vendor would, in the dialect's own fields, from
:meth:`Dialect.scripted_usage`: a deterministic stand-in for a tokenizer, a quarter of a byte count
(:func:`estimate_tokens`):

- ``input``: the request body's compact JSON length / 4 (at least 1);
- ``cached_input``: half of that on a request after the conversation's first (``step > 0``: a later request repeats
  the earlier one, which a vendor serves from its prompt cache), 0 on the first;
- ``output``: the answer's own length / 4 (at least 1): the text, or the call's name, namespace, preamble and
  arguments as compact JSON; plus ``reasoning``;
- ``reasoning``: the reasoning text the answer carries / 4 (only DeepSeek's thinking mode, in openai-chat), else 0.

So a CLI that prints its usage prints these, and runner's own count (read back from what was sent) equals them.
"""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field

from runner.core.outcomes import JsonValue as JsonValue  # re-exported: the dialects' type of a body
from runner.core.usage import Usage
from runner.model.names import ExposedTool
from runner.model.script import Reply, StallReply, TextReply, ToolCallReply
from runner.model.sse import SseEvent


@dataclass(frozen=True)
class RequestInfo:
    """What a dialect needs from the HTTP request besides its JSON body."""

    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RenderContext:
    """Per-response facts: the model id to report, the step (for stable ids), the usage to report
    (:meth:`Dialect.scripted_usage`)."""

    model: str
    step: int
    usage: Usage = field(default_factory=Usage)
    created: int = field(default_factory=lambda: int(time.time()))
    body: dict[str, JsonValue] = field(default_factory=dict)


@dataclass(frozen=True)
class Rendered:
    """A complete answer: SSE events (``events`` not None) or a JSON body."""

    status: int = 200
    events: list[SseEvent] | None = None
    body: JsonValue = None
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def stream(self) -> bool:
        return self.events is not None


def estimate_tokens(body: JsonValue) -> int:
    """A deterministic stand-in for a token count: a quarter of the body's compact JSON length, at least 1."""
    return max(1, len(json.dumps(body, separators=(",", ":"), ensure_ascii=False)) // 4)


def text_tokens(text: str) -> int:
    """The same stand-in for a text: a quarter of its length, at least 1."""
    return max(1, len(text) // 4)


def count_of(body: JsonValue, key: str) -> int | None:
    """``body[key]`` when it is a count (an int >= 0, not a bool), else None."""
    value = body.get(key) if isinstance(body, dict) else None
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


class UsageReader:
    """Reads one answer's usage from its JSON payloads, fed in the order they were sent.

    This one keeps the last usage any payload carries (``read`` turns one payload into a usage, or None): what
    OpenAI's two dialects and Gemini send, where a later report repeats and supersedes an earlier one. Anthropic
    spreads one usage over two events and has a reader of its own."""

    def __init__(self, read: Callable[[JsonValue], Usage | None]) -> None:
        self._read = read
        self.usage: Usage | None = None

    def feed(self, payload: JsonValue) -> None:
        found = self._read(payload)
        if found is not None:
            self.usage = found


def dumps(value: JsonValue) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


class Dialect(ABC):
    """One model API dialect: detect it, read a request, render an answer."""

    name: str

    # --- detection ----------------------------------------------------------------------------

    @abstractmethod
    def match_path(self, method: str, path: str) -> bool:
        """True when ``method path`` is one of this dialect's model endpoints (any path prefix)."""

    @abstractmethod
    def looks_like(self, body: JsonValue) -> bool:
        """Advisory: does a JSON body have this dialect's request shape (used for unknown paths)."""

    # --- reading a request --------------------------------------------------------------------

    @abstractmethod
    def count_tool_results(self, body: JsonValue) -> int:
        """Tool results already in the conversation: the scripted model's step."""

    @abstractmethod
    def exposed_tools(self, body: JsonValue) -> list[ExposedTool]:
        """Every tool the request lets the model call, as the CLI named it."""

    @abstractmethod
    def wants_stream(self, info: RequestInfo, body: JsonValue) -> bool:
        """Whether the client asked for SSE."""

    def model_name(self, info: RequestInfo, body: JsonValue, default: str) -> str:
        model = body.get("model") if isinstance(body, dict) else None
        return model if isinstance(model, str) and model else default

    def auxiliary(self, info: RequestInfo, body: JsonValue, model: str) -> Rendered | None:
        """An answer for a non-generation endpoint of this dialect (model list, token count), else None."""
        return None

    def generates(self, info: RequestInfo) -> bool:
        """Whether ``info`` asks the model to generate (an answer whose usage counts), not a model list or a
        token count."""
        return info.method == "POST"

    # --- usage --------------------------------------------------------------------------------

    @abstractmethod
    def usage_reader(self) -> UsageReader:
        """A fresh reader for one answer's usage (see :class:`UsageReader`)."""

    def usage_of(self, payloads: list[JsonValue]) -> Usage | None:
        """The usage an answer's payloads (in order) carry, or None."""
        reader = self.usage_reader()
        for payload in payloads:
            reader.feed(payload)
        return reader.usage

    def reasoning_tokens(self, body: JsonValue) -> int:
        """The reasoning the scripted answer to ``body`` carries, in tokens (0: none)."""
        return 0

    def scripted_usage(self, body: JsonValue, reply: Reply, step: int) -> Usage:
        """The usage the scripted model reports for ``reply`` to ``body`` (the rule in the module docstring)."""
        given = estimate_tokens(body)
        cached = given // 2 if step > 0 else 0
        if isinstance(reply, ToolCallReply):
            target = reply.target
            produced = estimate_tokens({"name": target.name, "namespace": target.namespace,
                                        "preamble": reply.preamble, "arguments": target.arguments})
        elif isinstance(reply, TextReply):
            produced = text_tokens(self.side_text(body, reply.text) if reply.side else reply.text)
        else:
            produced = 0
        reasoning = self.reasoning_tokens(body)
        return Usage(input=given, cached_input=cached, output=produced + reasoning, reasoning=reasoning)

    # --- rendering ----------------------------------------------------------------------------

    @abstractmethod
    def tool_call_events(self, reply: ToolCallReply, ctx: RenderContext) -> list[SseEvent]: ...

    @abstractmethod
    def tool_call_body(self, reply: ToolCallReply, ctx: RenderContext) -> JsonValue: ...

    @abstractmethod
    def text_events(self, text: str, ctx: RenderContext) -> list[SseEvent]: ...

    @abstractmethod
    def text_body(self, text: str, ctx: RenderContext) -> JsonValue: ...

    @abstractmethod
    def error_body(self, status: int, message: str) -> JsonValue: ...

    def side_text(self, body: JsonValue, text: str) -> str:
        """The text of a side answer (a dialect may need e.g. JSON for a JSON-mode request)."""
        return text

    def render(self, reply: Reply, ctx: RenderContext, *, stream: bool, info: RequestInfo) -> Rendered:
        if isinstance(reply, StallReply):  # pragma: no cover - the server stalls before rendering
            raise ValueError("a stall is not rendered")
        if isinstance(reply, ToolCallReply):
            if stream:
                return Rendered(events=self.tool_call_events(reply, ctx))
            return Rendered(body=self.tool_call_body(reply, ctx))
        assert isinstance(reply, TextReply)
        text = self.side_text(ctx.body, reply.text) if reply.side else reply.text
        if stream:
            return Rendered(events=self.text_events(text, ctx))
        return Rendered(body=self.text_body(text, ctx))


def as_dict(value: JsonValue) -> dict[str, JsonValue]:
    return value if isinstance(value, dict) else {}


def as_list(value: JsonValue) -> list[JsonValue]:
    return value if isinstance(value, list) else []
