"""A cell's plan: everything decided about a cell before it runs, decided once, at the command's edge.

``runner exec``, ``runner run`` and ``runner repro`` each turn their options into :class:`CellOptions`, then into
one :class:`CellPlan` per cell with :func:`plan_cells`. The plan holds the model choice (worked out once per
column from the options and the host's credential variables: the only environment the plan reads, because those
variables are the interface), whether the cell runs a turn, the pins known before it runs (what resume compares)
and the exact command that reruns it alone. Everything below takes the plan and decides nothing again.
"""

from __future__ import annotations

import dataclasses
import hashlib
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import runner
from runner.conformance.behaviours import Behaviour
from runner.conformance.hashing import current_pins
from runner.harnesses.profile import Profile
from runner.matrix.cells import Cell, runs_a_turn
from runner.model.types import DIALECT_ALIASES, DIALECT_NAMES, ModelEndpointError
from runner.sandbox.interface import Runtime
from runner.turn.model_choice import ModelChoice, ModelChoiceError, choose_model


@dataclass(frozen=True)
class CellOptions:
    behaviour: Behaviour = Behaviour.COOPERATIVE
    model: str | None = None  # scripted | live | replay:PATH | None (choose per column)
    deadline: float | None = None
    keep: bool = False
    run_id: str = "run"
    # exec runs a row even where the matrix would not (unsupported on this column): the turn is
    # recorded, and the grade still says not_applicable
    run_unsupported: bool = False
    model_fault: str | None = None  # --model-fault KIND[@STEP] (scripted model only)
    transport: str = "auto"  # --transport mount|stream|auto: how the container reaches the turn's files and sockets
    model_dialect: str | None = None  # --model-dialect NAME: the dialect a column that can choose speaks
    runtime: Runtime = Runtime.RUNC  # --runtime runc|runsc (RUNNER_RUNTIME): the container's OCI runtime


@dataclass(frozen=True)
class CellPlan:
    cell: Cell
    options: CellOptions
    model: ModelChoice  # resolved once: the mode, why, and the fault it plays (None on a column with no model)
    profile_hash: str
    trial: int = 1  # which run of this cell (runner run/exec --trials N); pinned as ``trial`` from the second on

    @property
    def id(self) -> str:
        return self.cell.id

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
    def runs_a_turn(self) -> bool:
        """Whether this plan runs a turn: the matrix's rule, except that ``exec`` also runs unsupported rows."""
        if runs_a_turn(self.cell):
            return True
        declared = self.cell.profile.unavailable or self.cell.case.not_implemented is not None
        return self.options.run_unsupported and not declared

    @property
    def trial_pins(self) -> dict[str, Any]:
        """Trial 1 carries no pin: a one-trial run's result.json is as it always was."""
        return {"trial": self.trial} if self.trial > 1 else {}

    def planned_pins(self, image: Any | None = None) -> dict[str, Any]:
        """The pins known before the cell runs (what resume compares); ``image`` once it is built."""
        extra: dict[str, Any] = {"profileHash": self.profile_hash}
        if self.model.fault:
            extra["modelFault"] = self.model.fault  # a faulted cell is another experiment: never resumed as a plain one
        if self.chooses_dialect:
            extra["modelDialect"] = self.dialect  # so is a cell in another dialect
        if self.options.runtime is not Runtime.RUNC:
            extra["runtime"] = self.options.runtime.value  # a cell under gVisor is another experiment (runc: no pin)
        extra |= self.trial_pins
        pins = current_pins(
            runner_version=runner.__version__, model_mode=self.model.mode, behaviour=self.options.behaviour.value,
            image_id=getattr(image, "image_id", None), cli_version=getattr(image, "cli_version", None), extra=extra,
        )
        return pins.to_json()

    def repro_argv(self) -> list[str]:
        """The ``runner`` arguments that rerun this cell alone."""
        cell, options = self.cell, self.options
        argv = ["exec", "--harness", cell.profile.id, "--case", cell.case.id, "--condition", cell.condition.id,
                "--behaviour", options.behaviour.value]
        if self.model.mode in ("scripted", "live"):
            argv += ["--model", self.model.mode]
        if options.deadline is not None:
            argv += ["--deadline", f"{options.deadline:g}"]
        if self.model.fault:
            argv += ["--model-fault", self.model.fault]
        if self.chooses_dialect and self.dialect is not None:
            argv += ["--model-dialect", self.dialect]
        if options.runtime is not Runtime.RUNC:
            argv += ["--runtime", options.runtime.value]
        return argv

    @property
    def repro(self) -> str:
        """The exact command (shell-quoted) that reruns this cell alone: what result.json, repro.sh and the
        report print."""
        return " ".join(shlex.quote(a) for a in ["runner", *self.repro_argv()])


