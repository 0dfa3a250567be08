"""``runner repro``: the plan that reruns the cell a result describes, with the same pins, and which pins the
rerun could not match.

Each setting is read back by its row (:func:`runner.matrix.options.recalled`), the same rows that wrote the cell's
pins and its repro command, so ``runner repro`` and ``repro.sh`` rerun the same cell: under the runtime, in the
protocol epoch and the dialect, with the fault and the behaviour it was pinned with, the deadline asked for asked
again. A trial (``<cell>/trial-<k>/``) reruns as that trial, pinned as it was. A live cell (or trial) is replayed
from its own recorded model exchanges (offline). Only the comparability pins are compared (``comparable``), and a live
cell's ``modelMode`` is expected to differ (it is replayed).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path

from runner.conformance.cases import get_case
from runner.conformance.hashing import comparable
from runner.harnesses.profile import find_profile
from runner.matrix import options as settings
from runner.matrix.cells import MatrixCell
from runner.matrix.plan import CellOptions, CellPlan, plan_cells
from runner.matrix.result import CellPins, CellResult
from runner.turn.settings import Host


def repro_plan(
    recorded: CellResult, directory: Path, run_id: str, host: Host, profiles_dirs: Sequence[Path] = ()
) -> CellPlan:
    """The plan of the rerun, its settings read from the recorded pins (as the command line would have given
    them); ``host`` and ``profiles_dirs`` are the edge's. Raises the lookup errors (unknown case, harness,
    condition or behaviour) of a cell this runner no longer knows."""
    case = get_case(recorded.cell.case)
    cell = MatrixCell(case, case.condition_for(recorded.cell.condition),
                      find_profile(recorded.cell.harness, profiles_dirs))
    given = settings.recalled(recorded, directory)  # as the command line would have given them: every row's
    options = CellOptions.parse(given, run_id=run_id, host=host, run_unsupported=True)
    [plan] = plan_cells([cell], options, fault_every_harness=True)
    return dataclasses.replace(plan, trial=recorded.trial)  # a trial reruns as that trial, with its pin


def unmatched_pins(recorded: CellPins, rerun: CellPins) -> list[str]:
    """The comparability pins the rerun did not match (a replayed live cell's ``modelMode`` aside)."""
    live = recorded.model_mode == "live"
    return [k for k in comparable(recorded.to_dict(), rerun.to_dict()) if k != "modelMode" or not live]
