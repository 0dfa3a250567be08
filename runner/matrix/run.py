"""``runner run``: every selected cell, with bounded concurrency, resume, retries and a progress display.

- Concurrency: at most ``jobs`` cells at once, and at most ``per_harness`` cells of one CLI at once
  (two copies of one heavy CLI compete for the same cores).
- Resume: a cell whose ``result.json`` already holds the same plannable pins is not run again.
- Infrastructure failures (the engine refused, an image is missing, the MCP server never connected)
  are retried with exponential backoff a bounded number of times; if they persist the cell is
  reported as an infrastructure error, never graded as the CLI's behaviour.
- Interrupted (Ctrl-C): running cells are cancelled, their containers removed by the turn's
  teardown, and each is written as ``interrupted`` so a rerun picks it up; finished cells stay.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
from tenacity import AsyncRetrying, retry_if_result, stop_after_attempt, wait_exponential

from runner.matrix.artifact import read_cell, reusable, write_cell
from runner.matrix.cells import Cell

CellRunner = Callable[[Cell, Path], Awaitable[dict[str, Any]]]
Planner = Callable[[Cell], dict[str, Any]]
Events = Callable[[str, Cell, dict[str, Any] | None], None]


@dataclass
class RunSummary:
    ran: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    infrastructure: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    results: dict[str, dict[str, Any]] = field(default_factory=dict)


def cell_dir(out: Path, cell: Cell) -> Path:
    return out / cell.id


async def run_matrix(
    cells: list[Cell], out: Path, run_cell: CellRunner, planned_pins: Planner, *,
    jobs: int = 2, per_harness: int = 1, retries: int = 2, events: Events = lambda *_: None,
) -> RunSummary:
    summary = RunSummary()
    everything = anyio.CapacityLimiter(max(1, jobs))
    per: dict[str, anyio.CapacityLimiter] = {}

    async def one(cell: Cell) -> None:
        directory = cell_dir(out, cell)
        existing = read_cell(directory)
        if reusable(existing, planned_pins(cell)):
            assert existing is not None
            summary.reused.append(cell.id)
            summary.results[cell.id] = existing
            events("reused", cell, existing)
            return
        limiter = per.setdefault(cell.profile.id, anyio.CapacityLimiter(max(1, per_harness)))
        async with everything, limiter:
            events("started", cell, None)
            try:
                result = await _with_retries(cell, directory, run_cell, retries, events)
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    write_cell(directory, _interrupted(cell, existing))
                    summary.interrupted.append(cell.id)
                raise
        summary.results[cell.id] = result
        (summary.infrastructure if result.get("infrastructureError") else summary.ran).append(cell.id)
        events("finished", cell, result)

    async with anyio.create_task_group() as tg:
        for cell in cells:
            tg.start_soon(one, cell)
    return summary


async def _with_retries(
    cell: Cell, directory: Path, run_cell: CellRunner, retries: int, events: Events
) -> dict[str, Any]:
    result: dict[str, Any] = {}
    async for attempt in AsyncRetrying(
        retry=retry_if_result(lambda r: bool(r.get("infrastructureError"))),
        stop=stop_after_attempt(retries + 1),
        wait=wait_exponential(multiplier=1, max=20),
        retry_error_callback=lambda state: state.outcome.result() if state.outcome else {},
    ):
        with attempt:
            if attempt.retry_state.attempt_number > 1:
                events("retrying", cell, result)
            result = await run_cell(cell, directory)
        if attempt.retry_state.outcome is not None and not attempt.retry_state.outcome.failed:
            attempt.retry_state.set_result(result)
    return result


def _interrupted(cell: Cell, existing: dict[str, Any] | None) -> dict[str, Any]:
    return {
        "version": 1,
        "cell": cell.to_json(),
        "interrupted": True,
        "grade": {"status": "interrupted", "evidence": "the run was interrupted while this cell was running"},
        "pins": (existing or {}).get("pins", {}),
        "repro": f"runner exec --harness {cell.profile.id} --case {cell.case.id} --condition {cell.condition.id}",
    }
