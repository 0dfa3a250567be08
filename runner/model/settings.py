"""What a command can ask of the model endpoint, as typed values: the mode, the dialect, the fault.

Each is parsed once, at the command's edge (``runner exec``/``run``/``repro``, ``python -m runner.model``), and
carried down typed; nothing below parses it again. Standard library only: the command line's ``--help`` loads
this module, so it stays as cheap to import as an enum.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from enum import StrEnum


class ModelMode(StrEnum):
    NONE = "none"  # the column talks to no model (the reference harness plays its script): no endpoint is served
    SCRIPTED = "scripted"  # a deterministic model playing the turn's action list
    LIVE = "live"  # forwards to the vendor API with the host's credential
    REPLAY = "replay"  # serves a recorded exchange log back, stopping at the first divergence


class Dialect(StrEnum):
    """A model API dialect (the names a profile's ``model.dialect`` takes)."""

    OPENAI_RESPONSES = "openai-responses"
    OPENAI_CHAT = "openai-chat"
    ANTHROPIC_MESSAGES = "anthropic-messages"
    GEMINI = "gemini"

    @classmethod
    def parse(cls, text: str) -> Dialect:
        """``text`` (a dialect or an alias, as ``--model-dialect`` takes it); :class:`ValueError` naming the option
        and every name it takes."""
        name = DIALECT_ALIASES.get(text, text)
        try:
            return cls(name)
        except ValueError:
            known = ", ".join([*DIALECT_ALIASES, *(d.value for d in cls)])
            raise ValueError(f"unknown --model-dialect {text!r}: expected one of {known}") from None


DIALECT_ALIASES = {"anthropic": "anthropic-messages"}  # what --model-dialect also accepts

# ------------------------------------------------------------------------------------------------ faults

AFTER_ASK = "after-ask"
FAULT_OPTION = "--model-fault"
_SPEC = re.compile(r"^(?P<kind>[a-z-]+)(?:@(?P<step>[^@]*))?$")


class FaultKind(StrEnum):
    ERROR = "error"
    STALL = "stall"
    EARLY_CLOSE = "early-close"


class FaultSpecError(ValueError):
    """A fault that cannot be parsed; the message names the option and says what is expected."""


@dataclass(frozen=True)
class ModelFault:
    """``kind`` at conversation request ``step`` (1-based), or at the first request after the ask
    (:mod:`runner.model.faults` says what each kind does and how the requests are counted)."""

    kind: FaultKind
    step: int | None = 1  # None exactly when after_ask
    after_ask: bool = False
    asked: str | None = field(default=None, compare=False)  # as the command line spelt it (what messages quote)

    @property
    def shown(self) -> str:
        """The fault as the user asked for it, for messages (the canonical :attr:`spec` when built in code)."""
        return self.asked or self.spec

    @property
    def spec(self) -> str:
        """The canonical ``KIND@STEP`` text (what a repro command carries)."""
        return f"{self.kind.value}@{AFTER_ASK if self.after_ask else self.step}"

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind.value, "spec": self.spec,
                "at": AFTER_ASK if self.after_ask else f"request {self.step}"}

    @classmethod
    def parse(cls, text: str) -> ModelFault:
        kinds = ", ".join(k.value for k in FaultKind)
        match = _SPEC.match(text.strip())
        if match is None or match["kind"] not in {k.value for k in FaultKind}:
            raise FaultSpecError(f"{FAULT_OPTION} {text!r}: expected KIND[@STEP] with KIND one of {kinds}")
        kind, step = FaultKind(match["kind"]), match["step"]
        if step is None:
            return cls(kind, asked=text)
        if step == AFTER_ASK:
            return cls(kind, None, after_ask=True, asked=text)
        if not step.isascii() or not step.isdigit() or int(step) < 1:
            raise FaultSpecError(
                f"{FAULT_OPTION} {text!r}: STEP must be a request number from 1 or {AFTER_ASK}, not {step!r}"
            )
        return cls(kind, int(step), asked=text)
