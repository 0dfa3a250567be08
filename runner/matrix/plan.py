"""A cell's plan: everything decided about a cell before it runs, decided once, at the command's edge.

``runner exec``, ``runner run`` and ``runner repro`` each turn their options and the host's environment into one frozen
:class:`CellOptions` (:meth:`CellOptions.parse`, each option by its row in :mod:`runner.matrix.options`), then into one
:class:`CellPlan` per cell with :func:`plan_cells`. The plan holds the model choice (worked out once per column from the
options and the host's credential variables, which the options carry), whether the cell runs a turn (the cell's own
rule, :meth:`~runner.matrix.cells.MatrixCell.disposition`), the pins known before it runs (what resume compares) and the
exact command that reruns it alone. Everything below takes the plan and decides nothing again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import runner
from runner.conformance.hashing import current_pins
from runner.core.scrub import Scrubber
from runner.harnesses.profile import Profile
from runner.matrix import options as settings
from runner.matrix.cells import Disposition, MatrixCell
from runner.matrix.result import CellPins
from runner.model.settings import Dialect
from runner.model.types import ModelEndpointError
from runner.turn.model_choice import ModelChoice, ModelChoiceError, choose_model
from runner.turn.settings import Host, TurnSettings

if TYPE_CHECKING:
    from runner.images import ImageRecord

CELL_SECONDS_LINE = re.compile(rb"^cell_seconds\s*:[^\n]*(\n|$)", re.MULTILINE)  # what profile_hash leaves out


@dataclass(frozen=True)
class CellOptions(TurnSettings):
    """The command's settings (:class:`~runner.turn.settings.TurnSettings`), and what only the matrix needs."""

    # exec runs a row even where the matrix would not (unsupported on this column): the turn is
    # recorded, and the grade still says not_applicable
    run_unsupported: bool = False

    @classmethod
    def parse(cls, given: Mapping[str, object], *, run_id: str, host: Host, run_unsupported: bool = False
              ) -> CellOptions:
        """The options a command was given (by parameter name, as typer hands them over; one not given takes its
        default), each parsed by its row (:data:`runner.matrix.options.SETTINGS`). A value an option does not take
        raises :class:`runner.turn.settings.SettingError` naming the option (exit 2)."""
        return settings.parsed(cls(run_id=run_id, host=host, run_unsupported=run_unsupported), given)


@dataclass(frozen=True)
class CellPlan:
    cell: MatrixCell
    options: CellOptions
    model: ModelChoice  # resolved once: the mode, why, and the fault it plays (mode none on a column with no model)
    profile_hash: str
    trial: int = 1  # which run of this cell (runner run/exec --trials N); pinned as ``trial`` from the second on

    @property
    def id(self) -> str:
        return self.cell.id

    @property
    def scrubber(self) -> Scrubber:
        """What removes this cell's secrets from what runner writes about it: the host's variables and the column's
        credentials (a turn's files are scrubbed by the same rule)."""
        return Scrubber(self.options.host.variables, self.cell.profile.credentials)

    @property
    def turn_settings(self) -> CellOptions:
        """The options this trial's turns run with: a coin behaviour tossed for this cell and trial
        (:func:`runner.conformance.behaviours.tossed`); the plan's own options keep the coin, which is its pin."""
        from runner.conformance.behaviours import tossed

        played = tossed(self.options.behaviour, self.id, self.trial)
        return self.options if played is self.options.behaviour else dataclasses.replace(self.options, behaviour=played)

    @property
    def dialect(self) -> str | None:
        """The model dialect this cell speaks (None on a column with no model)."""
        model = self.cell.profile.model
        return model.dialect if model is not None else None

    @property
    def chooses_dialect(self) -> bool:
        """Whether this column speaks more than one dialect: then its dialect is pinned and repeated in repro."""
        model = self.cell.profile.model
        return model is not None and bool(model.dialects)

    @property
    def label(self) -> str:
        """The cell id, and from the second trial on which trial it is: what progress and summaries print."""
        return self.id if self.trial == 1 else f"{self.id} trial {self.trial}"

    @property
    def disposition(self) -> Disposition:
        """What becomes of this cell: the cell's rule, with ``exec``'s licence to run an unsupported row."""
        return self.cell.disposition(self.options.run_unsupported)

    @property
    def runs_a_turn(self) -> bool:
        return self.disposition is Disposition.TURN

    @property
    def trial_pins(self) -> CellPins:
        """Trial 1 carries no pin: a one-trial run's result.json is as it always was."""
        return CellPins(trial=self.trial) if self.trial > 1 else CellPins()

    def planned_pins(self, image: ImageRecord | None = None) -> CellPins:
        """The pins known before the cell runs (what resume compares); ``image`` once it is built. The settings'
        pins are their rows' (:func:`runner.matrix.options.pins`): a cell of another setting is another
        experiment, never resumed as this one."""
        extra: dict[str, str | int] = {"profileHash": self.profile_hash, **settings.pins(self)}
        if self.trial > 1:
            extra["trial"] = self.trial
        pins = current_pins(runner_version=runner.__version__, image_id=image.image_id if image else None,
                            cli_version=image.cli_version if image else None, extra=extra)
        return CellPins.model_validate(pins.to_json())

    def repro_argv(self) -> list[str]:
        """The ``runner`` arguments that rerun this cell alone: the cell, then its settings as their rows say them
        (:func:`runner.matrix.options.argv`)."""
        cell = self.cell
        return ["exec", "--harness", cell.profile.id, "--case", cell.case.id, "--condition", cell.condition.id,
                *settings.argv(self)]

    @property
    def repro(self) -> str:
        """The exact command (shell-quoted) that reruns this cell alone: what result.json, repro.sh and the
        report print."""
        return " ".join(shlex.quote(a) for a in ["runner", *self.repro_argv()])


