"""Grants, requirements and the authorization decision (upstream §1 "Grant", §4.3).

A deliberately small model of the kernel's decision: enough for the conformance world's grants
(scopes, actions, owners, single-use grants, revocation, validity windows and delegation parents),
with the reason codes upstream uses.

A grant is *live* when it is not revoked, its window has not closed at the book's clock, and every
ancestor named by ``parent_grant_id`` is live too: revoking an ancestor invalidates its descendants
(upstream "Deny; invalidate descendants"). A dead grant simply authorizes nothing, so a call it would
have covered is refused ``no_matching_grant`` (upstream's chain verifier says
``delegation_chain_invalid`` for a revoked ancestor; this kernel has no chain verifier).

The clock (:class:`OperationClock`) is frozen unless a condition starts it; a started clock moves one
step per operation this kernel decides (see the class for how that differs from upstream).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal

from runner.core.outcomes import JsonValue
from runner.core.vocabulary import Code

Address = tuple[str, str]  # (kind, id), e.g. ("human", "user-alice")


def address_json(addr: Address) -> dict[str, JsonValue]:
    """An address as upstream writes it: ``{kind, userId}`` for a human, ``{kind, agentId}`` otherwise."""
    kind, ident = addr
    return {"kind": kind, ("userId" if kind == "human" else "agentId"): ident}


def instant(start: str, steps: int, step_ms: int = 1000) -> str:
    """``start`` moved by ``steps`` steps of ``step_ms``, as an ISO string with milliseconds and ``Z``."""
    moved = datetime.fromisoformat(start.replace("Z", "+00:00")) + timedelta(milliseconds=steps * step_ms)
    moved = moved.astimezone(UTC)
    return moved.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moved.microsecond // 1000:03d}Z"


@dataclass
class OperationClock:
    """The instant authority is decided at (upstream ``OperationIndexedClock``, approximately).

    Frozen at ``start`` unless ``moving``. A moving clock reads ``instant(start, k)`` while the kernel
    decides its (k+1)-th operation, so a condition arms an expiry "after N operations" as
    ``instant(start, N)``. Upstream counts ``tool.invoked`` audit events, which include calls the
    envelope refused before the kernel; those never reach this world, so here only the operations
    the kernel decided move the clock.
    """

    start: str
    moving: bool = False
    step_ms: int = 1000
    operations: int = 0

    def now(self) -> str:
        return instant(self.start, self.operations, self.step_ms) if self.moving else self.start

    def tick(self) -> None:
        if self.moving:
            self.operations += 1


@dataclass(frozen=True)
class Capability:
    namespace: str
    path: tuple[str, ...]
    actions: frozenset[str]
    scope: Literal["exact", "descendants"] = "descendants"

    def covers(self, namespace: str, path: tuple[str, ...], action: str) -> bool:
        if namespace != self.namespace or action not in self.actions:
            return False
        if self.scope == "exact":
            return path == self.path
        return path[: len(self.path)] == self.path

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "resource": {"namespace": self.namespace, "path": list(self.path)},
            "actions": [*sorted(self.actions)],
            "scope": self.scope,
        }


@dataclass(frozen=True)
class Grant:
    id: str
    issuer: Address
    subject: Address
    capabilities: tuple[Capability, ...]
    max_uses: int | None = None
    delegation_depth: int = 1
    revoked: bool = False
    parent_grant_id: str | None = None
    expires_at: str | None = None  # ISO instant; the grant authorizes nothing at or after it
    issued_at: str | None = None

    def expired_at(self, now: str) -> bool:
        return self.expires_at is not None and now >= self.expires_at

    def to_json(self) -> dict[str, JsonValue]:
        constraints: dict[str, JsonValue] = {"delegationDepth": self.delegation_depth}
        if self.max_uses is not None:
            constraints["maxUses"] = self.max_uses
        if self.expires_at is not None:
            constraints["expiresAt"] = self.expires_at
        body: dict[str, JsonValue] = {
            "id": self.id,
            "issuer": list(self.issuer),
            "subject": list(self.subject),
            "capabilities": [c.to_json() for c in self.capabilities],
            "constraints": constraints,
        }
        if self.issued_at is not None:
            body["issuedAt"] = self.issued_at
        if self.parent_grant_id is not None:
            body["parentGrantId"] = self.parent_grant_id
        if self.revoked:
            body["revoked"] = True
        return body


@dataclass(frozen=True)
class Requirement:
    """The exact resource and action a call needs, resolved from its arguments."""

    namespace: str
    path: tuple[str, ...]
    action: str
    owner: Address

    def describe(self) -> str:
        return f"{self.namespace}:{'/'.join(self.path) or '(root)'}"


@dataclass(frozen=True)
class Decision:
    code: Code
    grant_id: str | None = None

    @property
    def allowed(self) -> bool:
        return self.code is Code.ALLOWED


FROZEN_AT = "2026-08-18T09:00:00.000Z"  # the conformance world's NOW; a book without a clock reads it


@dataclass
class GrantBook:
    """The turn's grants for one actor, the usage counter for bounded grants, and the clock."""

    grants: tuple[Grant, ...]
    actor: Address
    owner: Address
    uses: dict[str, int] = field(default_factory=dict)
    clock: OperationClock = field(default_factory=lambda: OperationClock(FROZEN_AT))

    def live(self, grant: Grant, now: str | None = None) -> bool:
        """Not revoked, inside its window, and every ancestor live (a missing ancestor fails closed)."""
        now = now or self.clock.now()
        by_id = {g.id: g for g in self.grants}
        seen: set[str] = set()
        current: Grant | None = grant
        while current is not None:
            if current.id in seen or current.revoked or current.expired_at(now):
                return False
            seen.add(current.id)
            if current.parent_grant_id is None:
                return True
            current = by_id.get(current.parent_grant_id)
        return False

    def active(self) -> list[Grant]:
        now = self.clock.now()
        return [g for g in self.grants if g.subject == self.actor and self.live(g, now)]

    def discoverable(self, namespace: str, action: str) -> bool:
        """Whether some active grant names this resource namespace and action anywhere."""
        return any(c.namespace == namespace and action in c.actions for g in self.active() for c in g.capabilities)

    def authorize(self, req: Requirement) -> Decision:
        """Decide one requirement. Owner crossing is ``invalid_request``, checked first (ADR 0012).

        Every decision is one operation on the book's clock, whatever it decided.
        """
        try:
            return self._decide(req)
        finally:
            self.clock.tick()

    def _decide(self, req: Requirement) -> Decision:
        if req.owner != self.owner:
            return Decision(Code.INVALID_REQUEST)
        exhausted: str | None = None
        for grant in self.active():
            if not any(c.covers(req.namespace, req.path, req.action) for c in grant.capabilities):
                continue
            if grant.max_uses is not None and self.uses.get(grant.id, 0) >= grant.max_uses:
                exhausted = grant.id
                continue
            if grant.max_uses is not None:
                self.uses[grant.id] = self.uses.get(grant.id, 0) + 1
            return Decision(Code.ALLOWED, grant.id)
        if exhausted is not None:
            return Decision(Code.GRANT_EXHAUSTED, exhausted)
        return Decision(Code.NO_MATCHING_GRANT)
