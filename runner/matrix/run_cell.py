"""Run and grade one cell, and write its directory. ``runner exec``, ``runner run`` and ``runner repro`` all go
through :func:`run_cell` with a :class:`~runner.matrix.plan.CellPlan`, so their artifacts are the same.

A row that is ``not_implemented``, or ``unsupported`` on this column, is written without running anything; an
unavailable column is written as such; a row the kernel refuses at admission is graded from the refusal, computed
in-process with no engine and no container (:class:`~runner.matrix.cells.Disposition`); everything else runs its
turns -- one, or each turn of a row of several against one world, each in a fresh container, its files under
``turn-<n>/`` -- is graded by the judge from the turns' records, and carries every pin.
``image`` is the column's image when the caller already resolved it (a matrix
does, once per image, for its resume check); otherwise it is found or built here.

**A cell fails alone.** Whatever is raised while a cell runs (the engine failing, a frame runner cannot read, a
file it cannot write, a bug of runner's own) becomes that cell's infrastructure error, with the exception's type and
words (:meth:`~runner.matrix.result.InfrastructureProblem.of`), its traceback kept scrubbed in ``traceback.txt``
beside the result: a matrix goes on with its other cells, and ``runner exec`` still writes ``result.json``. Only
cancellation (Ctrl-C, SIGTERM: not an :class:`Exception`) goes through, to mark the cell interrupted.
"""

from __future__ import annotations

import json
import os
import time
import traceback
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.lowlevel
import anyio.to_thread

import runner
from runner.conformance.failures import TurnEvidence, classify
from runner.conformance.judge import grade_cell, grade_turns, not_run_cell
from runner.core.envelope import Envelope, ServerIdentity
from runner.core.timeline import iso_utc
from runner.core.world import build_world
from runner.matrix.artifact import write_cell
from runner.matrix.cells import Disposition
from runner.matrix.plan import CellPlan
from runner.matrix.result import (
    MEASURED_VERSION,
    UNAVAILABLE,
    CellPins,
    CellRef,
    CellResult,
    DeclaredGrade,
    FailureRecord,
    GradeRecord,
    InfrastructureProblem,
    ModelRecord,
    RowDescription,
    SystemRecord,
    ToolPolicyRecord,
    TurnSummary,
    UsageRecord,
    summed_usage,
)
from runner.turn.measure import policy_of
from runner.turn.prepare import turn_execution_id
from runner.turn.run_turn import TurnReport, TurnRequest, run_turn

if TYPE_CHECKING:
    from runner.images import ImageRecord
    from runner.sandbox.backend import SandboxBackend


def _row(plan: CellPlan) -> RowDescription:
    case = plan.cell.case
    return RowDescription(kind=case.kind, invariant=case.invariant, expected_outcome=case.expected_outcome,
                          condition=plan.cell.condition.description)


def _base(
    plan: CellPlan, pins: CellPins, *, grade: GradeRecord | None = None,
    infrastructure_error: InfrastructureProblem | None = None, turn: TurnSummary | None = None,
    model: ModelRecord | None = None, files: dict[str, str] | None = None, transport: str | None = None,
    turns: tuple[TurnSummary, ...] = (), started_at: str | None = None, failure: FailureRecord | None = None,
    system: SystemRecord | None = None,
) -> CellResult:
    """The cell's result; ``started_at``: its turn's start (now, for a cell that ran no turn)."""
    cell = plan.cell
    turns = turns or ((turn,) if turn else ())
    return CellResult(
        version=MEASURED_VERSION,
        cell=CellRef(id=cell.id, case=cell.case.id, condition=cell.condition.id, harness=cell.profile.id),
        row=_row(plan), pins=pins, repro=plan.repro, deadline_seconds=plan.options.deadline,
        started_at=started_at or iso_utc(time.time()), grade=grade,
        infrastructure_error=infrastructure_error, failure=failure, turns=turns,
        usage=summed_usage(t.usage for t in turns), system=system, model=model, files=files, transport=transport,
    )


def _summary(report: TurnReport) -> TurnSummary:
    executed = report.result
    return TurnSummary(
        status=executed.status.value, reason_code=executed.reason_code,
        reason=executed.escalation.reason if executed.escalation else None,
        calls_after_escalation=executed.count("callsAfterEscalation"), wind_down_seconds=report.wind_down_seconds,
        harness_outcome=executed.text("harnessOutcome"),
        harness_error_code=executed.text("harnessErrorCode"), exit_code=report.drive.exit_code,
        deadline_hit=report.drive.deadline_hit, usage=_usage(report),
    )


