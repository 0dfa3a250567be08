"""Run and grade one cell, and write its directory. ``runner exec``, ``runner run`` and ``runner repro`` all go
through :func:`run_cell` with a :class:`~runner.matrix.plan.CellPlan`, so their artifacts are the same.

A row that is ``not_implemented``, or ``unsupported`` on this column, is written without running anything; an
unavailable column is written as such; a row the kernel refuses at admission is graded from the refusal, computed
in-process with no engine and no container (:class:`~runner.matrix.cells.Disposition`); everything else runs its
turns -- one, or each turn of a row of several against one world, each in a fresh container, its files under
``turn-<n>/`` -- is graded by the judge from the turns' records, and carries every pin.
``image`` is the column's image when the caller already resolved it (a matrix
does, once per image, for its resume check); otherwise it is found or built here.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread

import runner
from runner.conformance.judge import grade_cell, grade_turns, not_run_cell
from runner.core.envelope import Envelope, RuntimeInfo
from runner.core.timeline import iso_utc
from runner.core.world import build_world
from runner.matrix.artifact import write_cell
from runner.matrix.cells import Disposition
from runner.matrix.plan import CellPlan
from runner.matrix.result import (
    RESULT_VERSION,
    TURNS_VERSION,
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
from runner.turn.prepare import turn_execution_id
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
    turns: tuple[TurnSummary, ...] = (), started_at: str | None = None,
) -> CellResult:
    """The cell's result; ``started_at``: its turn's start (now, for a cell that ran no turn)."""
    cell = plan.cell
    turns = turns or ((turn,) if turn else ())
    return CellResult(
        version=TURNS_VERSION if len(turns) > 1 else RESULT_VERSION,
        cell=CellRef(id=cell.id, case=cell.case.id, condition=cell.condition.id, column=cell.profile.id),
        row=_row(plan), pins=pins, repro=plan.repro, deadline_seconds=plan.options.deadline,
        started_at=started_at or iso_utc(time.time()), grade=grade,
        infrastructure_error=infrastructure_error, turns=turns, model=model, files=files,
        transport=transport,
    )


def _summary(report: TurnReport) -> TurnSummary:
    executed = report.result
    return TurnSummary(
        status=executed.status.value, reason_code=executed.reason_code,
        reason=executed.escalation.reason if executed.escalation else None,
        calls_after_escalation=executed.count("callsAfterEscalation"), wind_down_seconds=report.wind_down_seconds,
        harness_outcome=executed.text("harnessOutcome"),
        harness_error_code=executed.text("harnessErrorCode"), exit_code=report.drive.exit_code,
        deadline_hit=report.drive.deadline_hit,
    )


def _refused_at_admission(plan: CellPlan, directory: Path, started: float) -> CellResult:
    """The kernel refuses the row's turn at admission: no runtime may run it, so no container starts. The refusal
    is computed by the pure core as a turn would compute it (the world, its store, the envelope), its record
    written, and graded by the judge like any turn's."""
    cell = plan.cell
    world = build_world(cell.condition.world)
    execution_id = turn_execution_id(cell.case, cell.condition, cell.profile.id)
    envelope = Envelope(world, execution_id, RuntimeInfo(f"runner.{cell.profile.id}.mcp", runner.__version__),
                        clock=world.clock)
    assert envelope.refusal is not None, f"{cell.id}: planned as refused at admission, but the world admitted it"
    record = envelope.record(envelope.refusal)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "record.json").write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    graded = grade_cell(cell.case, cell.condition, cell.limits, record, column_id=cell.profile.id).record()
    result = envelope.refusal
    turn = TurnSummary(status=result.status.value, reason_code=result.reason_code)
    return _finish(directory, _base(plan, plan.planned_pins(), grade=graded, turn=turn,
                                    files={"record": "record.json"}), started)


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
    if disposition is Disposition.REFUSED_AT_ADMISSION:
        return _refused_at_admission(plan, directory, started), None
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
    # a row of several turns runs each against one world (revoked-mid-turn: the revocation lands in its store
    # after turn 1 loaded); each turn is a fresh CLI process in a fresh container -- no CLI resumes a session
    turns_total = cell.case.turns
    world = build_world(cell.condition.world) if turns_total > 1 else None
    reports: list[TurnReport] = []
    wiring: InfrastructureProblem | None = None
    for n in range(1, turns_total + 1):
        if world is not None and n > 1:
            world.open_turn()
        out = directory if turns_total == 1 else directory / f"turn-{n}"
        request = TurnRequest(case=cell.case, profile=cell.profile, image=image, out_dir=out, model=plan.model,
                              settings=plan.options, condition_id=cell.condition.id, world=world, turn=n)
        try:
            report = await run_turn(client, request, progress)
        except EngineError as err:
            return _finish(directory, _base(plan, pins, infrastructure_error=_problem(err)), started), None
        reports.append(report)
        problem = report.infrastructure_error
        if problem is not None:
            wiring = InfrastructureProblem(kind=str(problem["kind"]), detail=str(problem["detail"]))
            break
    report = reports[-1]
    executed = report.result
    pins = pins.with_turn(executed.text("promptHash"), executed.text("catalogHash"))
    graded = None if wiring is not None else grade_turns(
        cell.case, cell.condition, limits, [r.record for r in reports], column_id=cell.profile.id
    ).record()
    model = plan.model
    files: dict[str, str] = {}
    for n, each in enumerate(reports, 1):
        prefix = "" if turns_total == 1 else f"turn-{n}."
        files.update({prefix + k: os.path.relpath(v, directory) for k, v in each.files.items()})
    result = _base(
        plan, pins, grade=graded, infrastructure_error=wiring, turns=tuple(_summary(r) for r in reports),
        transport=report.transport,
        model=ModelRecord(mode=model.mode.value, why=model.why, credential=model.credential,
                          recording=str(model.recording) if model.recording else None,
                          fault=model.fault.spec if model.fault else None),
        files=files, started_at=reports[0].started_at,
    )
    return _finish(directory, result, started), report


def _finish(directory: Path, result: CellResult, started: float) -> CellResult:
    finished = result.finished(round(time.monotonic() - started, 3))
    write_cell(directory, finished)
    return finished
