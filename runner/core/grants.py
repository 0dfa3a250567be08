"""Grants, requirements and the authorization decision (upstream §1 "Grant", §4.3).

A deliberately small model of the kernel's decision: enough for the conformance world's grants
(scopes, actions, owners, single-use grants), with the reason codes upstream uses.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from runner.core.vocabulary import Code

Address = tuple[str, str]  # (kind, id), e.g. ("human", "user-alice")


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

    def to_json(self) -> dict[str, object]:
        return {
            "resource": {"namespace": self.namespace, "path": list(self.path)},
            "actions": sorted(self.actions),
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

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {
            "id": self.id,
            "issuer": list(self.issuer),
            "subject": list(self.subject),
            "capabilities": [c.to_json() for c in self.capabilities],
            "constraints": {"delegationDepth": self.delegation_depth},
        }
        if self.max_uses is not None:
            body["constraints"] = {"delegationDepth": self.delegation_depth, "maxUses": self.max_uses}
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


@dataclass
class GrantBook:
    """The turn's grants for one actor, plus the usage counter for bounded grants."""

    grants: tuple[Grant, ...]
    actor: Address
    owner: Address
    uses: dict[str, int] = field(default_factory=dict)

    def active(self) -> list[Grant]:
        return [g for g in self.grants if g.subject == self.actor and not g.revoked]

    def discoverable(self, namespace: str, action: str) -> bool:
        """Whether some active grant names this resource namespace and action anywhere."""
        return any(c.namespace == namespace and action in c.actions for g in self.active() for c in g.capabilities)

    def authorize(self, req: Requirement) -> Decision:
        """Decide one requirement. Owner crossing is ``invalid_request``, checked first (ADR 0012)."""
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
