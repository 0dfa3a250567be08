"""``runner run``: every selected cell, with bounded concurrency, resume, retries and a progress display.

- Concurrency: at most ``jobs`` cells at once, and at most ``per_harness`` cells of one CLI at once
  (two copies of one heavy CLI compete for the same cores).
- Resume: a cell whose ``result.json`` already holds the same plannable pins is not run again; with ``--trials N``
  each trial is its own cell directory (:func:`~runner.matrix.artifact.trial_dir`) and resume counts the finished
  ones, so a second invocation runs only the trials that are missing, failed on infrastructure or were interrupted.
- Trials of one cell run one after another in one task, never side by side (other cells still run beside them,
  under ``jobs`` and ``per_harness``). Side by side would be safe as far as state goes: every turn has its own
  world, envelope, latch, scripted model, socket directory and output directory, and shares only the read-only
  image and the engine. They are kept apart anyway so that no trial's timing (a deadline, a wind-down) depends
  on its sibling's load: on the scripted model the N trials are expected to be identical, and a difference is
  reported as a finding (nondeterminism in the runner or the CLI), not blamed on contention.
- An attempt is retried, with exponential backoff a bounded number of times, when its failure's kind says so
  (:attr:`~runner.matrix.result.CellResult.why`, the rules of :mod:`runner.conformance.failures`): the engine, the
  image, the box's limits and the vendor's API are retried; the CLI's conduct never is (a CLI that never opens its
  MCP session does not buy itself another try), nor a bug of runner's own. An infrastructure error that persists
  is reported as such, never graded as the CLI's behaviour.
- Every attempt is kept: each writes its own files in a cleared cell directory, an earlier attempt's moved to
  ``attempt-<n>/`` (:func:`~runner.matrix.artifact.keep_attempt`), and a cell that took more than one attempt lists
  them all in its result (``cellAttempts``: when each started, what it came to, what ended it). A CLI can make runner
  retry it (an MCP session it never opens), so a pass after a retry says so.
- A cell fails alone: anything raised while it runs is its infrastructure error
  (:func:`~runner.matrix.run_cell.run_cell`, and here once more for a cell runner given in its place); the other
  cells go on and the run's reports are written.
- Interrupted (Ctrl-C): running cells are cancelled, their containers removed by the turn's
  teardown, and each is written as ``interrupted`` so a rerun picks it up; finished cells stay.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
from tenacity import AsyncRetrying, retry_if_result, stop_after_attempt, wait_exponential

from runner.conformance.failures import TurnEvidence, classify
from runner.core.timeline import iso_utc
from runner.matrix.artifact import clear_cell, keep_attempt, read_cell, reusable, trial_dir, write_cell
from runner.matrix.plan import CellPlan
from runner.matrix.result import (
    INTERRUPTED,
    CellAttempt,
    CellPins,
    CellRef,
    CellResult,
    DeclaredGrade,
    FailureRecord,
    InfrastructureProblem,
)

if TYPE_CHECKING:
    from runner.images import ImageRecord
    from runner.sandbox.backend import SandboxBackend

CellRunner = Callable[[CellPlan, Path], Awaitable[CellResult]]
Planner = Callable[[CellPlan], CellPins]
Events = Callable[[str, CellPlan, CellResult | None], None]


@dataclass
class RunSummary:
    ran: list[str] = field(default_factory=list)
    reused: list[str] = field(default_factory=list)
    infrastructure: list[str] = field(default_factory=list)
    interrupted: list[str] = field(default_factory=list)
    results: dict[str, CellResult] = field(default_factory=dict)  # by plan label: the cell id (and trial after 1)


class ImagePins:
    """The planned pins of each cell for resume, the column's image built (or found) once per image, and only
    for the cells that run a turn: a declared cell needs no image."""

    def __init__(self, backend: SandboxBackend | None) -> None:
        self.backend = backend
        self.images: dict[str, ImageRecord] = {}

    def __call__(self, plan: CellPlan) -> CellPins:
        if not plan.runs_a_turn:
            return plan.planned_pins()
        image = plan.cell.profile.image
        if image not in self.images:
            assert self.backend is not None, "a cell that runs a turn needs an engine"
            self.images[image] = self.backend.prepare_image(image, plan.options.host.images)
        return plan.planned_pins(self.images[image])


def cell_dir(out: Path, plan: CellPlan) -> Path:
    """The directory of this plan's trial: ``<out>/<cell>/`` for trial 1, ``<out>/<cell>/trial-<k>/`` after."""
    return trial_dir(out / plan.id, plan.trial)


def series(plans: list[CellPlan]) -> list[list[CellPlan]]:
    """The plans grouped by cell, in order (a cell's trials one after another): what one task runs."""
    by_cell: dict[str, list[CellPlan]] = {}
    for plan in plans:
        by_cell.setdefault(plan.id, []).append(plan)
    return [sorted(trials, key=lambda p: p.trial) for trials in by_cell.values()]


