"""The turn's catalogue, resolved once per turn (ADR 0026), hashed (§6.6), and name resolution (§3.5)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from runner.core.canonical import sha256_hex
from runner.core.tools import PublishedTool, ToolDefinition, portable_name
from runner.core.world import World

MAX_CATALOGUE = 512


@dataclass(frozen=True)
class Catalogue:
    execution_id: str
    tools: tuple[PublishedTool, ...]  # sorted by name
    catalog_hash: str  # lowercase hex

    @property
    def names(self) -> frozenset[str]:
        return frozenset(t.name for t in self.tools)

    def get(self, name: str) -> PublishedTool | None:
        return next((t for t in self.tools if t.name == name), None)

    def resolve(self, sent: str) -> str:
        """The canonical name for a ``tools/call`` name: exact, then a unique portable match, then raw.

        An unknown name is never rejected here: passed on unchanged, it reaches the envelope and is
        refused and recorded there.
        """
        if sent in self.names:
            return sent
        matches = [t.name for t in self.tools if portable_name(t.name) == sent]
        return matches[0] if len(matches) == 1 else sent


def catalog_hash(tools: list[PublishedTool] | tuple[PublishedTool, ...]) -> str:
    """SHA-256 of the canonical JSON of the published tools sorted by name (hashed fields only)."""
    return sha256_hex([t.hashed_fields() for t in sorted(tools, key=lambda t: t.name)])


def resolve_catalogue(
    world: World, execution_id: str, requested: list[str] | None = None,
    registry: Mapping[str, ToolDefinition] | None = None,
) -> Catalogue:
    """Registered (in ``registry``, the turn's one listing; the world's tools as registered by default), in an enabled
    namespace, discoverable under some grant the host's ceiling lets stand, and requested."""
    wanted = set(world.requested_tools if requested is None else requested)
    tools = world.declared_registry() if registry is None else registry
    published = sorted(
        (
            tool.published()
            for tool in tools.values()
            if tool.name in wanted
            and tool.namespace in world.enabled_tool_namespaces
            and world.book.discoverable(tool.resource_namespace, tool.action, tool.ceiling)
        ),
        key=lambda t: t.name,
    )
    if len(published) > MAX_CATALOGUE:
        raise ValueError(f"a catalogue holds at most {MAX_CATALOGUE} tools")
    return Catalogue(execution_id, tuple(published), catalog_hash(published))
