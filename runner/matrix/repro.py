"""``runner repro``: the plan that reruns the cell a result describes, with the same pins, and which pins the
rerun could not match.

A trial (``<cell>/trial-<k>/``) reruns as that trial, pinned as it was. A live cell (or trial) is replayed from its
own recorded model exchanges (offline); a faulted cell reruns with the same fault;
the deadline asked for is asked again. Only the comparability pins are compared (``comparable``), and a live
cell's ``modelMode`` is expected to differ (it is replayed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from pathlib import Path

from runner.conformance.behaviours import parse_behaviour
from runner.conformance.cases import get_case
from runner.conformance.hashing import comparable
from runner.harnesses.profile import find_profile
from runner.matrix.cells import Cell
from runner.matrix.plan import CellOptions, CellPlan, plan_cells
from runner.matrix.result import CellPins, CellResult


def repro_plan(recorded: CellResult, directory: Path, run_id: str, environ: Mapping[str, str]) -> CellPlan:
    """The plan of the rerun. Raises the lookup errors (unknown case, harness, condition or behaviour) of a cell
    this runner no longer knows."""
    pins = recorded.pins
    case = get_case(recorded.cell.case)
    cell = Cell(case, case.condition_for(recorded.cell.condition), find_profile(recorded.cell.column))
    mode = pins.model_mode
    model = f"replay:{directory / 'model-exchanges.jsonl'}" if mode == "live" else (mode if mode != "none" else None)
    options = CellOptions(
        parse_behaviour(pins.behaviour or "cooperative"), model, recorded.deadline_seconds, False, run_id,
        run_unsupported=True, model_fault=pins.model_fault, model_dialect=pins.model_dialect,
    )
    [plan] = plan_cells([cell], options, environ, fault_every_column=True)
    return dataclasses.replace(plan, trial=recorded.trial)  # a trial reruns as that trial, with its pin


def unmatched_pins(recorded: CellPins, rerun: CellPins) -> list[str]:
    """The comparability pins the rerun did not match (a replayed live cell's ``modelMode`` aside)."""
    live = recorded.model_mode == "live"
    return [k for k in comparable(recorded.to_dict(), rerun.to_dict()) if k != "modelMode" or not live]
