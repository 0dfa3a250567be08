"""Where a turn's authority comes from, and whether the turn is admitted at all (upstream ``GrantSource``,
``openTurnAuthority``/``admitTurn``; ADR 0010/0016).

A :class:`GrantStore` is the host's store. Each turn loads it exactly once (:meth:`GrantStore.load`) and keeps
what it loaded for the whole turn: a revocation that lands in the store while the turn runs is seen by the
next turn's load, never by the running turn. The store can be armed, as upstream's conformance grant source is:

- ``fails_after_loads=N``: every load after the N-th fails (``authorityFailsAfterLoads``); a failed load
  still counts;
- ``revoke_after_load={k: ids}``: right after load k has *returned* its grants, those ids are revoked in the
  store (``revokedAfterTurn``, upstream ``afterLoads(k, hook)``).

:func:`admit` decides the turn from what was loaded: an outage is ``authority_unavailable`` (fail-closed,
distinguishable from a denial), a turn no grant admits is ``no_matching_grant`` (the ``sharedos.execution``
``invoke`` capability over the acting agent). A refused turn starts no runtime.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from runner.core.grants import Address, Decision, Grant, GrantBook, Requirement
from runner.core.vocabulary import Code

EXECUTION_NAMESPACE = "sharedos.execution"
INVOKE = "invoke"


class AuthorityUnavailable(RuntimeError):
    """The grant store did not answer (internally ``grant_source_failed``)."""


@dataclass
class GrantStore:
    grants: list[Grant]
    fails_after_loads: int | None = None
    revoke_after_load: Mapping[int, tuple[str, ...]] = field(default_factory=dict)
    loads: int = 0

    def load(self) -> tuple[Grant, ...]:
        """One turn's authority: a snapshot of the store, taken once. Raises :class:`AuthorityUnavailable`."""
        self.loads += 1
        if self.fails_after_loads is not None and self.loads > self.fails_after_loads:
            raise AuthorityUnavailable(f"grant_source_failed: the grant store failed on load {self.loads}")
        snapshot = tuple(self.grants)
        for grant_id in self.revoke_after_load.get(self.loads, ()):
            self.revoke(grant_id)
        return snapshot

    def revoke(self, grant_id: str) -> None:
        """Revoke in the store (a snapshot already loaded keeps the grant as it was)."""
        if not any(g.id == grant_id for g in self.grants):
            raise KeyError(f"the store holds no grant {grant_id!r}")
        self.grants = [dataclasses.replace(g, revoked=True) if g.id == grant_id else g for g in self.grants]


@dataclass(frozen=True)
class Admission:
    """Whether a turn was admitted; ``code`` is ``allowed`` or the refusal the turn ends ``denied`` with."""

    code: Code
    detail: str | None = None
    decision: Decision | None = None

    @property
    def admitted(self) -> bool:
        return self.code is Code.ALLOWED

    @property
    def fail_closed(self) -> bool:
        return self.code is Code.AUTHORITY_UNAVAILABLE


def admit(book: GrantBook, agent: Address) -> Admission:
    """Admit a turn for ``agent`` on the authority ``book`` holds: a grant over ``sharedos.execution``
    ``[kind, id]`` ``invoke`` (``grant-turn`` in the conformance world). Counts no operation on the clock."""
    decision = book.check(Requirement(EXECUTION_NAMESPACE, agent, INVOKE, book.owner))
    if decision.allowed:
        return Admission(Code.ALLOWED, decision=decision)
    return Admission(Code.NO_MATCHING_GRANT, "no grant admits this turn", decision)


def unavailable(err: AuthorityUnavailable) -> Admission:
    return Admission(Code.AUTHORITY_UNAVAILABLE, str(err))
