"""Two runs of a matrix side by side, read beyond noise: per harness, whether B's pass rate differs from A's (Fisher's
exact test on the two counts of runs that count toward a rate, :func:`runner.conformance.rates.compare_rates`), and
what changed in the harness's measured tool policy (:func:`runner.model.tool_policy.compare_policies`: a CLI bump
that gives its model a new built-in tool is a finding); per cell, the same test where either run has more than one
trial of it.

A rate holds only runs that count (an attempt the infrastructure ended says nothing about the CLI:
:func:`runner.matrix.report_figures.counts_toward_rate`). Which runs are compared is the caller's: two run
directories, each loaded as ``runner report`` loads one (:func:`runner.matrix.series.load_runs`).
"""

from __future__ import annotations

from dataclasses import dataclass

from runner.conformance.jsonmodel import JsonValue
from runner.conformance.rates import ALPHA, Comparison, compare_rates
from runner.matrix import report_figures as figures
from runner.matrix.result import CellResult
from runner.model.tool_policy import PolicyChange, compare_policies


@dataclass(frozen=True)
class HarnessChange:
    """One harness in A and B: its rate compared, and its tool policy's change (None: not measured in both)."""

    harness: str
    rate: Comparison
    policy: PolicyChange | None

    @property
    def findings(self) -> list[str]:
        return self.policy.findings() if self.policy is not None else []


@dataclass(frozen=True)
class RunComparison:
    harnesses: tuple[HarnessChange, ...]
    cells: tuple[tuple[str, Comparison], ...]  # cells with more than one trial in A or B
    only_in_a: tuple[str, ...]
    only_in_b: tuple[str, ...]

    @property
    def differs(self) -> bool:
        """Whether any harness's rate moved beyond noise, or any tool policy changed."""
        return any(h.rate.differs or h.findings for h in self.harnesses) or any(c.differs for _, c in self.cells)

    @property
    def dropped(self) -> list[str]:
        """The harnesses, then the cells, whose pass rate is lower in B beyond noise (what ``runner report --compare
        RUN`` exits 1 on): a rise, a move within noise or a tool policy change is read, not failed."""
        return ([h.harness for h in self.harnesses if h.rate.direction == "lower"]
                + [cell for cell, c in self.cells if c.direction == "lower"])

    def to_json(self) -> dict[str, JsonValue]:
        """The comparison as ``runner report --compare RUN --json`` prints it."""
        return {
            "differs": self.differs, "dropped": list(self.dropped),
            "harnesses": [{"harness": h.harness, "rate": h.rate.to_json(),
                           "toolPolicy": {"measured": h.policy is not None, "findings": list(h.findings)}}
                          for h in self.harnesses],
            "cells": [{"cell": cell, "rate": c.to_json()} for cell, c in self.cells],
            "onlyInA": list(self.only_in_a), "onlyInB": list(self.only_in_b),
        }


def compare_runs(a: list[CellResult], b: list[CellResult], alpha: float = ALPHA) -> RunComparison:
    """B against A, per harness and per cell (see the module)."""
    harnesses_a, harnesses_b = _by(a, lambda r: r.cell.harness), _by(b, lambda r: r.cell.harness)
    changes = []
    for harness in sorted(set(harnesses_a) & set(harnesses_b)):
        before, after = figures.last_policy(harnesses_a[harness]), figures.last_policy(harnesses_b[harness])
        policy = compare_policies(before.policy(), after.policy()) if before and after else None
        rate = compare_rates(figures.pass_rate(harnesses_a[harness]), figures.pass_rate(harnesses_b[harness]), alpha)
        changes.append(HarnessChange(harness, rate, policy))
    cells_a, cells_b = _by(a, lambda r: r.id), _by(b, lambda r: r.id)
    cells = tuple(
        (cell, compare_rates(figures.pass_rate(cells_a[cell]), figures.pass_rate(cells_b[cell]), alpha))
        for cell in sorted(set(cells_a) & set(cells_b)) if max(len(cells_a[cell]), len(cells_b[cell])) > 1
    )
    return RunComparison(tuple(changes), cells, tuple(sorted(set(cells_a) - set(cells_b))),
                         tuple(sorted(set(cells_b) - set(cells_a))))


def _by(runs: list[CellResult], key: object) -> dict[str, list[CellResult]]:
    found: dict[str, list[CellResult]] = {}
    for run in runs:
        found.setdefault(key(run), []).append(run)  # type: ignore[operator]
    return found


def comparison_markdown(found: RunComparison, a_label: str = "A", b_label: str = "B") -> str:
    """The comparison as Markdown: per harness its rate in A and B and the verdict, then the tool policy findings,
    then the cells whose rate moved beyond noise."""
    out = [f"# {b_label} against {a_label}", "", "| Harness | Rate change | Tool policy |", "|---|---|---|"]
    for change in found.harnesses:
        policy = "; ".join(change.findings) or ("unchanged" if change.policy is not None else "not measured in both")
        out.append(f"| {change.harness} | {change.rate.sentence} | {policy} |")
    moved = [(cell, c) for cell, c in found.cells if c.differs]
    if moved:
        out += ["", "## Cells whose rate moved beyond noise", ""]
        out += [f"- `{cell}`: {c.sentence}" for cell, c in moved]
    if found.only_in_a or found.only_in_b:
        out += ["", f"Only in {a_label}: {len(found.only_in_a)} cells; only in {b_label}: "
                    f"{len(found.only_in_b)} cells."]
    return "\n".join(out) + "\n"
