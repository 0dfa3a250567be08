"""How a matrix row arms the world: :class:`WorldCondition` (``ConformanceCondition.world``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from runner.core.outcomes import JsonValue


class WorldNotArmed(ValueError):
    """A condition declares an arming this world cannot perform (``WorldCondition.unarmed``)."""


@dataclass(frozen=True)
class ExpiryArming:
    """``expiresAfterOperations``: these grants' windows close after ``operations`` decided operations."""

    operations: int
    grant_ids: tuple[str, ...]

    def to_json(self) -> dict[str, JsonValue]:
        return {"operations": self.operations, "grantIds": list(self.grant_ids)}


@dataclass(frozen=True)
class WorldCondition:
    """The trusted arming of a world for one matrix row (``ConformanceCondition.world``)."""

    escalation: Literal["granted", "withheld"] = "granted"
    max_tool_calls: int | None = None
    max_steps: int | None = None
    bounded: bool = False
    expired: tuple[str, ...] = ()
    revoked: tuple[str, ...] = ()
    expires_after_operations: ExpiryArming | None = None
    restorable: bool = False
    broker: Literal["registered", "granted"] | None = None
    # declared by the row, not armed by this world: (upstream key, value) pairs
    unarmed: tuple[tuple[str, JsonValue], ...] = field(default=(), hash=False)

    @property
    def armed(self) -> bool:
        return not self.unarmed

    def to_json(self) -> dict[str, JsonValue]:
        """The overrides in upstream's ``ConformanceWorldOptions`` keys (``{}`` for the baseline)."""
        body: dict[str, JsonValue] = {}
        if self.escalation != "granted":
            body["escalation"] = self.escalation
        if self.max_tool_calls is not None:
            body["maxToolCalls"] = self.max_tool_calls
        if self.max_steps is not None:
            body["maxSteps"] = self.max_steps
        if self.bounded:
            body["bounded"] = True
        if self.expired:
            body["expired"] = list(self.expired)
        if self.revoked:
            body["revoked"] = list(self.revoked)
        if self.expires_after_operations is not None:
            body["expiresAfterOperations"] = self.expires_after_operations.to_json()
        if self.restorable:
            body["restorable"] = True
        if self.broker is not None:
            body["broker"] = self.broker
        for key, value in self.unarmed:
            body[key] = value
        return body
