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
class RevocationArming:
    """``revokedAfterTurn``: right after turn ``turn`` loaded its authority, the store revokes these grants."""

    turn: int
    grant_ids: tuple[str, ...]

    def to_json(self) -> dict[str, JsonValue]:
        return {"turn": self.turn, "grantIds": list(self.grant_ids)}


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
    host_policy_frozen: bool = False  # the host ceiling freezes the ledger and every mutation action
    revoked_after_turn: RevocationArming | None = None
    usage_store_unavailable: bool = False  # implies ``bounded``: the single-use ledger grant, its store down
    authority_fails_after_loads: int | None = None  # every grant-store load after the N-th fails
    audit_fails_after_operations: int | None = None  # the audit sink fails once it holds N tool.invoked
    over_broad_delegation: bool = False  # a working grant claiming more than its parent holds
    broker_moved_after_listing: bool = False  # implies broker "granted"; the provider moves after listing
    route_revoked_after_deliveries: int | None = None  # the route lease closes after N accepted deliveries
    # the turn's deadline and drain grace, on the world's operation-indexed clock (see build.py)
    timeout_ms: int | None = None
    drain_grace_ms: int | None = None
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
        flags: tuple[tuple[str, JsonValue], ...] = (
            ("hostPolicyFrozen", self.host_policy_frozen or None),
            ("revokedAfterTurn", self.revoked_after_turn.to_json() if self.revoked_after_turn else None),
            ("usageStoreUnavailable", self.usage_store_unavailable or None),
            ("authorityFailsAfterLoads", self.authority_fails_after_loads),
            ("auditFailsAfterOperations", self.audit_fails_after_operations),
            ("overBroadDelegation", self.over_broad_delegation or None),
            ("brokerMovedAfterListing", self.broker_moved_after_listing or None),
            ("routeRevokedAfterDeliveries", self.route_revoked_after_deliveries),
            ("timeoutMs", self.timeout_ms),
            ("drainGraceMs", self.drain_grace_ms),
        )
        for key, value in flags:
            if value is not None:
                body[key] = value
        for key, value in self.unarmed:
            body[key] = value
        return body
