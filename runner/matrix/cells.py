"""The cells of a matrix: rows (case × condition) by columns (harnesses), with the filters every
command shares (``--harness ID,...|all``, ``--case ID,...|all``). Pure apart from reading profiles.

Whether a cell runs a turn is decided here, once (:func:`runs_a_turn`): a row the case set declares
``not_implemented``, a row this column structurally cannot run (``unsupported``) and every cell of an
unavailable column are graded from what is declared, with no engine, no image and no job of their own.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from runner.conformance.cases import CASES, Case, Condition, get_case
from runner.conformance.columns import limits_for
from runner.harnesses.profile import Profile, find_profile, known_harnesses


@dataclass(frozen=True)
class Cell:
    case: Case
    condition: Condition
    profile: Profile

    @property
    def id(self) -> str:
        return f"{self.case.id}.{self.condition.id}.{self.profile.id}"


def runs_a_turn(cell: Cell) -> bool:
    """True when the matrix runs a turn for this cell; False when its grade is declared (no engine needed)."""
    if cell.profile.unavailable or cell.case.not_implemented is not None:
        return False
    return limits_for(cell.case, cell.condition, cell.profile.issues_uncatalogued).unsupported is None


def split(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


def select_harnesses(spec: str, profiles_dir: Path | None = None) -> list[Profile]:
    """``all`` (every profile found, unavailable ones included: they are reported, not run) or a list."""
    names = known_harnesses(profiles_dir) if spec == "all" else split(spec)
    return [find_profile(name, profiles_dir) for name in names]


def select_cases(spec: str) -> list[Case]:
    return list(CASES.values()) if spec == "all" else [get_case(name) for name in split(spec)]


def unique(found: list[Cell]) -> list[Cell]:
    """Each cell once (``--harness codex,codex`` must not run or plan a cell twice), order kept."""
    first: dict[str, Cell] = {}
    for cell in found:
        first.setdefault(cell.id, cell)
    return list(first.values())


def cells(harnesses: str = "all", cases: str = "all", profiles_dir: Path | None = None) -> list[Cell]:
    """Every cell, row-major in case-set order, columns in profile order (reference first), each once."""
    profiles = sorted(select_harnesses(harnesses, profiles_dir), key=lambda p: (p.id != "reference", p.id))
    return unique([
        Cell(case, condition, profile)
        for case in select_cases(cases)
        for condition in case.conditions
        for profile in profiles
    ])
