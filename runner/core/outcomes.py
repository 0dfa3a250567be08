"""Outcomes and results (upstream §2): what a runtime returns and what the envelope makes of it.

All types are plain frozen dataclasses with ``to_json`` so records and CLI output share one shape.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

from runner.core.vocabulary import Code, ExecutionStatus, OutcomeType, ResultStatus

# A JSON value, exactly: what json.loads returns and json.dumps takes. Code that reads one narrows it (isinstance)
# before it indexes it.
JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"
ERROR_MESSAGE_LIMIT = 4096  # a ProtocolError's message is 1..4096 characters (§2.1)


@dataclass(frozen=True)
class ProtocolError:
    """``{code, message, retryable?, details?}`` (§2.1)."""

    code: str
    message: str
    retryable: bool | None = None
    details: dict[str, JsonValue] | None = None

    def __post_init__(self) -> None:
        if not 1 <= len(self.code.strip()) <= 256:
            raise ValueError(f"error code must be 1..256 characters, got {self.code!r}")
        if not 1 <= len(self.message) <= ERROR_MESSAGE_LIMIT:
            raise ValueError("error message must be 1..4096 characters")

    @classmethod
    def of(cls, code: Code | str, message: str, retryable: bool | None = None) -> ProtocolError:
        return cls(code=str(code), message=message[:ERROR_MESSAGE_LIMIT] or str(code), retryable=retryable)

    def to_json(self) -> dict[str, JsonValue]:
        body: dict[str, JsonValue] = {"code": self.code, "message": self.message}
        if self.retryable is not None:
            body["retryable"] = self.retryable
        if self.details is not None:
            body["details"] = self.details
        return body


# --- runtime outcome: complete | fail | escalate ------------------------------------------------


@dataclass(frozen=True)
class Complete:
    output: JsonValue
    metadata: dict[str, JsonValue] = field(default_factory=dict)
    type: OutcomeType = OutcomeType.COMPLETE

    def to_json(self) -> dict[str, JsonValue]:
        return {"type": self.type.value, "output": self.output, "metadata": self.metadata}


@dataclass(frozen=True)
class Fail:
    error: ProtocolError
    metadata: dict[str, JsonValue] = field(default_factory=dict)
    type: OutcomeType = OutcomeType.FAIL

    def to_json(self) -> dict[str, JsonValue]:
        return {"type": self.type.value, "error": self.error.to_json(), "metadata": self.metadata}


@dataclass(frozen=True)
class Escalate:
    reason: str
    metadata: dict[str, JsonValue] = field(default_factory=dict)
    type: OutcomeType = OutcomeType.ESCALATE

    def __post_init__(self) -> None:
        units = len(self.reason.encode("utf-16-le")) // 2
        if not self.reason.strip() or units > 512:
            raise ValueError("an escalation reason is non-blank and at most 512 UTF-16 code units")

    def to_json(self) -> dict[str, JsonValue]:
        return {"type": self.type.value, "reason": self.reason, "metadata": self.metadata}


RuntimeOutcome: TypeAlias = Complete | Fail | Escalate


def with_metadata(outcome: RuntimeOutcome, metadata: dict[str, JsonValue]) -> RuntimeOutcome:
    """The same outcome with its metadata replaced."""
    if isinstance(outcome, Complete):
        return Complete(outcome.output, metadata)
    if isinstance(outcome, Fail):
        return Fail(outcome.error, metadata)
    return Escalate(outcome.reason, metadata)


# --- tool results ----------------------------------------------------------------------------


@dataclass(frozen=True)
class ToolCall:
    """One call as the envelope sees it. ``tool`` is deliberately not narrowed (§7)."""

    call_id: str
    tool: str
    arguments: JsonValue
    alias: str | None = None


@dataclass(frozen=True)
class ToolResult:
    """``succeeded`` with an output, or ``denied``/``failed`` with an error (§4.2)."""

    call_id: str
    tool: str
    status: ResultStatus
    output: JsonValue = None
    error: ProtocolError | None = None

    @classmethod
    def ok(cls, call: ToolCall, output: JsonValue) -> ToolResult:
        return cls(call.call_id, call.tool, ResultStatus.SUCCEEDED, output=output)

    @classmethod
    def refused(cls, call: ToolCall, status: ResultStatus, error: ProtocolError) -> ToolResult:
        return cls(call.call_id, call.tool, status, error=error)

    def to_json(self) -> dict[str, JsonValue]:
        body: dict[str, JsonValue] = {"callId": self.call_id, "tool": self.tool, "status": self.status.value}
        if self.status is ResultStatus.SUCCEEDED:
            body["output"] = self.output
        elif self.error is not None:
            body["error"] = self.error.to_json()
        return body


# --- execution result -------------------------------------------------------------------------


@dataclass(frozen=True)
class Escalation:
    reason: str
    reviewer: dict[str, str]
    requested_at: str
    status: str = "pending"  # always pending: nothing inside SharedOS advances it (ADR 0011)

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "reason": self.reason,
            "reviewer": {**self.reviewer},
            "requestedAt": self.requested_at,
            "status": self.status,
        }


@dataclass(frozen=True)
class ExecutionResult:
    execution_id: str
    status: ExecutionStatus
    events: list[dict[str, JsonValue]]
    metadata: dict[str, JsonValue]
    output: JsonValue = None
    error: ProtocolError | None = None
    escalation: Escalation | None = None
    version: str = "1"  # the protocol epoch the turn spoke (runner.core.protocol): the result's version says it

    @property
    def reason_code(self) -> str | None:
        """The turn's terminal reason code, as the record states it."""
        if self.status is ExecutionStatus.ESCALATED:
            return Code.ESCALATION_REQUESTED.value
        if self.error is not None:
            return self.error.code
        if self.status is ExecutionStatus.CANCELLED:
            return Code.TURN_CANCELLED.value
        return None

    def text(self, key: str) -> str | None:
        """The metadata's ``key`` when it holds a string (the metadata is the turn's open JSON object)."""
        value = self.metadata.get(key)
        return value if isinstance(value, str) else None

    def count(self, key: str) -> int | None:
        """The metadata's ``key`` when it holds an integer."""
        value = self.metadata.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else None

    def to_json(self) -> dict[str, JsonValue]:
        body: dict[str, JsonValue] = {
            "version": self.version, "executionId": self.execution_id, "status": self.status.value,
        }
        if self.status is ExecutionStatus.SUCCEEDED:
            body["output"] = self.output
        if self.error is not None:
            body["error"] = self.error.to_json()
        if self.escalation is not None:
            body["escalation"] = self.escalation.to_json()
        body["events"] = [*self.events]
        body["metadata"] = self.metadata
        return body
