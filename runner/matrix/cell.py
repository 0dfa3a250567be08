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
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread
import docker

from runner.conformance.columns import limits_for
from runner.conformance.judge import grade_cell, not_run_cell
from runner.matrix.artifact import write_cell
from runner.matrix.plan import CellPlan
from runner.matrix.result import UNAVAILABLE, CellRef, CellResult, InfrastructureProblem, TurnSummary
from runner.sandbox.engine import EngineError
from runner.turn.runtime import TurnReport, TurnRequest, run_turn

if TYPE_CHECKING:
    from runner.sandbox.images import ImageRecord


def _row(plan: CellPlan) -> dict[str, Any]:
    case = plan.cell.case
    return {"kind": case.kind, "invariant": case.invariant, "expectedOutcome": case.expected_outcome,
            "condition": plan.cell.condition.description}


def _base(plan: CellPlan, pins: dict[str, Any]) -> CellResult:
    cell = plan.cell
    return CellResult(
        cell=CellRef(cell.id, cell.case.id, cell.condition.id, cell.profile.id), row=_row(plan), pins=pins,
        repro=plan.repro, deadline_seconds=plan.options.deadline,
        started_at=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    )


def _problem(error: Exception) -> InfrastructureProblem:
    return InfrastructureProblem(type(error).__name__, str(error))


async def run_cell(
    client: docker.DockerClient | None, plan: CellPlan, directory: Path, progress: Any = lambda _: None,
    image: ImageRecord | None = None,
) -> tuple[CellResult, TurnReport | None]:
    """Run (or declare) one cell, write ``result.json`` and ``repro.sh``; the result and the turn. ``client`` may
    be None for a plan that runs no turn."""
    started = time.monotonic()
    cell = plan.cell
    limits = limits_for(cell.case, cell.condition, cell.profile.issues_uncatalogued)
    if cell.case.not_implemented is not None or (limits.unsupported is not None and not plan.runs_a_turn):
        grade = not_run_cell(cell.case, cell.condition, limits, column_id=cell.profile.id).to_json()
        return _finish(directory, _base(plan, plan.planned_pins()).replace(grade=grade), started), None
    if cell.profile.unavailable:
        grade = {"status": UNAVAILABLE, "evidence": f"unavailable; {cell.profile.unavailable}"}
        return _finish(directory, _base(plan, plan.planned_pins()).replace(grade=grade), started), None
    assert client is not None, "a cell that runs a turn needs an engine"
    from runner.sandbox.images import ensure_image

    try:  # a matrix hands down the image it resolved for resume; exec and repro resolve it here
        if image is None:
            image = await anyio.to_thread.run_sync(lambda: ensure_image(client, cell.profile.image, progress=progress))
    except EngineError as err:
        failed = _base(plan, plan.planned_pins()).replace(infrastructure_error=_problem(err))
        return _finish(directory, failed, started), None
    pins = plan.planned_pins(image)
    request = TurnRequest(
        case=cell.case, profile=cell.profile, behaviour=plan.options.behaviour, image=image, out_dir=directory,
        run_id=plan.options.run_id, model=plan.model, deadline=plan.options.deadline, keep=plan.options.keep,
        condition_id=cell.condition.id, model_fault=plan.model.fault, transport=plan.options.transport,
        runtime=plan.options.runtime,
    )
    try:
        report = await run_turn(client, request, progress)
    except EngineError as err:
        return _finish(directory, _base(plan, pins).replace(infrastructure_error=_problem(err)), started), None
    meta = report.result.metadata
    pins.update({"promptHash": meta.get("promptHash"), "catalogHash": meta.get("catalogHash")})
    result = _base(plan, pins)
    if report.infrastructure_error is not None:
        problem = report.infrastructure_error
        wiring = InfrastructureProblem(str(problem["kind"]), str(problem["detail"]))
        result = result.replace(infrastructure_error=wiring)
    else:
        graded = grade_cell(cell.case, cell.condition, limits, report.record, column_id=cell.profile.id)
        result = result.replace(grade=graded.to_json())
    turn = TurnSummary(
        status=report.result.status.value, reason_code=report.result.reason_code,
        reason=report.result.escalation.reason if report.result.escalation else None,
        calls_after_escalation=meta.get("callsAfterEscalation"), harness_outcome=meta.get("harnessOutcome"),
        harness_error_code=meta.get("harnessErrorCode"), exit_code=report.drive.exit_code,
        deadline_hit=report.drive.deadline_hit,
    )
    result = result.replace(turn=turn, model=plan.model.to_json(), transport=report.transport,
                            files={k: os.path.relpath(v, directory) for k, v in report.files.items()})
    return _finish(directory, result, started), report


def _finish(directory: Path, result: CellResult, started: float) -> CellResult:
    finished = result.replace(elapsed_seconds=round(time.monotonic() - started, 3))
    write_cell(directory, finished)
    return finished
