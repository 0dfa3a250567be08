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

from runner.harnesses.stream import Interpreter, SessionReader
from runner.model.names import ToolNaming


@dataclass(frozen=True)
class HarnessPackage:
    """The stream interpreters a package provides, by the name a profile's ``interpreter:`` gives, the session
    readers of those interpreters whose CLI keeps its turn's events in a log read after it exits (a quirk: dsh), and
    how its CLI names the MCP tools it offers its model (``tool_naming``, :mod:`runner.model.names`: the scripted
    model calls them by those names; a harness that talks to no model names none)."""

    interpreters: Mapping[str, Interpreter] = field(default_factory=dict)
    session_readers: Mapping[str, SessionReader] = field(default_factory=dict)
    tool_naming: ToolNaming = field(default_factory=ToolNaming)

    def __post_init__(self) -> None:
        orphans = sorted(set(self.session_readers) - set(self.interpreters))
        if orphans:
            raise ValueError(f"a session reader for an interpreter this package does not provide: {orphans}")
