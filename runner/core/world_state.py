"""The world's mutable state: what the tool handlers read and change (:mod:`runner.core.world.workspace` seeds it and
holds the handlers). Its own module, below both :mod:`runner.core.tools` (whose :class:`~runner.core.tools.ToolContext`
carries it) and :mod:`runner.core.world`, so that neither imports the other back."""

from __future__ import annotations

from dataclasses import dataclass, field

from runner.core.messaging import RouteLeaseTransport
from runner.core.outcomes import JsonValue


@dataclass
class WorldState:
    """The world's mutable state; only tool handlers change it.

    ``snapshots`` maps a path to the snapshot ids taken of it, in order; every seeded file already
    has ``snapshot-1``, so a rollback always has something real to name (upstream's file store).
    """

    files: dict[tuple[str, ...], str]
    snapshots: dict[tuple[str, ...], list[str]] = field(default_factory=dict)
    messages: list[dict[str, JsonValue]] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)
    transport: RouteLeaseTransport = field(default_factory=RouteLeaseTransport)