async def run_matrix(
    plans: list[CellPlan], out: Path, run_cell: CellRunner, planned_pins: Planner, *,
    jobs: int = 2, per_harness: int = 1, retries: int = 2, events: Events = lambda *_: None,
) -> RunSummary:
    """Run every plan; the trials of one cell run one after another, never side by side (see the module)."""
    summary = RunSummary()
    everything = anyio.CapacityLimiter(max(1, jobs))
    per: dict[str, anyio.CapacityLimiter] = {}

    async def one(cell: CellPlan) -> None:
        directory = cell_dir(out, cell)
        existing = read_cell(directory)
        try:
            planned = planned_pins(cell)
        except Exception:  # the column's image cannot be had: the cell runs, and its result says why
            await anyio.lowlevel.checkpoint_if_cancelled()
            planned = None
        if planned is not None and reusable(existing, planned):
            assert existing is not None
            summary.reused.append(cell.label)
            summary.results[cell.label] = existing
            events("reused", cell, existing)
            return
        limiter = per.setdefault(cell.cell.profile.id, anyio.CapacityLimiter(max(1, per_harness)))
        async with everything, limiter:
            events("started", cell, None)
            try:
                result = await _with_retries(cell, directory, run_cell, retries, events)
            except anyio.get_cancelled_exc_class():
                with anyio.CancelScope(shield=True):
                    write_cell(directory, _interrupted(cell, existing))
                    summary.interrupted.append(cell.label)
                raise
        summary.results[cell.label] = result
        (summary.infrastructure if result.infrastructure_error else summary.ran).append(cell.label)
        events("finished", cell, result)

    async def trials(cell_plans: list[CellPlan]) -> None:
        for plan in cell_plans:
            await one(plan)

    async with anyio.create_task_group() as tg:
        for cell_plans in series(plans):
            tg.start_soon(trials, cell_plans)
    return summary


def retried(result: CellResult | None) -> bool:
    """Whether the attempt that came to ``result`` is tried again: its failure's kind says so."""
    why = result.why if result is not None else None
    return why is not None and why.retried


async def _with_retries(
    cell: CellPlan, directory: Path, run_cell: CellRunner, retries: int, events: Events
) -> CellResult:
    """Run the cell until it is graded, or its infrastructure errors use up ``retries``: the last attempt's result,
    with every attempt listed when there was more than one (see the module)."""
    result: CellResult | None = None
    attempts: list[CellAttempt] = []
    async for attempt in AsyncRetrying(
        retry=retry_if_result(retried),
        stop=stop_after_attempt(retries + 1),
        wait=wait_exponential(multiplier=1, max=20),
        retry_error_callback=lambda state: state.outcome.result() if state.outcome else None,
    ):
        with attempt:
            number = attempt.retry_state.attempt_number
            if number > 1:
                events("retrying", cell, result)
            started_at = iso_utc(time.time())
            result, kept = await _attempt(cell, directory, run_cell, number, started_at)
            if kept is not None:
                attempts[-1] = attempts[-1].model_copy(update={"files": kept})
            attempts.append(CellAttempt(attempt=number, started_at=started_at, status=result.status,
                                        infrastructure_error=result.infrastructure_error, failure=result.why,
                                        usage=result.usage))
        if attempt.retry_state.outcome is not None and not attempt.retry_state.outcome.failed:
            attempt.retry_state.set_result(result)
    assert result is not None
    if len(attempts) > 1:
        result = result.with_attempts(tuple(attempts))
        with suppress(OSError):  # a directory that takes no more files: the last attempt's own result stays
            write_cell(directory, result)
    return result


async def _attempt(
    cell: CellPlan, directory: Path, run_cell: CellRunner, number: int, started_at: str
) -> tuple[CellResult, str | None]:
    """One attempt, in a cell directory of its own: an earlier run's files removed before the first, the earlier
    attempt's kept in ``attempt-<n>/`` before a later one (where they went: the second value). Whatever it raises
    (but cancellation) is the cell's infrastructure error, written when it can be."""
    kept: str | None = None
    try:
        if number == 1:
            clear_cell(directory)
        else:
            kept = keep_attempt(directory, number - 1)
        result = await run_cell(cell, directory)
    except Exception as error:  # a cell fails alone
        await anyio.lowlevel.checkpoint_if_cancelled()  # a failure that came of a cancellation is the cancellation
        result = _failed(cell, error, started_at)
        with suppress(OSError):
            write_cell(directory, result)
    return result, kept


def _failed(plan: CellPlan, error: BaseException, started_at: str) -> CellResult:
    cell = plan.cell
    problem = InfrastructureProblem.of(error, plan.scrubber.text)
    found = classify(TurnEvidence(infrastructure_kind=problem.kind, infrastructure_detail=problem.detail))
    return CellResult(
        cell=CellRef(id=cell.id, case=cell.case.id, condition=cell.condition.id, harness=cell.profile.id),
        infrastructure_error=problem, failure=FailureRecord.of(found) if found else None, pins=plan.trial_pins,
        repro=plan.repro, started_at=started_at,
    )


def _interrupted(plan: CellPlan, existing: CellResult | None) -> CellResult:
    cell = plan.cell
    return CellResult(
        cell=CellRef(id=cell.id, case=cell.case.id, condition=cell.condition.id, harness=cell.profile.id),
        interrupted=True,
        grade=DeclaredGrade(status=INTERRUPTED, evidence="the run was interrupted while this cell was running"),
        pins=existing.pins if existing else plan.trial_pins,
        repro=plan.repro,
    )
