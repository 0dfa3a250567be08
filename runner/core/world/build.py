"""The :class:`World` a turn runs against, and :func:`build_world`, which makes a fresh one.

A world outlives its turns: a row of two turns (``revoked-mid-turn``) runs both against one world -- the
same grant store, usage store, audit sink, transport and files. Each turn opens its authority with
:meth:`World.open_turn`: one load of the store, held for the whole turn as :attr:`World.book`, and the turn's
admission. :func:`build_world` opens the first turn.

The world's clock is frozen unless a condition starts it (an expiry after N operations, or a drain point);
a started clock moves one step per decided operation (:class:`~runner.core.grants.OperationClock`).

**Drain point [inferred].** Upstream arms ``drainGraceMs`` on the executor and reaches the drain point
(``now >= deadline - grace``) with a clock this runner cannot see; how its conformance row gets there with a
frozen clock was not seen. Here the turn's deadline (``timeoutMs``) and grace are instants on the world's
operation-indexed clock: with ``timeoutMs`` 2000 and ``drainGraceMs`` 1000 the turn drains once one operation
has been decided. That makes the drain point a fact of the world, reached at the same call on every run and
every column, never a wall-clock race. To follow upstream's mechanism instead, change :meth:`World.draining`.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runner.core.admission import Admission, AuthorityUnavailable, GrantStore, admit, unavailable
from runner.core.audit import AuditLog
from runner.core.grants import (
    Address,
    Grant,
    GrantBook,
    HostCeiling,
    InMemoryUsageStore,
    OperationClock,
    UnavailableUsageStore,
    UsageStore,
    instant,
)
from runner.core.messaging import RouteLeaseTransport
from runner.core.outcomes import JsonValue
from runner.core.tools import ToolDefinition, ToolProvider
from runner.core.vocabulary import Code
from runner.core.world.authority import issue_grants
from runner.core.world.condition import WorldCondition, WorldNotArmed
from runner.core.world.constants import (
    AGENT,
    BROKER_TOOL,
    ENABLED_TOOL_NAMESPACES,
    EXTRA_REQUESTED_TOOLS,
    NAMESPACE_ID,
    NOW,
    OWNER,
    PURPOSE,
    STEP_MS,
)
from runner.core.world.definitions import broker_tool, describe_tool, registered_tools
from runner.core.world.policy import FrozenLedgerCeiling, MovingBrokerProvider
from runner.core.world.workspace import seeded_state
from runner.core.world_state import WorldState


@dataclass
class World:
    condition: WorldCondition
    grants: tuple[Grant, ...]  # every grant the world issued, roots included, as issued (what is hashed)
    tools: dict[str, ToolDefinition]  # the static registry
    state: WorldState
    book: GrantBook  # the open turn's authority: one load of the store, held for the turn
    # who acts, for whom, at what instant, in which namespaces: the envelope and the catalogue take
    # them from the world they are handed (defaults: the conformance world's)
    agent: Address = AGENT
    owner: Address = OWNER
    now: str = NOW
    namespace_id: str = NAMESPACE_ID
    enabled_tool_namespaces: tuple[str, ...] = ENABLED_TOOL_NAMESPACES
    store: GrantStore = field(default_factory=lambda: GrantStore([]))
    usage: UsageStore = field(default_factory=InMemoryUsageStore)
    ceiling: HostCeiling | None = None
    providers: tuple[ToolProvider, ...] = ()
    audit: AuditLog = field(default_factory=AuditLog)
    admission: Admission = field(default_factory=lambda: Admission(Code.ALLOWED))
    turn: int = 0  # how many turns opened their authority on this world

    @property
    def requested_tools(self) -> list[str]:
        """Every request asks for all registered tools plus the two never-published names."""
        return sorted(set(self.tools) | set(EXTRA_REQUESTED_TOOLS))

    def clock(self) -> str:
        """The world's instant: ``now``, unless the condition started the operation clock."""
        return self.book.clock.now()

    def open_turn(self) -> Admission:
        """Open the next turn's authority: load the store once and admit the turn (see the module)."""
        self.turn += 1
        failure: AuthorityUnavailable | None = None
        try:
            loaded = self.store.load()
        except AuthorityUnavailable as err:
            loaded, failure = (), err
        self.book = GrantBook(
            loaded, actor=self.agent, owner=self.owner, clock=self.book.clock, usage=self.usage,
            ceiling=self.ceiling, namespace_id=self.namespace_id, purpose=PURPOSE,
        )
        self.admission = unavailable(failure) if failure is not None else admit(self.book, self.agent)
        return self.admission

    def registry(self) -> dict[str, ToolDefinition]:
        """The effective registry now: the static tools and one listing of every provider (ADR 0026: a turn
        takes this once and answers from it; listing again may answer differently)."""
        listed = {t.name: t for provider in self.providers for t in provider.list_tools()}
        return {**self.tools, **listed}

    def declared_registry(self) -> dict[str, ToolDefinition]:
        """The static tools and every provider's tools as registered, listing nothing (what is hashed, and what a
        catalogue resolved outside a turn shows)."""
        return {**self.tools, **{t.name: t for p in self.providers for t in p.declared()}}

    def draining(self) -> bool:
        """Past the drain point: ``now >= deadline - grace`` on the world's clock (see the module)."""
        timeout, grace = self.condition.timeout_ms, self.condition.drain_grace_ms
        if timeout is None or grace is None:
            return False
        return self.clock() >= instant(self.now, 1, timeout - grace)

    def describe(self) -> dict[str, JsonValue]:
        """The world description that ``worldHash`` is taken over (§6.6)."""
        registered = self.declared_registry()
        return {
            "condition": self.condition.to_json(),
            "namespaceId": self.namespace_id,
            "enabledToolNamespaces": list(self.enabled_tool_namespaces),
            "grants": [g.to_json() for g in self.grants],
            "tools": [describe_tool(t) for t in sorted(registered.values(), key=lambda t: t.name)],
        }


