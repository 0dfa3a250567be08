"""The :class:`World` a turn runs against, and :func:`build_world`, which makes a fresh one."""

from __future__ import annotations

from dataclasses import dataclass

from runner.core.grants import Address, Grant, GrantBook, OperationClock
from runner.core.outcomes import JsonValue
from runner.core.tools import ToolDefinition
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
    STEP_MS,
)
from runner.core.world.definitions import broker_tool, describe_tool, registered_tools
from runner.core.world.workspace import seeded_state
from runner.core.world_state import WorldState


@dataclass
class World:
    condition: WorldCondition
    grants: tuple[Grant, ...]
    tools: dict[str, ToolDefinition]
    state: WorldState
    book: GrantBook
    # who acts, for whom, at what instant, in which namespaces: the envelope and the catalogue take
    # them from the world they are handed (defaults: the conformance world's)
    agent: Address = AGENT
    owner: Address = OWNER
    now: str = NOW
    namespace_id: str = NAMESPACE_ID
    enabled_tool_namespaces: tuple[str, ...] = ENABLED_TOOL_NAMESPACES

    @property
    def requested_tools(self) -> list[str]:
        """Every request asks for all registered tools plus the two never-published names."""
        return sorted(set(self.tools) | set(EXTRA_REQUESTED_TOOLS))

    def clock(self) -> str:
        """The world's instant: ``now``, unless the condition started the operation clock."""
        return self.book.clock.now()

    def describe(self) -> dict[str, JsonValue]:
        """The world description that ``worldHash`` is taken over (§6.6)."""
        return {
            "condition": self.condition.to_json(),
            "namespaceId": self.namespace_id,
            "enabledToolNamespaces": list(self.enabled_tool_namespaces),
            "grants": [g.to_json() for g in self.grants],
            "tools": [describe_tool(t) for t in sorted(self.tools.values(), key=lambda t: t.name)],
        }


def build_world(condition: WorldCondition | None = None, *, describe_only: bool = False) -> World:
    """A fresh world for one turn under ``condition``.

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
    tools = {t.name: t for t in registered_tools()}
    if condition.broker is not None:
        tools[BROKER_TOOL] = broker_tool()
    clock = OperationClock(NOW, moving=condition.expires_after_operations is not None, step_ms=STEP_MS)
    book = GrantBook(grants, actor=AGENT, owner=OWNER, clock=clock)
    return World(
        condition, grants, tools, state, book, agent=AGENT, owner=OWNER, now=NOW,
        namespace_id=NAMESPACE_ID, enabled_tool_namespaces=ENABLED_TOOL_NAMESPACES,
    )