def _usage(report: TurnReport) -> UsageRecord | None:
    measures = report.measures
    if measures is None or measures.usage is None:
        return None
    return UsageRecord.of(measures.usage, measures.model_id)


def _failure(reports: list[TurnReport], grade: str | None, problem: InfrastructureProblem | None
             ) -> FailureRecord | None:
    """Why the attempt failed (:func:`runner.conformance.failures.classify`), from the last turn's evidence, the
    cell's grade and what ended it around the turn; None when it did not fail."""
    last = reports[-1].measures if reports else None
    evidence = last.evidence if last is not None else TurnEvidence()
    if problem is not None:
        evidence = replace(evidence, infrastructure_kind=problem.kind, infrastructure_detail=problem.detail)
    found = classify(replace(evidence, grade=grade))
    return FailureRecord.of(found) if found is not None else None


def _system(reports: list[TurnReport]) -> SystemRecord | None:
    """The tool policy every turn's requests support together (None: no turn had a model endpoint)."""
    measured = [r.measures for r in reports if r.measures is not None and r.measures.policy is not None]
    if not measured:
        return None
    offered = [each for m in measured for each in m.offered]
    policy, _ = policy_of(offered, reports[-1].request.profile.mcp_server_name, measured[-1].launch)
    return SystemRecord(tool_policy=ToolPolicyRecord.of(policy))


def _refused_at_admission(plan: CellPlan, directory: Path, started: float) -> CellResult:
    """The kernel refuses the row's turn at admission: no runtime may run it, so no container starts. The refusal
    is computed by the pure core as a turn would compute it (the world, its store, the envelope), its record
    written, and graded by the judge like any turn's."""
    cell = plan.cell
    world = build_world(cell.condition.world)
    execution_id = turn_execution_id(cell.case, cell.condition, cell.profile.id)
    envelope = Envelope(world, execution_id, ServerIdentity(f"runner.{cell.profile.id}.mcp", runner.__version__),
                        clock=world.clock)
    assert envelope.refusal is not None, f"{cell.id}: planned as refused at admission, but the world admitted it"
    record = envelope.record(envelope.refusal)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "record.json").write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", encoding="utf-8",
                                           errors="backslashreplace")
    graded = grade_cell(cell.case, cell.condition, cell.limits, record, harness_id=cell.profile.id).record()
    result = envelope.refusal
    turn = TurnSummary(status=result.status.value, reason_code=result.reason_code)
    return _finish(directory, _base(plan, plan.planned_pins(), grade=graded, turn=turn,
                                    files={"record": "record.json"}), started)


async def run_cell(
    backend: SandboxBackend | None, plan: CellPlan, directory: Path,
    progress: Callable[[str], None] = lambda _: None, image: ImageRecord | None = None,
) -> tuple[CellResult, TurnReport | None]:
    """Run (or declare) one cell, write ``result.json`` and ``repro.sh``; the result and the turn. ``backend``, the
    sandbox backend the command connected, may be None for a plan that runs no turn. Any exception but cancellation
    ends the cell as its infrastructure error (the module's *A cell fails alone*); only a result that cannot be
    written at all is raised."""
    state = _Cell(plan, directory, time.monotonic())
    try:
        return await _run_cell(backend, state, progress, image)
    except Exception as error:  # any failure of this cell is this cell's, never its matrix's
        await anyio.lowlevel.checkpoint_if_cancelled()  # one that came of a cancellation is the cancellation
        return state.failed(error), None


TRACEBACK = "traceback.txt"


