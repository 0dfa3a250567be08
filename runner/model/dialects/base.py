"""What every dialect module provides, and the shapes they render into."""

from __future__ import annotations

import json
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass, field

from runner.core.outcomes import JsonValue as JsonValue  # re-exported: the dialects' type of a body
from runner.model.names import ExposedTool
from runner.model.script import Reply, StallReply, TextReply, ToolCallReply
from runner.model.sse import SseEvent

OUTPUT_TOKENS = 10


@dataclass(frozen=True)
class RequestInfo:
    """What a dialect needs from the HTTP request besides its JSON body."""

    method: str
    path: str
    query: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class RenderContext:
    """Per-response facts: the model id to report, the step (for stable ids), a token estimate."""

    model: str
    step: int
    input_tokens: int = 0
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
    """A deterministic stand-in for a token count: a quarter of the body's JSON length."""
    return max(1, len(json.dumps(body, separators=(",", ":"), ensure_ascii=False)) // 4)


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
