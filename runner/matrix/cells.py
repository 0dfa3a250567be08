"""The cells of a matrix: rows (case × condition) by columns (harnesses), with the filters every
command shares (``--harness ID,...|all``, ``--case ID,...|all``). Pure apart from reading profiles.

Whether a cell runs a turn is decided here, once (:meth:`MatrixCell.disposition`): a row the case set declares
``not_implemented``, a row this column structurally cannot run (``unsupported``) and every cell of an
unavailable column are graded from what is declared, with no engine, no image and no job of their own.
A row whose turn the kernel refuses at admission (``authority-unavailable``: the grant store is down when the
turn loads its authority) starts no runtime upstream, so it starts no container here either: it is
``refused-at-admission``, graded from the kernel's own refusal, computed in-process (the pure core admits or
refuses the turn), with no engine, no image and no CI job -- the report job writes it with the declared cells.
Every command and the CI plan ask the cell (or its plan, which asks the cell).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path

from runner.conformance.cases import CASES, Case, Condition, get_case
from runner.conformance.columns import HarnessLimits, limits_for
from runner.core.world import WorldCondition, build_world
from runner.harnesses.profile import Profile, find_profile, known_harnesses


class Disposition(StrEnum):
    """What becomes of a cell: a turn, or a grade from what is declared."""

    TURN = "turn"
    NOT_IMPLEMENTED = "not-implemented"  # the case set declares the row not implemented
    UNSUPPORTED = "unsupported"  # the column structurally cannot run the row
    UNAVAILABLE = "unavailable"  # the column cannot run here at all
    REFUSED_AT_ADMISSION = "refused-at-admission"  # the kernel refuses the turn before any runtime starts


@dataclass(frozen=True)
class MatrixCell:
    case: Case
    condition: Condition
    profile: Profile

    @property
    def id(self) -> str:
        return f"{self.case.id}.{self.condition.id}.{self.profile.id}"

    @property
    def limits(self) -> HarnessLimits:
        """What this column can do on this row (:func:`runner.conformance.columns.limits_for`)."""
        return limits_for(self.case, self.condition, self.profile.issues_uncatalogued)

    def disposition(self, run_unsupported: bool = False) -> Disposition:
        """The one rule for whether this cell runs a turn. ``run_unsupported`` (``runner exec``, one cell asked for
        by name) runs an unsupported row anyway, on a column that is available (its grade still says
        not_applicable); a declared row, or an unavailable column, never runs."""
        if self.case.not_implemented is not None:
            return Disposition.NOT_IMPLEMENTED
        if self.limits.unsupported is not None and (self.profile.unavailable or not run_unsupported):
            return Disposition.UNSUPPORTED
        if self.profile.unavailable:
            return Disposition.UNAVAILABLE
        if refused_at_admission(self.condition):
            return Disposition.REFUSED_AT_ADMISSION
        return Disposition.TURN

    def runs_a_turn(self, run_unsupported: bool = False) -> bool:
        """True when this cell runs a turn; False when its grade is declared (no engine needed)."""
        return self.disposition(run_unsupported) is Disposition.TURN


@functools.cache
def _refused(world: WorldCondition) -> bool:
    return not build_world(world).admission.admitted


def refused_at_admission(condition: Condition) -> bool:
    """Whether the kernel refuses this row's (first) turn at admission, whatever the column: asked of the pure
    core, so the plan, CI and the report agree on it without running anything."""
    return _refused(condition.world)


def split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def select_harnesses(spec: str, profiles_dirs: Sequence[Path] = ()) -> list[Profile]:
    """``all`` (every profile found, unavailable ones included: they are reported, not run) or a list."""
    names = known_harnesses(profiles_dirs) if spec == "all" else split(spec)
    return [find_profile(name, profiles_dirs) for name in names]


def select_cases(spec: str) -> list[Case]:
    return list(CASES.values()) if spec == "all" else [get_case(name) for name in split(spec)]


def unique(found: list[MatrixCell]) -> list[MatrixCell]:
    """Each cell once (``--harness codex,codex`` must not run or plan a cell twice), order kept."""
    first: dict[str, MatrixCell] = {}
    for cell in found:
        first.setdefault(cell.id, cell)
    return list(first.values())


def cells(harnesses: str = "all", cases: str = "all", profiles_dirs: Sequence[Path] = ()) -> list[MatrixCell]:
    """Every cell, row-major in case-set order, columns in profile order (reference first), each once
    (``profiles_dirs``: where to look for profiles before the shipped ones)."""
    profiles = sorted(select_harnesses(harnesses, profiles_dirs), key=lambda p: (p.id != "reference", p.id))
    return unique([
        MatrixCell(case, condition, profile)
        for case in select_cases(cases)
        for condition in case.conditions
        for profile in profiles
    ])