def profile_hash(cell: MatrixCell) -> str:
    """The profile file's hash, its ``cell_seconds`` line left out: that figure plans CI jobs and changes nothing in
    a turn, so ``runner profiles calibrate`` does not make a run's finished cells run again."""
    source = Path(cell.profile.source) if cell.profile.source else None
    if source and source.is_file():
        data = CELL_SECONDS_LINE.sub(b"", source.read_bytes())
    else:
        data = cell.profile.model_copy(update={"cell_seconds": 1.0}).model_dump_json().encode()
    return hashlib.sha256(data).hexdigest()


def plan_cells(cells: list[MatrixCell], options: CellOptions, *, fault_every_harness: bool = False) -> list[CellPlan]:
    """One plan per cell. The model is chosen once per column; a choice that cannot be made (``--model live``
    without credentials, a fault on a model that cannot play one) raises :class:`ModelChoiceError` here, before
    anything starts. With ``--model-fault``, the columns that talk to no model run as they are, and a selection
    where none talks to one is refused; with ``fault_every_column`` (``exec``: one cell, asked for by name) the
    fault is the column's to play, and a column with no model is refused in the model choice's own words."""
    harnesses: dict[str, tuple[Profile, ModelChoice, str]] = {}  # harness id -> its profile (dialect), choice, hash
    plans = []
    dialect = options.dialect
    for cell in cells:
        if cell.profile.id not in harnesses:
            profile = _in_dialect(cell.profile, dialect, strict=fault_every_harness)
            fault = options.fault if profile.model is not None or fault_every_harness else None
            choice = choose_model(options.model, profile, options.host.variables, fault, options.recording,
                                  options.host.live_base_url)
            harnesses[cell.profile.id] = (profile, choice, profile_hash(cell))
        profile, choice, digest = harnesses[cell.profile.id]
        plans.append(CellPlan(MatrixCell(cell.case, cell.condition, profile), options, choice, digest))
    if options.fault and cells and all(c.profile.model is None for c in cells):
        raise ModelChoiceError(f"--model-fault {options.fault.shown}: none of the chosen harnesses talks to a model")
    if dialect and cells and not any(p.dialect == dialect for p in plans):
        raise ModelChoiceError(f"--model-dialect {dialect.value}: none of the chosen harnesses speaks it")
    return plans


def _in_dialect(profile: Profile, dialect: Dialect | None, *, strict: bool) -> Profile:
    """The profile speaking ``dialect``. A column that cannot keeps its own (``runner run``: its pins and its
    report say which it spoke); ``strict`` (``exec``, one cell asked for by name) refuses it instead."""
    if dialect is None:
        return profile
    if profile.model is None:
        if strict:
            raise ModelChoiceError(f"--model-dialect {dialect.value}: the {profile.id} harness talks to no model")
        return profile
    try:
        endpoint = profile.model.in_dialect(dialect)
    except ModelEndpointError as error:
        if strict:
            raise ModelChoiceError(f"--model-dialect {dialect.value}: the {profile.id} column {error}") from None
        return profile
    return profile.model_copy(update={"model": endpoint})


def with_trials(plans: list[CellPlan], trials: int) -> list[CellPlan]:
    """Each plan that runs a turn ``trials`` times (trial 1, 2, …, in order, a cell's trials side by side); a cell
    graded from what is declared is written once, since a declaration cannot move between runs."""
    if trials < 1:
        raise ValueError("trials must be at least 1")
    return [
        dataclasses.replace(plan, trial=k) for plan in plans for k in range(1, (trials if plan.runs_a_turn else 1) + 1)
    ]
