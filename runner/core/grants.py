"""Grants, requirements and the authorization decision (upstream §1 "Grant", §4.3).

A deliberately small model of the kernel's decision: enough for the conformance world's grants
(scopes, actions, owners, single-use grants, revocation, validity windows and delegation parents),
with the reason codes upstream uses.

A grant is *live* when it is not revoked, its window has not closed at the book's clock, and every
ancestor named by ``parent_grant_id`` is live too: revoking an ancestor invalidates its descendants
(upstream "Deny; invalidate descendants"). A dead grant simply authorizes nothing, so a call it would
have covered is refused ``no_matching_grant``. (Upstream's chain verifier says
``delegation_chain_invalid``/``parent_inactive`` for a revoked ancestor; the replayed-grant row accepts
either, and this kernel keeps revocation in the liveness filter so that a revoked grant also stops
making tools discoverable.)

Each live candidate that covers a request then passes, in upstream's order (§4.1, §4.3, §4.5):

1. the **delegation chain verifier** (:meth:`GrantBook.verify_chain`, ADR 0008): every ancestor exists,
   was issued to the child's issuer, holds every capability the child claims, and allows one more level of
   delegation; otherwise ``delegation_chain_invalid`` (``delegation_chain_unverified`` when an ancestor
   cannot be found);
2. the **host ceiling** (:class:`HostCeiling`, ADR 0020), on authorize and on discovery, shown only
   a decision that allowed: it hands that decision back or a denial; a denial under another code is
   rewritten to ``host_policy_denied``; anything else, or a throw, is ``host_policy_unavailable``;
3. the **usage store** (:class:`UsageStore`) for a bounded grant: spent is ``grant_exhausted``, a
   store that throws is ``usage_store_unavailable``. Unbounded grants never touch it.

When no candidate survives, the refusal is chosen by precedence (:data:`REFUSAL_PRECEDENCE`). A
``no_matching_grant`` decision carries ``requiredAuthority`` (ADR 0019): a kernel-minted
``CapabilityRequest`` for exactly the resource and action asked for.

The clock (:class:`OperationClock`) is frozen unless a condition starts it; a started clock moves one
step per operation this kernel decides (see the class for how that differs from upstream).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal, Protocol

from runner.core.canonical import sha256_hex
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

    def within(self, parent: Capability) -> bool:
        """Whether this capability claims nothing its ``parent`` does not hold (attenuation, ADR 0008)."""
        if self.namespace != parent.namespace or not self.actions <= parent.actions:
            return False
        if parent.scope == "exact":
            return self.scope == "exact" and self.path == parent.path
        return self.path[: len(parent.path)] == parent.path

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
    metadata: Mapping[str, JsonValue] | None = None  # e.g. the ceiling's ``rule``, ``delegation: {code, grantId}``
    required_authority: Mapping[str, JsonValue] | None = None  # only on an authorize ``no_matching_grant``

    @property
    def allowed(self) -> bool:
        return self.code is Code.ALLOWED


# When no candidate survives: fail-closed infrastructure first, then a broken chain, then the host's
# ceiling, then a spent grant, then nothing matching (upstream §4.1 "precedence"; where upstream ranks the
# infrastructure denials against each other was not seen, so they share the first rank in this order
# [inferred]).
REFUSAL_PRECEDENCE: tuple[Code, ...] = (
    Code.HOST_POLICY_UNAVAILABLE,
    Code.USAGE_STORE_UNAVAILABLE,
    Code.DELEGATION_CHAIN_UNVERIFIED,
    Code.DELEGATION_CHAIN_INVALID,
    Code.HOST_POLICY_DENIED,
    Code.GRANT_EXHAUSTED,
    Code.NO_MATCHING_GRANT,
)


class HostCeiling(Protocol):
    """The host's ceiling over a matching grant (ADR 0020's ``HostCeiling.narrow``): shown a decision that
    allowed, it answers that same decision or a denial. It may raise; the kernel then fails closed."""

    def narrow(self, request: Requirement, decision: Decision) -> Decision: ...


class UsageStoreUnavailable(RuntimeError):
    """The usage store of bounded grants did not answer."""


class UsageStore(Protocol):
    """How many times each bounded grant was used (upstream ``GrantUsageStore``); either method may raise."""

    def used(self, grant_id: str) -> int: ...

    def consume(self, grant_id: str) -> None: ...


@dataclass
class InMemoryUsageStore:
    counts: dict[str, int] = field(default_factory=dict)

    def used(self, grant_id: str) -> int:
        return self.counts.get(grant_id, 0)

    def consume(self, grant_id: str) -> None:
        self.counts[grant_id] = self.counts.get(grant_id, 0) + 1


class UnavailableUsageStore:
    """A store that answers neither reads nor writes (upstream testkit ``UnavailableGrantUsageStore``)."""

    def used(self, grant_id: str) -> int:
        raise UsageStoreUnavailable(f"the usage store is unreachable (reading {grant_id})")

    def consume(self, grant_id: str) -> None:
        raise UsageStoreUnavailable(f"the usage store is unreachable (spending {grant_id})")


def required_authority(
    req: Requirement, *, namespace_id: str, requester: Address, purpose: str, now: str
) -> dict[str, JsonValue]:
    """ADR 0019's ``requiredAuthority``: the one capability a ``no_matching_grant`` denial was missing.

    ``id`` is ``capreq-`` + the hash of ``{namespaceId, requester, owner, capabilities, purpose}`` (not
    ``requestedAt``), so the same missing authority has the same id on every turn; no provider is
    consulted, so it is identical for an absent path and an unreachable one.
    """
    capability: dict[str, JsonValue] = {
        "resource": {"namespace": req.namespace, "path": list(req.path), "owner": address_json(req.owner)},
        "actions": [req.action],
        "scope": "exact",
    }
    hashed: dict[str, JsonValue] = {
        "namespaceId": namespace_id,
        "requester": address_json(requester),
        "owner": address_json(req.owner),
        "capabilities": [capability],
        "purpose": purpose,
    }
    return {"id": f"capreq-{sha256_hex(hashed)}", **hashed, "requestedAt": now}


MAX_CHAIN = 16


@dataclass
class GrantBook:
    """One turn's authority snapshot for one actor, with the stores and ports its decisions consult.

    ``grants`` is what the turn loaded (roots included: the chain verifier resolves ancestors from it);
    ``usage`` is the host's store of bounded uses (shared across turns); ``ceiling`` the host's policy.
    """

    grants: tuple[Grant, ...]
    actor: Address
    owner: Address
    clock: OperationClock  # the world's (runner.core.world.NOW, frozen unless a condition starts it)
    usage: UsageStore = field(default_factory=InMemoryUsageStore)
    ceiling: HostCeiling | None = None
    namespace_id: str = "world-conformance"
    purpose: str = "conformance-probe"

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

    def verify_chain(self, grant: Grant) -> Decision | None:
        """``None`` when the grant's delegation chain holds; otherwise the refusal, naming the link that broke.

        Rules checked (upstream's ``delegation_chain_invalid`` causes): ``issuer_not_parent_subject``,
        ``capability_widened``, ``delegation_depth_exceeded``, ``chain_cycle``, ``chain_too_long``; an
        ancestor that cannot be found is ``delegation_chain_unverified``/``parent_not_found``.
        """
        by_id = {g.id: g for g in self.grants}
        child, seen = grant, {grant.id}
        while child.parent_grant_id is not None:
            parent = by_id.get(child.parent_grant_id)
            if parent is None:
                return _chain(Code.DELEGATION_CHAIN_UNVERIFIED, "parent_not_found", child)
            if parent.id in seen:
                return _chain(Code.DELEGATION_CHAIN_INVALID, "chain_cycle", child)
            if len(seen) > MAX_CHAIN:
                return _chain(Code.DELEGATION_CHAIN_INVALID, "chain_too_long", child)
            if child.issuer != parent.subject:
                return _chain(Code.DELEGATION_CHAIN_INVALID, "issuer_not_parent_subject", child)
            if not all(any(c.within(p) for p in parent.capabilities) for c in child.capabilities):
                return _chain(Code.DELEGATION_CHAIN_INVALID, "capability_widened", child)
            if child.delegation_depth >= parent.delegation_depth:
                return _chain(Code.DELEGATION_CHAIN_INVALID, "delegation_depth_exceeded", child)
            seen.add(parent.id)
            child = parent
        return None

    def discover(self, namespace: str, path: tuple[str, ...], action: str) -> Decision:
        """``canDiscover``: whether some live grant with a valid chain carries ``action`` in ``namespace``
        that the host's ceiling lets stand, asked about the tool's declared ceiling (``path``). Never carries
        ``requiredAuthority`` (discovery asks about the ceiling, which may be wider than any call)."""
        refusals: list[Decision] = []
        request = Requirement(namespace, path, action, self.owner)
        for grant in self.active():
            if not any(c.namespace == namespace and action in c.actions for c in grant.capabilities):
                continue
            survived = self._admissible(request, grant, refusals)
            if survived is not None:
                return survived
        return _first(refusals) or Decision(Code.NO_MATCHING_GRANT)

    def discoverable(self, namespace: str, action: str, path: tuple[str, ...] = ()) -> bool:
        return self.discover(namespace, path, action).allowed

    def check(self, req: Requirement) -> Decision:
        """Decide without counting an operation on the clock (turn admission)."""
        return self._decide(req)

    def authorize(self, req: Requirement) -> Decision:
        """Decide one requirement. Owner crossing is ``invalid_request``, checked first (ADR 0012).

        Every decision is one operation on the book's clock, whatever it decided.
        """
        try:
            return self._decide(req)
        finally:
            self.clock.tick()

    def _admissible(self, req: Requirement, grant: Grant, refusals: list[Decision]) -> Decision | None:
        """The chain, then the ceiling, for one candidate: its allowing decision, or None (refusal noted)."""
        broken = self.verify_chain(grant)
        if broken is not None:
            refusals.append(broken)
            return None
        decision = Decision(Code.ALLOWED, grant.id)
        if self.ceiling is None:
            return decision
        narrowed = self._narrow(req, decision)
        if not narrowed.allowed:
            refusals.append(narrowed)
            return None
        return decision

    def _narrow(self, req: Requirement, decision: Decision) -> Decision:
        assert self.ceiling is not None
        try:
            answer = self.ceiling.narrow(req, decision)
        except Exception as err:  # any throw from the host's port fails closed
            return Decision(Code.HOST_POLICY_UNAVAILABLE, decision.grant_id, {"error": type(err).__name__})
        if not isinstance(answer, Decision):
            return Decision(Code.HOST_POLICY_UNAVAILABLE, decision.grant_id, {"error": "malformed"})
        if answer.allowed:
            if answer.grant_id != decision.grant_id:
                return Decision(Code.HOST_POLICY_UNAVAILABLE, decision.grant_id, {"error": "grant_changed"})
            return decision
        return Decision(Code.HOST_POLICY_DENIED, decision.grant_id, answer.metadata)

    def _decide(self, req: Requirement) -> Decision:
        if req.owner != self.owner:
            return Decision(Code.INVALID_REQUEST)
        refusals: list[Decision] = []
        for grant in self.active():
            if not any(c.covers(req.namespace, req.path, req.action) for c in grant.capabilities):
                continue
            allowed = self._admissible(req, grant, refusals)
            if allowed is None:
                continue
            if grant.max_uses is not None:
                try:
                    if self.usage.used(grant.id) >= grant.max_uses:
                        refusals.append(Decision(Code.GRANT_EXHAUSTED, grant.id))
                        continue
                    self.usage.consume(grant.id)
                except UsageStoreUnavailable:
                    refusals.append(Decision(Code.USAGE_STORE_UNAVAILABLE, grant.id))
                    continue
            return allowed
        refused = _first(refusals)
        if refused is not None:
            return refused
        minted = required_authority(
            req, namespace_id=self.namespace_id, requester=self.actor, purpose=self.purpose, now=self.clock.now()
        )
        return Decision(Code.NO_MATCHING_GRANT, required_authority=minted)


def _chain(code: Code, why: str, grant: Grant) -> Decision:
    return Decision(code, grant.id, {"delegation": {"code": why, "grantId": grant.id}})


def _first(refusals: list[Decision]) -> Decision | None:
    """The refusal that outranks the others (:data:`REFUSAL_PRECEDENCE`), the first seen among equals."""
    ranked = [d for d in refusals if d.code in REFUSAL_PRECEDENCE]
    return min(ranked, key=lambda d: REFUSAL_PRECEDENCE.index(d.code)) if ranked else None