class _Cell:
    """What a cell knows so far, so that a failure anywhere is written with it: its pins (the image's, once
    resolved) and the turns that ran before it failed."""

    def __init__(self, plan: CellPlan, directory: Path, started: float) -> None:
        self.plan, self.directory, self.started = plan, directory, started
        self.pins = plan.planned_pins()
        self.reports: list[TurnReport] = []

    def finish(self, result: CellResult) -> CellResult:
        return _finish(self.directory, result, self.started)

    def failed(self, error: BaseException) -> CellResult:
        """The cell's infrastructure error for ``error`` (its type and words, scrubbed), with the turns that ran
        before it; the traceback, scrubbed, in ``traceback.txt`` when it can be written."""
        plan = self.plan
        scrubber = plan.scrubber
        problem = InfrastructureProblem.of(error, scrubber.text)
        files: dict[str, str] = {}
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
            told = scrubber.text("".join(traceback.format_exception(error)))
            (self.directory / TRACEBACK).write_text(told, encoding="utf-8", errors="backslashreplace")
            files["traceback"] = TRACEBACK
        except OSError:
            pass  # the result says what failed; writing it is all that is left to try
        turns = tuple(_summary(r) for r in self.reports)
        started_at = self.reports[0].started_at if self.reports else None
        return self.finish(_base(plan, self.pins, infrastructure_error=problem, turns=turns, files=files,
                                 started_at=started_at, failure=_failure(self.reports, None, problem),
                                 system=_system(self.reports)))


async def _run_cell(
    backend: SandboxBackend | None, state: _Cell, progress: Callable[[str], None], image: ImageRecord | None,
) -> tuple[CellResult, TurnReport | None]:
    plan, directory = state.plan, state.directory
    cell = plan.cell
    limits = cell.limits
    disposition = plan.disposition
    if disposition in (Disposition.NOT_IMPLEMENTED, Disposition.UNSUPPORTED):
        declared = not_run_cell(cell.case, cell.condition, limits, harness_id=cell.profile.id).record()
        return state.finish(_base(plan, plan.planned_pins(), grade=declared)), None
    if disposition is Disposition.UNAVAILABLE:
        unavailable = DeclaredGrade(status=UNAVAILABLE, evidence=f"unavailable; {cell.profile.unavailable}")
        return state.finish(_base(plan, plan.planned_pins(), grade=unavailable)), None
    if disposition is Disposition.REFUSED_AT_ADMISSION:
        return _refused_at_admission(plan, directory, state.started), None
    assert backend is not None, "a cell that runs a turn needs an engine"
    if image is None:  # a matrix hands down the image it resolved for resume; exec and repro resolve it here
        images = plan.options.host.images
        image = await anyio.to_thread.run_sync(
            lambda: backend.prepare_image(cell.profile.image, images, progress=progress)
        )
    pins = state.pins = plan.planned_pins(image)
    # a row of several turns runs each against one world (revoked-mid-turn: the revocation lands in its store
    # after turn 1 loaded); each turn is a fresh CLI process in a fresh container -- no CLI resumes a session
    turns_total = cell.case.turns
    world = build_world(cell.condition.world) if turns_total > 1 else None
    reports = state.reports
    wiring: InfrastructureProblem | None = None
    for n in range(1, turns_total + 1):
        if world is not None and n > 1:
            world.open_turn()
        out = directory if turns_total == 1 else directory / f"turn-{n}"
        request = TurnRequest(case=cell.case, profile=cell.profile, image=image, out_dir=out, model=plan.model,
                              settings=plan.turn_settings, condition_id=cell.condition.id, world=world, turn=n)
        report = await run_turn(backend, request, progress)
        reports.append(report)
        problem = report.infrastructure_error
        if problem is not None:
            wiring = InfrastructureProblem(kind=str(problem["kind"]), detail=str(problem["detail"]))
            break
    report = reports[-1]
    executed = report.result
    pins = pins.with_turn(executed.text("promptHash"), executed.text("catalogHash"))
    graded = None if wiring is not None else grade_turns(
        cell.case, cell.condition, limits, [r.record for r in reports], harness_id=cell.profile.id
    ).record()
    model = plan.model
    files: dict[str, str] = {}
    for n, each in enumerate(reports, 1):
        prefix = "" if turns_total == 1 else f"turn-{n}."
        files.update({prefix + k: os.path.relpath(v, directory) for k, v in each.files.items()})
    result = _base(
        plan, pins, grade=graded, infrastructure_error=wiring, turns=tuple(_summary(r) for r in reports),
        transport=report.transport, failure=_failure(reports, str(graded.status) if graded else None, wiring),
        system=_system(reports),
        model=ModelRecord(mode=model.mode.value, why=model.why, credential=model.credential,
                          recording=str(model.recording) if model.recording else None,
                          fault=model.fault.spec if model.fault else None),
        files=files, started_at=reports[0].started_at,
    )
    return state.finish(result), report


def _finish(directory: Path, result: CellResult, started: float) -> CellResult:
    finished = result.finished(round(time.monotonic() - started, 3))
    write_cell(directory, finished)
    return finished
