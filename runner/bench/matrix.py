"""Items 3 and 4: matrix throughput at ``-j 1`` and ``-j 2`` on the scripted model, and the runner's peak RSS.

``runner run --harness reference`` with ``-j 1`` and with ``-j 2`` (``--per-harness`` raised with it,
else one column never runs two cells at once), each into a fresh directory; only cells that ran a
turn count. Peak RSS is ``wait4``'s ``ru_maxrss`` of the runner process (as ``/usr/bin/time -v``
reports it; containers are the engine's children, not runner's, so they are not in it), during the
``-j 2`` matrix and during a ``flood`` turn.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from runner.bench.figures import BenchError, Figure
from runner.bench.plan import Plan
from runner.bench.process import Measured, run_measured, runner_command
from runner.bench.stats import ratio
from runner.core.outcomes import JsonValue


def count_turn_cells(run_dir: Path) -> dict[str, int]:
    """Cells of a ``runner run`` directory: how many ran a turn, how many were declared, how many failed infra."""
    counts = {"turn": 0, "declared": 0, "infrastructure": 0}
    for result in sorted(run_dir.glob("*/result.json")):
        try:
            data = json.loads(result.read_text())
        except (OSError, ValueError):
            continue
        if data.get("infrastructureError"):
            counts["infrastructure"] += 1
        elif "turn" in data:
            counts["turn"] += 1
        else:
            counts["declared"] += 1
    return counts


def measure_matrix(plan: Plan, scratch: Path, say: Callable[[str], None]) -> list[Figure]:
    runs: dict[int, tuple[Measured, dict[str, int]]] = {}
    for jobs in (1, 2):
        out = scratch / f"matrix-j{jobs}"
        argv = [*runner_command(), "run", "--harness", "reference", "--case", plan.matrix_cases,
                "-j", str(jobs), "--per-harness", str(jobs), "--out", str(out)]
        say(f"matrix -j {jobs}: {' '.join(argv[1:])}")
        measured = run_measured(argv, timeout=600.0)
        counts = count_turn_cells(out)
        if measured.returncode != 0 or measured.timed_out or counts["turn"] == 0:
            raise BenchError(f"runner run -j {jobs} exited {measured.returncode} "
                             f"({counts}): {measured.stderr_tail()}")
        runs[jobs] = (measured, counts)
    rate = {j: counts["turn"] / (m.wall / 60) for j, (m, counts) in runs.items()}
    how = "runner run --harness reference --case {cases} -j N --per-harness N; turn cells ÷ wall minutes"
    how = how.format(cases=plan.matrix_cases if plan.matrix_cases == "all" else "<quick subset>")
    detail: dict[str, dict[str, JsonValue]] = {
        f"j{j}": {"wallSeconds": round(m.wall, 2), "cells": {**c}, "peakRssMiB": round(m.maxrss_mib, 1)}
        for j, (m, c) in runs.items()
    }
    j2 = runs[2][0]
    return [
        Figure("matrix.j1.rate", 3, "matrix -j 1", rate[1], "cells/min", how, detail=detail["j1"]),
        Figure("matrix.j2.rate", 3, "matrix -j 2", rate[2], "cells/min", how, detail=detail["j2"]),
        Figure("matrix.speedup", 3, "matrix speedup -j 2 / -j 1", ratio(rate[2], rate[1]), "×",
               "cells/min at -j 2 ÷ cells/min at -j 1"),
        Figure("rss.matrix.j2", 4, "peak RSS, runner run -j 2", j2.maxrss_mib, "MiB",
               "wait4 ru_maxrss of the runner process (containers excluded)",
               detail={"j1PeakRssMiB": round(runs[1][0].maxrss_mib, 1)}),
    ]


def measure_flood(scratch: Path) -> list[Figure]:
    argv = [*runner_command(), "exec", "--harness", "reference", "--case", "escalation", "--behaviour", "flood",
            "--json", "--out", str(scratch / "flood")]
    measured = run_measured(argv, timeout=180.0)
    try:
        status = json.loads(measured.stdout).get("status")
    except ValueError:
        status = None
    if measured.returncode != 0 or status != "escalated":
        raise BenchError(f"the flood turn exited {measured.returncode} with status {status!r}: "
                         f"{measured.stderr_tail()}")
    stdout_log = scratch / "flood" / "stdout.log"
    return [Figure("rss.flood", 4, "peak RSS, flood turn (50 MB stdout)", measured.maxrss_mib, "MiB",
                   "wait4 ru_maxrss of runner exec --behaviour flood (containers excluded)",
                   detail={"wallSeconds": round(measured.wall, 2),
                           "stdoutLogBytes": stdout_log.stat().st_size if stdout_log.exists() else None})]
