"""Run and grade one cell, and write its directory. ``runner exec``, ``runner run`` and ``runner repro`` all go
through :func:`run_cell` with a :class:`~runner.matrix.plan.CellPlan`, so their artifacts are the same.

A row that is ``not_implemented``, or ``unsupported`` on this column, is written without running anything; an
unavailable column is written as such; everything else runs one turn, is graded by the judge from the turn's
record, and carries every pin. ``image`` is the column's image when the caller already resolved it (a matrix
does, once per image, for its resume check); otherwise it is found or built here.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

from runner.conformance.judge import grade_cell, not_run_cell
from runner.core.timeline import iso_utc
from runner.matrix.artifact import write_cell
from runner.matrix.cells import Disposition
from runner.matrix.plan import CellPlan
from runner.matrix.result import (
    UNAVAILABLE,
    CellPins,
    CellRef,
    CellResult,
    DeclaredGrade,
    GradeRecord,
    InfrastructureProblem,
    ModelRecord,
    RowDescription,
    TurnSummary,
)
from runner.sandbox.engine import EngineError
from runner.turn.runtime import TurnReport, TurnRequest, run_turn

if TYPE_CHECKING:
    from runner.sandbox.engine import EngineClient
    from runner.sandbox.images import ImageRecord


def _row(plan: CellPlan) -> RowDescription:
    case = plan.cell.case
    return RowDescription(kind=case.kind, invariant=case.invariant, expected_outcome=case.expected_outcome,
                          condition=plan.cell.condition.description)


def _base(
    plan: CellPlan, pins: CellPins, *, grade: GradeRecord | None = None,
    infrastructure_error: InfrastructureProblem | None = None, turn: TurnSummary | None = None,
    model: ModelRecord | None = None, files: dict[str, str] | None = None, transport: str | None = None,
    started_at: str | None = None,
) -> CellResult:
    """The cell's result; ``started_at``: its turn's start (now, for a cell that ran no turn)."""
    cell = plan.cell
    return CellResult(
        cell=CellRef(id=cell.id, case=cell.case.id, condition=cell.condition.id, column=cell.profile.id),
        row=_row(plan), pins=pins, repro=plan.repro, deadline_seconds=plan.options.deadline,
        started_at=started_at or iso_utc(time.time()), grade=grade,
        infrastructure_error=infrastructure_error, turns=(turn,) if turn else (), model=model, files=files,
        transport=transport,
    )


def _problem(error: Exception) -> InfrastructureProblem:
    return InfrastructureProblem(kind=type(error).__name__, detail=str(error))


async def run_cell(
    client: EngineClient | None, plan: CellPlan, directory: Path,
    progress: Callable[[str], None] = lambda _: None, image: ImageRecord | None = None,
) -> tuple[CellResult, TurnReport | None]:
    """Run (or declare) one cell, write ``result.json`` and ``repro.sh``; the result and the turn. ``client`` may
    be None for a plan that runs no turn."""
    started = time.monotonic()
    cell = plan.cell
    limits = cell.limits
    disposition = plan.disposition
    if disposition in (Disposition.NOT_IMPLEMENTED, Disposition.UNSUPPORTED):
        declared = not_run_cell(cell.case, cell.condition, limits, column_id=cell.profile.id).record()
        return _finish(directory, _base(plan, plan.planned_pins(), grade=declared), started), None
    if disposition is Disposition.UNAVAILABLE:
        unavailable = DeclaredGrade(status=UNAVAILABLE, evidence=f"unavailable; {cell.profile.unavailable}")
        return _finish(directory, _base(plan, plan.planned_pins(), grade=unavailable), started), None
    assert client is not None, "a cell that runs a turn needs an engine"
    from runner.sandbox.images import ensure_image

    try:  # a matrix hands down the image it resolved for resume; exec and repro resolve it here
        if image is None:
            images = plan.options.host.images
            image = await anyio.to_thread.run_sync(
                lambda: ensure_image(client, cell.profile.image, images, progress=progress)
            )
    except EngineError as err:
        failed = _base(plan, plan.planned_pins(), infrastructure_error=_problem(err))
        return _finish(directory, failed, started), None
    pins = plan.planned_pins(image)
    request = TurnRequest(case=cell.case, profile=cell.profile, image=image, out_dir=directory, model=plan.model,
                          settings=plan.options, condition_id=cell.condition.id)
    try:
        report = await run_turn(client, request, progress)
    except EngineError as err:
        return _finish(directory, _base(plan, pins, infrastructure_error=_problem(err)), started), None
    executed = report.result
    pins = pins.with_turn(executed.text("promptHash"), executed.text("catalogHash"))
    problem = report.infrastructure_error
    wiring = None if problem is None else InfrastructureProblem(
        kind=str(problem["kind"]), detail=str(problem["detail"])
    )
    graded = None if wiring is not None else grade_cell(
        cell.case, cell.condition, limits, report.record, column_id=cell.profile.id
    ).record()
    turn = TurnSummary(
        status=report.result.status.value, reason_code=report.result.reason_code,
        reason=report.result.escalation.reason if report.result.escalation else None,
        calls_after_escalation=executed.count("callsAfterEscalation"), wind_down_seconds=report.wind_down_seconds,
        harness_outcome=executed.text("harnessOutcome"),
        harness_error_code=executed.text("harnessErrorCode"), exit_code=report.drive.exit_code,
        deadline_hit=report.drive.deadline_hit,
    )
    model = plan.model
    result = _base(
        plan, pins, grade=graded, infrastructure_error=wiring, turn=turn, transport=report.transport,
        model=ModelRecord(mode=model.mode.value, why=model.why, credential=model.credential,
                          recording=str(model.recording) if model.recording else None,
                          fault=model.fault.spec if model.fault else None),
        files={k: os.path.relpath(v, directory) for k, v in report.files.items()}, started_at=report.started_at,
    )
    return _finish(directory, result, started), report


def _finish(directory: Path, result: CellResult, started: float) -> CellResult:
    finished = result.finished(round(time.monotonic() - started, 3))
    write_cell(directory, finished)
    return finished