def profile_hash(cell: Cell) -> str:
    source = Path(cell.profile.source) if cell.profile.source else None
    data = source.read_bytes() if source and source.is_file() else cell.profile.model_dump_json().encode()
    return hashlib.sha256(data).hexdigest()


def plan_cells(
    cells: list[Cell], options: CellOptions, environ: Mapping[str, str], *, fault_every_column: bool = False
) -> list[CellPlan]:
    """One plan per cell. The model is chosen once per column; a choice that cannot be made (``--model live``
    without credentials, a fault on a model that cannot play one) raises :class:`ModelChoiceError` here, before
    anything starts. With ``--model-fault``, the columns that talk to no model run as they are, and a selection
    where none talks to one is refused; with ``fault_every_column`` (``exec``: one cell, asked for by name) the
    fault is the column's to play, and a column with no model is refused in the model choice's own words."""
    columns: dict[str, tuple[Profile, ModelChoice, str]] = {}  # column id -> its profile (in the dialect), choice, hash
    plans = []
    dialect = _dialect_name(options.model_dialect)
    for cell in cells:
        if cell.profile.id not in columns:
            profile = _in_dialect(cell.profile, dialect, strict=fault_every_column)
            fault = options.model_fault if profile.model is not None or fault_every_column else None
            choice = choose_model(options.model, profile, environ, fault)
            columns[cell.profile.id] = (profile, choice, profile_hash(cell))
        profile, choice, digest = columns[cell.profile.id]
        plans.append(CellPlan(Cell(cell.case, cell.condition, profile), options, choice, digest))
    if options.model_fault and cells and all(c.profile.model is None for c in cells):
        raise ModelChoiceError(f"--model-fault {options.model_fault}: none of the chosen harnesses talks to a model")
    if dialect and cells and not any(p.dialect == dialect for p in plans):
        raise ModelChoiceError(f"--model-dialect {options.model_dialect}: none of the chosen harnesses speaks it")
    return plans


def _dialect_name(requested: str | None) -> str | None:
    if requested is None:
        return None
    name = DIALECT_ALIASES.get(requested, requested)
    if name not in DIALECT_NAMES:
        known = ", ".join([*DIALECT_ALIASES, *DIALECT_NAMES])
        raise ModelChoiceError(f"unknown --model-dialect {requested!r}: expected one of {known}")
    return name


def _in_dialect(profile: Profile, dialect: str | None, *, strict: bool) -> Profile:
    """The profile speaking ``dialect``. A column that cannot keeps its own (``runner run``: its pins and its
    report say which it spoke); ``strict`` (``exec``, one cell asked for by name) refuses it instead."""
    if dialect is None:
        return profile
    if profile.model is None:
        if strict:
            raise ModelChoiceError(f"--model-dialect {dialect}: the {profile.id} harness talks to no model")
        return profile
    try:
        endpoint = profile.model.in_dialect(dialect)
    except ModelEndpointError as error:
        if strict:
            raise ModelChoiceError(f"--model-dialect {dialect}: the {profile.id} column {error}") from None
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
