"""The conformance world (upstream §6.10): grants, an in-memory workspace, and its tools.

``build_world(condition)`` returns a fresh :class:`World` for one turn. The baseline issues every
working grant; a :class:`WorldCondition` arms the variations a matrix row needs:

- ``escalation="withheld"``: no grant over the affordance, so ``sharedos.escalate`` is not published;
- ``max_tool_calls`` / ``max_steps``: the turn's budgets (they flow into the envelope's ``StepLimits``);
- ``bounded``: the single-use ledger grant (``grant-ledger``, ``maxUses`` 1);
- ``expired`` / ``revoked``: grant ids whose window has already closed, or that the store revoked
  (revoking an ancestor invalidates its descendants, see :mod:`runner.core.grants`);
- ``expires_after_operations``: grants whose window closes after N operations, on a clock that
  starts moving one step per decided operation;
- ``restorable``: rollback authority over ``Workspace/scratch`` (publishes ``files.snapshot.restore``);
- ``broker``: registers the brokered ``notion.search`` (``"registered"``), and grants ``search``
  over ``["Handbook"]`` too (``"granted"``);
- ``host_policy_frozen``: the host's ceiling freezes the ledger and every mutation action (ADR 0020);
- ``revoked_after_turn``: the store revokes grants right after turn N loaded its authority;
- ``usage_store_unavailable``: the single-use ledger grant, with a usage store that never answers;
- ``authority_fails_after_loads``: every load of the grant store after the N-th fails (admission);
- ``audit_fails_after_operations``: the audit sink fails once it holds N operations (ADR 0023);
- ``over_broad_delegation``: a working grant that claims more than its parent (ADR 0008);
- ``broker_moved_after_listing``: the granted broker, from a provider that moves after listing (ADR 0026);
- ``route_revoked_after_deliveries``: the message route lease closes after N deliveries (ADR 0025);
- ``timeout_ms`` / ``drain_grace_ms``: the turn's deadline and drain grace on the world's clock.

Anything a row declares that this world cannot arm yet is carried in ``unarmed`` (upstream's key and
value), so it is still hashed and shown; :func:`build_world` refuses such a condition unless asked
only to describe it.

Layout: :mod:`~runner.core.world.constants` (ids, instants, addresses, paths),
:mod:`~runner.core.world.condition` (the arming), :mod:`~runner.core.world.authority` (the grants
issued), :mod:`~runner.core.world.workspace` (the in-memory files and the handlers that touch
them), :mod:`~runner.core.world.definitions` (schemas and tool definitions) and
:mod:`~runner.core.world.build` (the :class:`World` and :func:`build_world`). Every public name is
importable from this package.
"""

from runner.core.world.build import World, build_world
from runner.core.world.condition import ExpiryArming, RevocationArming, WorldCondition, WorldNotArmed
from runner.core.world.constants import (
    AGENT,
    BROKER_GRANTED_PATH,
    BROKER_TOOL,
    DRAFT,
    ENABLED_TOOL_NAMESPACES,
    EXPIRED_AT,
    EXTRA_REQUESTED_TOOLS,
    ISSUED_AT,
    LEDGER,
    LEDGER_PATH,
    NAMESPACE_ID,
    NOW,
    ORCHESTRATOR,
    OWNER,
    POLICY,
    PURPOSE,
    READ_ACTIONS,
    READ_GRANT,
    RESTORE_ACTION,
    ROOT_FILES_GRANT,
    SCRATCH,
    SEEDED_SNAPSHOT_ID,
    SNAPSHOT_ACTIONS,
    STEP_MS,
    TRACE_ID,
    WORKSPACE,
    WRITE_ACTIONS,
)
from runner.core.world_state import WorldState

__all__ = [
    "AGENT",
    "BROKER_GRANTED_PATH",
    "BROKER_TOOL",
    "DRAFT",
    "ENABLED_TOOL_NAMESPACES",
    "EXPIRED_AT",
    "EXTRA_REQUESTED_TOOLS",
    "ISSUED_AT",
    "LEDGER",
    "LEDGER_PATH",
    "NAMESPACE_ID",
    "NOW",
    "ORCHESTRATOR",
    "OWNER",
    "POLICY",
    "PURPOSE",
    "READ_ACTIONS",
    "READ_GRANT",
    "RESTORE_ACTION",
    "ROOT_FILES_GRANT",
    "SCRATCH",
    "SEEDED_SNAPSHOT_ID",
    "SNAPSHOT_ACTIONS",
    "STEP_MS",
    "TRACE_ID",
    "WORKSPACE",
    "WRITE_ACTIONS",
    "ExpiryArming",
    "RevocationArming",
    "World",
    "WorldCondition",
    "WorldNotArmed",
    "WorldState",
    "build_world",
]
