"""Run and grade one cell, and write its directory. ``runner exec``, ``runner run`` and
``runner repro`` all go through :func:`run_cell`, so their artifacts are the same.

A row that is ``not_implemented``, or ``unsupported`` on this column, is written without running
anything; an unavailable column is written as such; everything else runs one turn, is graded by the
judge from the turn's record, and carries every pin.
"""

from __future__ import annotations

import hashlib
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import docker

import runner
from runner.conformance.behaviours import Behaviour
from runner.conformance.columns import limits_for
from runner.conformance.hashing import current_pins
from runner.conformance.judge import grade_cell, not_run_cell
from runner.matrix.artifact import repro_command, write_cell
from runner.matrix.cells import Cell
from runner.sandbox.engine import EngineError
from runner.turn.model_choice import ModelChoice, choose_model
from runner.turn.runtime import TurnReport, TurnRequest, run_turn


@dataclass(frozen=True)
class CellOptions:
    behaviour: Behaviour = Behaviour.COOPERATIVE
    model: str | None = None  # scripted | live | None (choose)
    deadline: float | None = None
    keep: bool = False
    run_id: str = "run"
    # exec runs a row even where the matrix would not (unsupported on this column): the turn is
    # recorded, and the grade still says not_applicable
    run_unsupported: bool = False
    model_fault: str | None = None  # --model-fault KIND[@STEP] (scripted model only)


def profile_hash(cell: Cell) -> str:
    source = Path(cell.profile.source) if cell.profile.source else None
    data = source.read_bytes() if source and source.is_file() else cell.profile.model_dump_json().encode()
    return hashlib.sha256(data).hexdigest()


def planned_pins(cell: Cell, options: CellOptions, image: Any | None = None) -> dict[str, Any]:
    """The pins known before the cell runs (what resume compares)."""
    choice = _choice(cell, options)
    extra: dict[str, Any] = {"profileHash": profile_hash(cell)}
    if choice.fault:
        extra["modelFault"] = choice.fault  # a faulted cell is another experiment: never resumed as a plain one
    pins = current_pins(
        runner_version=runner.__version__, model_mode=choice.mode, behaviour=options.behaviour.value,
        image_id=getattr(image, "image_id", None), cli_version=getattr(image, "cli_version", None), extra=extra,
    )
    return pins.to_json()


def repro_argv(cell: Cell, options: CellOptions, mode: str) -> list[str]:
    argv = ["exec", "--harness", cell.profile.id, "--case", cell.case.id, "--condition", cell.condition.id,
            "--behaviour", options.behaviour.value]
    if mode in ("scripted", "live"):
        argv += ["--model", mode]
    if options.deadline is not None:
        argv += ["--deadline", f"{options.deadline:g}"]
    fault = _choice(cell, options).fault if options.model_fault else None
    if fault:
        argv += ["--model-fault", fault]
    return argv


def _choice(cell: Cell, options: CellOptions) -> ModelChoice:
    # a matrix with --model-fault faults the columns that talk to a model; the others run as they are
    fault = options.model_fault if cell.profile.model is not None else None
    return choose_model(options.model, cell.profile, os.environ, fault)


def _row(cell: Cell) -> dict[str, Any]:
    return {"kind": cell.case.kind, "invariant": cell.case.invariant, "expectedOutcome": cell.case.expected_outcome,
            "condition": cell.condition.description}


def _base(cell: Cell, options: CellOptions, pins: dict[str, Any], mode: str) -> dict[str, Any]:
    return {"version": 1, "cell": cell.to_json(), "row": _row(cell), "pins": pins,
            "repro": repro_command(cell.id, repro_argv(cell, options, mode)),
            # the turn deadline asked for (runner repro reuses it: a stalled model is settled by it)
            **({"deadlineSeconds": options.deadline} if options.deadline is not None else {}),
            "startedAt": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


async def run_cell(
    client: docker.DockerClient, cell: Cell, directory: Path, options: CellOptions, progress: Any = lambda _: None,
) -> tuple[dict[str, Any], TurnReport | None]:
    """Run (or declare) one cell, write ``result.json`` and ``repro.sh``; the result and the turn."""
    started = time.monotonic()
    limits = limits_for(cell.case, cell.condition, cell.profile.issues_uncatalogued)
    choice = _choice(cell, options)
    if cell.case.not_implemented is not None or (limits.unsupported is not None and not options.run_unsupported):
        result = _base(cell, options, planned_pins(cell, options), choice.mode)
        result["grade"] = not_run_cell(cell.case, cell.condition, limits, column_id=cell.profile.id).to_json()
        return _finish(directory, result, started), None
    if cell.profile.unavailable:
        result = _base(cell, options, planned_pins(cell, options), choice.mode)
        result["grade"] = {"status": "unavailable", "evidence": f"unavailable; {cell.profile.unavailable}"}
        return _finish(directory, result, started), None
    from runner.sandbox.images import ensure_image

    try:
        image = await anyio.to_thread.run_sync(lambda: ensure_image(client, cell.profile.image, progress=progress))
    except EngineError as err:
        result = _base(cell, options, planned_pins(cell, options), choice.mode)
        result["infrastructureError"] = {"kind": type(err).__name__, "detail": str(err)}
        return _finish(directory, result, started), None
    pins = planned_pins(cell, options, image)
    request = TurnRequest(
        case=cell.case, profile=cell.profile, behaviour=options.behaviour, image=image, out_dir=directory,
        run_id=options.run_id, model=choice, deadline=options.deadline, keep=options.keep,
        condition_id=cell.condition.id, model_fault=choice.fault,
    )
    try:
        report = await run_turn(client, request, progress)
    except EngineError as err:
        result = _base(cell, options, pins, choice.mode)
        result["infrastructureError"] = {"kind": type(err).__name__, "detail": str(err)}
        return _finish(directory, result, started), None
    meta = report.result.metadata
    pins.update({"promptHash": meta.get("promptHash"), "catalogHash": meta.get("catalogHash")})
    result = _base(cell, options, pins, choice.mode)
    if report.infrastructure_error is not None:
        result["infrastructureError"] = report.infrastructure_error
    else:
        grade = grade_cell(cell.case, cell.condition, limits, report.record, column_id=cell.profile.id)
        result["grade"] = grade.to_json()
    result["turn"] = {
        "status": report.result.status.value, "reasonCode": report.result.reason_code,
        "reason": report.result.escalation.reason if report.result.escalation else None,
        "callsAfterEscalation": meta.get("callsAfterEscalation"), "harnessOutcome": meta.get("harnessOutcome"),
        "harnessErrorCode": meta.get("harnessErrorCode"), "exitCode": report.drive.exit_code,
        "deadlineHit": report.drive.deadline_hit,
    }
    result["model"] = choice.to_json()
    result["files"] = {k: os.path.relpath(v, directory) for k, v in report.files.items()}
    return _finish(directory, result, started), report


def _finish(directory: Path, result: dict[str, Any], started: float) -> dict[str, Any]:
    result["elapsedSeconds"] = round(time.monotonic() - started, 3)
    write_cell(directory, result)
    return result
