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


@dataclass(frozen=True)
class HarnessPackage:
    """The stream interpreters a package provides, by the name a profile's ``interpreter:`` gives, and the session
    readers of those interpreters whose CLI keeps its turn's events in a log read after it exits (a quirk: dsh)."""

    interpreters: Mapping[str, Interpreter] = field(default_factory=dict)
    session_readers: Mapping[str, SessionReader] = field(default_factory=dict)

    def __post_init__(self) -> None:
        orphans = sorted(set(self.session_readers) - set(self.interpreters))
        if orphans:
            raise ValueError(f"a session reader for an interpreter this package does not provide: {orphans}")
