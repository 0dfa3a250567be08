"""Tokens a model answer used, and their totals over a turn. Pure.

Every dialect reports usage in fields of its own (``runner.model.dialects``: each dialect's module says which);
they all come down to one :class:`Usage`, whose four counts mean the same whatever the dialect:

- ``input``: every token of the request the vendor counted, **cached ones included** (Anthropic reports
  ``input_tokens`` without the cache; its ``cache_read_input_tokens`` and ``cache_creation_input_tokens`` are added
  here; Gemini's ``toolUsePromptTokenCount`` is input too);
- ``cached_input``: the part of ``input`` served from the vendor's prompt cache (so ``cached_input <= input``);
  an Anthropic cache *write* is not a cached read and is counted as plain input;
- ``output``: every token the model produced, **reasoning included** (Gemini reports ``thoughtsTokenCount`` apart
  from ``candidatesTokenCount``; they are added here);
- ``reasoning``: the part of ``output`` spent on reasoning, where the dialect says (OpenAI's ``reasoning_tokens``,
  Gemini's ``thoughtsTokenCount``); 0 where it does not (Anthropic counts thinking as output without a split).

So a price per token kind applies to ``input - cached_input``, ``cached_input``, ``output - reasoning`` and
``reasoning`` (``runner.conformance.prices``), and two usages add field by field.

:class:`UsageTotals` is a turn's (or a cell's, a harness's) sum, split by what each request was: a **conversation**
request carried the catalogue's tools (the CLI's own turn), a **side** request did not (a title, a summary, a
memory extraction, a sub-agent without our tools; ``runner.model.names.carries_server_tools`` tells them apart). It
also counts the answers that reported no usage at all, so a total is never read as complete when it is not.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from runner.core.outcomes import JsonValue

USAGE_FIELDS = ("input", "cachedInput", "output", "reasoning")  # the JSON keys of a Usage, in their written order


@dataclass(frozen=True)
class Usage:
    """The tokens of one answer (or a sum of answers); see the module docstring for what each count includes."""

    input: int = 0
    cached_input: int = 0
    output: int = 0
    reasoning: int = 0

    def __post_init__(self) -> None:
        for name in ("input", "cached_input", "output", "reasoning"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"usage {name} must be a count (an int >= 0), got {value!r}")

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        return Usage(self.input + other.input, self.cached_input + other.cached_input,
                     self.output + other.output, self.reasoning + other.reasoning)

    @property
    def total(self) -> int:
        """Input plus output: every token the answer was billed for."""
        return self.input + self.output

    def to_json(self) -> dict[str, JsonValue]:
        return {"input": self.input, "cachedInput": self.cached_input, "output": self.output,
                "reasoning": self.reasoning}

    @classmethod
    def from_json(cls, body: Mapping[str, JsonValue]) -> Usage:
        """A usage as :meth:`to_json` writes it; a missing key reads as 0, anything but a count is a ValueError."""
        counts: dict[str, int] = {}
        for key, name in zip(USAGE_FIELDS, ("input", "cached_input", "output", "reasoning"), strict=True):
            value = body.get(key, 0)
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"usage {key} must be a count, got {value!r}")
            counts[name] = value
        return cls(**counts)


@dataclass(frozen=True)
class UsageTotals:
    """A sum of answers' usage, split into conversation and side requests.

    ``answers``: model answers counted (each a generation request answered 2xx); ``unreported``: those of them that
    carried no usage (their tokens are in no total, so a total with ``unreported > 0`` is a lower bound)."""

    conversation: Usage = field(default_factory=Usage)
    side: Usage = field(default_factory=Usage)
    answers: int = 0
    unreported: int = 0

    @property
    def total(self) -> Usage:
        return self.conversation + self.side

    @property
    def complete(self) -> bool:
        """Whether every answer counted reported its usage."""
        return self.unreported == 0

    def with_answer(self, usage: Usage | None, *, side: bool) -> UsageTotals:
        """These totals and one more answer (``usage`` None: it reported none)."""
        if usage is None:
            return UsageTotals(self.conversation, self.side, self.answers + 1, self.unreported + 1)
        if side:
            return UsageTotals(self.conversation, self.side + usage, self.answers + 1, self.unreported)
        return UsageTotals(self.conversation + usage, self.side, self.answers + 1, self.unreported)

    def __add__(self, other: UsageTotals) -> UsageTotals:
        if not isinstance(other, UsageTotals):
            return NotImplemented
        return UsageTotals(self.conversation + other.conversation, self.side + other.side,
                           self.answers + other.answers, self.unreported + other.unreported)

    def to_json(self) -> dict[str, JsonValue]:
        return {"total": self.total.to_json(), "conversation": self.conversation.to_json(),
                "side": self.side.to_json(), "answers": self.answers, "unreported": self.unreported}

    @classmethod
    def from_json(cls, body: Mapping[str, JsonValue]) -> UsageTotals:
        """Totals as :meth:`to_json` writes them (``total`` is derived, and not read back)."""
        conversation, side = body.get("conversation") or {}, body.get("side") or {}
        answers, unreported = body.get("answers", 0), body.get("unreported", 0)
        if not isinstance(conversation, Mapping) or not isinstance(side, Mapping):
            raise ValueError("usage totals: conversation and side must be objects")
        if any(isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in (answers, unreported)):
            raise ValueError("usage totals: answers and unreported must be counts")
        assert isinstance(answers, int) and isinstance(unreported, int)
        return cls(Usage.from_json(conversation), Usage.from_json(side), answers, unreported)


def sum_usage(usages: Iterable[Usage]) -> Usage:
    """The sum of ``usages`` (an empty sum is all zeros)."""
    total = Usage()
    for usage in usages:
        total = total + usage
    return total
