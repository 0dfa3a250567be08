"""What one bench run measures and how large its samples are (``--quick``, ``--only``)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from runner.core.outcomes import JsonValue

SECTIONS = ("mcp", "cell", "matrix", "flood", "images", "startup", "runtime", "phases")
QUICK_MATRIX_CASES = "escalation,hidden-tool,forged-grant,read-to-mutation,namespace-crossing,grant-material"


@dataclass(frozen=True)
class Plan:
    quick: bool
    sections: tuple[str, ...]
    mcp_warmup: int
    mcp_calls: int
    cell_reps: int
    matrix_cases: str  # "all" or a comma-separated list
    startup_reps: int
    runtime_reps: int = 2  # cells per column and runtime (runc and runsc alternated), after one warm-up pair
    phase_reps: int = 3  # turns per column and kind (exec, in-process cell, bare boot), after one warm-up round
    phase_harnesses: tuple[str, ...] = ()  # the columns the phases section measures (empty: every runnable one)

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "quick": self.quick, "sections": list(self.sections), "mcpWarmup": self.mcp_warmup,
            "mcpCalls": self.mcp_calls, "cellRepetitions": self.cell_reps, "matrixCases": self.matrix_cases,
            "startupRepetitions": self.startup_reps, "runtimeRepetitions": self.runtime_reps,
            "phaseRepetitions": self.phase_reps, "phaseHarnesses": list(self.phase_harnesses),
        }


def plan_for(quick: bool, only: Iterable[str] | None = None, harnesses: Iterable[str] = ()) -> Plan:
    wanted = None if only is None else set(only)
    sections = tuple(s for s in SECTIONS if wanted is None or s in wanted)
    if quick:
        return Plan(True, sections, mcp_warmup=10, mcp_calls=50, cell_reps=3, matrix_cases=QUICK_MATRIX_CASES,
                    startup_reps=5, runtime_reps=1, phase_reps=1, phase_harnesses=tuple(harnesses))
    return Plan(False, sections, mcp_warmup=20, mcp_calls=200, cell_reps=5, matrix_cases="all", startup_reps=11,
                runtime_reps=3, phase_harnesses=tuple(harnesses))
