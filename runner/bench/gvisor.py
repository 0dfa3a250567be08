"""Item 7: each runnable column's cell under gVisor (``--runtime runsc``) against the same cell under runc.

For every column that is not declared unavailable and whose pinned image is built here, the escalation cell
(cooperative, scripted model) runs in this process (:func:`runner.bench.cell.running_cell`, what ``runner run``
pays per cell) under runc and under runsc, alternated (one warm-up pair, then runc before runsc, runsc before
runc, …) so that drift on the shared machine hits both alike; the figures are each column's median cell wall
under each runtime and their ratio, side by side. A cell that does not escalate is a
:class:`~runner.bench.figures.BenchError` for that column (its figures are reported as not measured, with the
reason), never a time. The engine must have runsc registered (``make engine RUNTIME=runsc``); without it the
section is not measured, with that fix.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

from runner.bench.cell import running_cell
from runner.bench.figures import BenchError, Figure, not_measured
from runner.bench.plan import Plan
from runner.bench.stats import median, ratio, samples
from runner.core.outcomes import JsonValue

if TYPE_CHECKING:
    from runner.engine import EngineClient
    from runner.images.settings import ImageSettings
    from runner.sandbox.backend import SandboxBackend

ITEM = 7


def runnable_harnesses() -> list[str]:
    """Every column that runs a turn here (not declared unavailable)."""
    from runner.harnesses.profile import find_profile, known_harnesses

    return [h for h in known_harnesses() if not find_profile(h).unavailable]


async def measure_runtime(
    client: EngineClient, backend: SandboxBackend, plan: Plan, run_id: str, scratch: Path,
    say: Callable[[str], None], images: ImageSettings,
) -> list[Figure]:
    from runner.images import current_keys, read_build
    from runner.sandbox.interface import Runtime

    backend.check_runtime(Runtime.RUNSC)  # RuntimeMissing names the fix: make engine RUNTIME=runsc
    from runner.harnesses.profile import find_profile

    figures: list[Figure] = []
    ratios: dict[str, float] = {}
    for harness in runnable_harnesses():
        image = find_profile(harness).image
        if read_build(image, images, current_keys(client, image, images).build_key) is None:
            figures += _not_measured(harness, f"its image ({image}) is not built here: run `make images` first")
            continue
        walls: dict[str, list[float]] = {Runtime.RUNC: [], Runtime.RUNSC: []}
        try:
            for rep in range(plan.runtime_reps + 1):  # the first pair warms the image and the probe up: not counted
                order = (Runtime.RUNC, Runtime.RUNSC) if rep % 2 else (Runtime.RUNSC, Runtime.RUNC)
                for runtime in order:  # ABBA: neither runtime always runs first
                    wall = await running_cell(backend, run_id, scratch / f"{harness}-{runtime}-{rep}", harness, runtime)
                    if rep:
                        walls[runtime].append(wall)
        except BenchError as err:
            say(f"[red]{harness}: not measured[/] — {err}")
            figures += _not_measured(harness, str(err))
            continue
        runc, runsc = median(walls[Runtime.RUNC]), median(walls[Runtime.RUNSC])
        slower = ratio(runsc, runc)
        if slower is not None:
            ratios[harness] = slower
        say(f"{harness}: runc {runc:.2f} s, runsc {runsc:.2f} s ({slower or 0:.2f}×)")
        note = f"median of {plan.runtime_reps}, alternated"
        figures += [
            Figure(f"runtime.{harness}.runc", ITEM, f"{harness} cell under runc", runc, "s",
                   "run_cell, escalation, cooperative, scripted model, --runtime runc", note,
                   {"samples": samples(walls[Runtime.RUNC])}),
            Figure(f"runtime.{harness}.runsc", ITEM, f"{harness} cell under runsc", runsc, "s",
                   "the same cell with --runtime runsc (gVisor)", note, {"samples": samples(walls[Runtime.RUNSC])}),
            Figure(f"runtime.{harness}.ratio", ITEM, f"{harness} runsc / runc", slower, "×",
                   "median runsc cell wall ÷ median runc cell wall"),
        ]
    if ratios:
        harnesses: dict[str, JsonValue] = dict(ratios)
        figures.append(Figure("runtime.ratio.median", ITEM, "runsc / runc, median over the columns",
                              median(list(ratios.values())), "×", "the median of the columns' ratios", "",
                              {"harnesses": harnesses}))
    return figures


def _not_measured(harness: str, why: str) -> list[Figure]:
    return [not_measured(f"runtime.{harness}.{key}", ITEM, f"{harness} {label}", unit, why)
            for key, label, unit in (("runc", "cell under runc", "s"), ("runsc", "cell under runsc", "s"),
                                     ("ratio", "runsc / runc", "×"))]
