"""The model API dialects the vendor CLIs speak, one module each, and how a request finds its own."""

from __future__ import annotations

from runner.model.dialects.anthropic import DIALECT as ANTHROPIC
from runner.model.dialects.base import Dialect, RenderContext, Rendered, RequestInfo
from runner.model.dialects.gemini import DIALECT as GEMINI
from runner.model.dialects.openai_chat import DIALECT as OPENAI_CHAT
from runner.model.dialects.openai_responses import DIALECT as OPENAI_RESPONSES

DIALECTS: tuple[Dialect, ...] = (OPENAI_RESPONSES, OPENAI_CHAT, ANTHROPIC, GEMINI)
BY_NAME: dict[str, Dialect] = {d.name: d for d in DIALECTS}


def dialect_for(method: str, path: str) -> Dialect | None:
    """The dialect whose endpoint ``method path`` is (any prefix before the dialect's own suffix)."""
    for dialect in DIALECTS:
        if dialect.match_path(method, path):
            return dialect
    return None


def guess_dialect(body: object) -> Dialect | None:
    """Advisory, by the shape of a JSON body alone (for the log of a request to an unknown path)."""
    if isinstance(body, dict):
        for dialect in (GEMINI, OPENAI_RESPONSES, ANTHROPIC, OPENAI_CHAT):  # most specific shape first
            if dialect.looks_like(body):
                return dialect
    return None


__all__ = [
    "ANTHROPIC",
    "BY_NAME",
    "DIALECTS",
    "GEMINI",
    "OPENAI_CHAT",
    "OPENAI_RESPONSES",
    "Dialect",
    "RenderContext",
    "Rendered",
    "RequestInfo",
    "dialect_for",
    "guess_dialect",
]