def build_world(condition: WorldCondition | None = None, *, describe_only: bool = False) -> World:
    """A fresh world under ``condition``, with its first turn opened (:meth:`World.open_turn`).

    A condition with ``unarmed`` entries is refused (:class:`WorldNotArmed`): running a row in a world
    that silently ignored its arming would grade the baseline under the row's name. ``describe_only``
    builds it anyway, for hashing and display.
    """
    condition = condition or WorldCondition()
    if condition.unarmed and not describe_only:
        keys = ", ".join(k for k, _ in condition.unarmed)
        raise WorldNotArmed(f"this world cannot arm {keys} yet")
    grants = issue_grants(condition)
    state = seeded_state()
    state.transport = RouteLeaseTransport(condition.route_revoked_after_deliveries)
    tools = {t.name: t for t in registered_tools()}
    providers: tuple[ToolProvider, ...] = ()
    if condition.broker_moved_after_listing:
        providers = (MovingBrokerProvider(broker_tool()),)
    elif condition.broker is not None:
        tools[BROKER_TOOL] = broker_tool()
    moving = condition.expires_after_operations is not None or condition.drain_grace_ms is not None
    clock = OperationClock(NOW, moving=moving, step_ms=STEP_MS)
    revoke_after = condition.revoked_after_turn
    store = GrantStore(
        list(grants), fails_after_loads=condition.authority_fails_after_loads,
        revoke_after_load={revoke_after.turn: revoke_after.grant_ids} if revoke_after else {},
    )
    world = World(
        condition, grants, tools, state, GrantBook((), actor=AGENT, owner=OWNER, clock=clock), agent=AGENT,
        owner=OWNER, now=NOW, namespace_id=NAMESPACE_ID, enabled_tool_namespaces=ENABLED_TOOL_NAMESPACES,
        store=store, usage=UnavailableUsageStore() if condition.usage_store_unavailable else InMemoryUsageStore(),
        ceiling=FrozenLedgerCeiling() if condition.host_policy_frozen else None, providers=providers,
        audit=AuditLog(condition.audit_fails_after_operations),
    )
    world.open_turn()
    return world
