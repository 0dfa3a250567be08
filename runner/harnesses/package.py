"""What one harness's package gives the runner: one :class:`HarnessPackage` record, its module-level ``HARNESS``.

A harness is one folder, ``runner/harnesses/<package>/`` (its id with ``-`` as ``_``): this package, its profile(s)
beside it (``<id>.yaml``), its image folder(s) (``images/<image>/``) and its evidence (``README.md``); nothing else in
``runner/`` names it. Each package sets ``HARNESS`` in its ``__init__``, and :mod:`runner.harnesses.interpreters`
finds them all by iterating the packages, so a new harness adds no line anywhere else. A profile names what it uses
from here (``interpreter: <name>``), and is refused at load when that name is in no package.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from runner.core.outcomes import JsonValue
from runner.harnesses.stream import Interpreter, SessionReader
from runner.model.names import ToolNaming
from runner.model.tool_policy import Inventory, Mode, ToolPolicy


@dataclass(frozen=True)
class DeclaredPolicy:
    """What a harness *declares* its model can reach besides SharedOS (upstream's ADR 0027): the mode, the inventory,
    the CLI's own tools and proxies (``harness_local``), the endpoints it reaches without the broker
    (``external_direct``) and the evidence of the declaration (where it was measured: its README's dated section).

    runner declares from what it measured (each README's "What it offers its model"), and measures again in every
    turn (``system.toolPolicy``, :mod:`runner.model.tool_policy`): a cell whose measured mode is not its harness's
    declared one is a finding in the report (a CLI bump that adds a tool, a flag that stopped removing one). A
    harness that declares nothing is :data:`UNDECLARED`, ``unknown``, as upstream's adapter defaults "even when
    launch flags disable named tools". Upstream's own rules hold (checked when declared)."""

    mode: Mode
    inventory: Inventory
    harness_local: tuple[str, ...] = ()
    external_direct: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        self.policy()

    def policy(self, server: str = "sharedos") -> ToolPolicy:
        """The declaration as upstream's record, the catalogue reached as ``server`` (ValueError: its rules refuse
        it)."""
        return ToolPolicy(self.mode, self.inventory, (server,), self.harness_local, self.external_direct, self.evidence)

    def to_json(self) -> dict[str, JsonValue]:
        return {"mode": self.mode, "inventory": self.inventory, "harnessLocal": [*self.harness_local],
                "externalDirect": [*self.external_direct], "evidence": [*self.evidence]}


UNDECLARED = DeclaredPolicy("unknown", "unknown")  # ADR 0027: the default of a harness that declares nothing


@dataclass(frozen=True)
class HarnessPackage:
    """The stream interpreters a package provides, by the name a profile's ``interpreter:`` gives, the session
    readers of those interpreters whose CLI keeps its turn's events in a log read after it exits (a quirk: dsh), and
    how its CLI names the MCP tools it offers its model (``tool_naming``, :mod:`runner.model.names`: the scripted
    model calls them by those names; a harness that talks to no model names none), and the tool policy each of its
    profiles declares, by profile id (``tool_policy``, :class:`DeclaredPolicy`; a profile not named declares none:
    ``unknown``)."""

    interpreters: Mapping[str, Interpreter] = field(default_factory=dict)
    session_readers: Mapping[str, SessionReader] = field(default_factory=dict)
    tool_naming: ToolNaming = field(default_factory=ToolNaming)
    tool_policy: Mapping[str, DeclaredPolicy] = field(default_factory=dict)

    def __post_init__(self) -> None:
        orphans = sorted(set(self.session_readers) - set(self.interpreters))
        if orphans:
            raise ValueError(f"a session reader for an interpreter this package does not provide: {orphans}")
