"""A figure of the bench, its target and its verdict (pure).

Every figure is a value with its unit, how it was taken and, when the key has one in :data:`TARGETS`,
a target and a verdict (``PASS`` / ``MISS``; ``not measured`` when this run could not take it, ``info``
for a figure without a target).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal, TypedDict

from runner.core.outcomes import JsonValue

PASS, MISS, NOT_MEASURED, INFO = "PASS", "MISS", "not measured", "info"

Op = Literal["<", "<=", ">", ">="]


class TargetRecord(TypedDict):
    op: str
    threshold: float


class FigureRecord(TypedDict):
    """A figure as the bench document holds it (:meth:`Figure.to_json`)."""

    key: str
    item: int
    label: str
    value: float | None
    unit: str
    target: TargetRecord | None
    verdict: str
    how: str
    note: str
    detail: dict[str, JsonValue]


@dataclass(frozen=True)
class Target:
    op: Op
    threshold: float

    def met(self, value: float) -> bool:
        if self.op == "<":
            return value < self.threshold
        if self.op == "<=":
            return value <= self.threshold
        if self.op == ">":
            return value > self.threshold
        return value >= self.threshold

    def __str__(self) -> str:
        return f"{self.op} {self.threshold:g}"

    def to_json(self) -> TargetRecord:
        return {"op": self.op, "threshold": self.threshold}


def verdict(value: float | None, target: Target | None) -> str:
    if value is None:
        return NOT_MEASURED
    if target is None:
        return INFO
    return PASS if target.met(value) else MISS


TARGETS: dict[str, Target] = {
    "mcp.real.p50": Target("<", 1.0),  # ms
    "mcp.ratio.p50": Target("<", 4.0),
    "cell.ratio.median": Target("<", 1.3),
    "cell.exec.ratio": Target("<", 1.3),  # the whole runner exec process against the same floor
    "matrix.speedup": Target(">=", 1.6),
    "rss.flood": Target("<", 200.0),  # MiB
    "rss.matrix.j2": Target("<", 300.0),  # MiB
    "images.warm": Target("<", 5.0),  # s
    "startup.help.ratio": Target("<", 5.0),  # runner --help ÷ python -c pass
    "startup.cases.ratio": Target("<", 5.0),  # runner cases ÷ python -c pass
    # a cell under gVisor ÷ the same cell under runc, median over the columns: the kernel of its own that live
    # mode is recommended to run under may cost a cell up to twice its time, not more
    "runtime.ratio.median": Target("<=", 2.0),
    # runner's own share of a turn (its wall outside the container's start → exit), the worst column's: a runner exec
    # process (a Python process that starts, imports and serves MCP) and a cell in a running runner run
    "phases.runnerExec.worst": Target("<=", 0.8),  # s
    "phases.runnerRun.worst": Target("<=", 0.3),  # s
}


# targets every column's figure of the phases section has (``phases.<column>.<suffix>``)
COLUMN_TARGETS: dict[str, Target] = {
    "runner.exec": Target("<=", 0.8),  # s: runner's share of a runner exec process (wall − container start → exit)
    "runner.run": Target("<=", 0.3),  # s: the same per cell in a running runner run
    "boot.excess": Target("<=", 1.0),  # s: a CLI's start → first model request beyond its bare --version
}


def target_of(key: str) -> Target | None:
    """The target of a figure: its own, or the one its column's kind of figure has."""
    if key in TARGETS:
        return TARGETS[key]
    parts = key.split(".", 2)
    return COLUMN_TARGETS.get(parts[2]) if len(parts) == 3 and parts[0] == "phases" else None


@dataclass
class Figure:
    key: str
    item: int
    label: str
    value: float | None
    unit: str
    how: str = ""
    note: str = ""
    detail: dict[str, JsonValue] = field(default_factory=dict)

    @property
    def target(self) -> Target | None:
        return target_of(self.key)

    @property
    def verdict(self) -> str:
        return verdict(self.value, self.target)

    def to_json(self) -> FigureRecord:
        return {
            "key": self.key,
            "item": self.item,
            "label": self.label,
            "value": None if self.value is None else round(self.value, 4),
            "unit": self.unit,
            "target": self.target.to_json() if self.target else None,
            "verdict": self.verdict,
            "how": self.how,
            "note": self.note,
            "detail": self.detail,
        }


def not_measured(key: str, item: int, label: str, unit: str, why: str) -> Figure:
    return Figure(key, item, label, None, unit, note=why)


class BenchError(Exception):
    """A measurement could not be taken (its figures are reported as not measured, with this reason)."""
