"""The cell settings, one row each: everything about a setting that ``exec``, ``run`` and ``repro`` share.

A row says, for one option of a cell: its flag and help (the commands declare it from the row,
:func:`runner.cli.settings.option`), how its value parses into the fields of the plan's options (parsed once, at
the edge: :meth:`runner.matrix.plan.CellOptions.parse`), whether and how a planned cell pins it
(:meth:`~runner.matrix.plan.CellPlan.planned_pins`), how it appears in the command that reruns the cell alone
(:meth:`~runner.matrix.plan.CellPlan.repro_argv`, what ``repro.sh`` runs), and how a recorded result gives the value
back (:func:`runner.matrix.repro.repro_plan`, what ``runner repro`` runs). Each of those walks :data:`SETTINGS`, so
the two ways of reproducing a cell agree by construction, and a new setting is a row here plus its field and its
consumer (a parameter of each command that takes it is one line: ``name: Annotated[T, option(ROW)] = ROW.default``).

The rows' order is the order their flags take in a repro command. A row with no pin is not part of the experiment
(how the container is reached, whether it is kept, how many trials a command makes): a repro runs it with the
default. What names a cell (harness, case, condition, trial) is the cell's, not a setting's.

Light to import (``runner --help`` declares the options from it): the parsers are imported when a value is parsed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Generic, Protocol, TypeVar, cast

from runner.conformance.behaviours import COIN_SPELLING, Behaviour

if TYPE_CHECKING:
    from runner.matrix.result import CellResult
    from runner.turn.model_choice import ModelChoice
    from runner.turn.settings import TurnSettings

T = TypeVar("T")
T_contra = TypeVar("T_contra", contravariant=True)
S = TypeVar("S", bound="TurnSettings")  # the command's settings, or the plan's options that extend them


class Sets(Protocol[T_contra]):
    """How a value given to the command sets its fields: a copy of the settings, parsed (a SettingError naming the
    flag for a value the option does not take)."""

    def __call__(self, settings: S, value: T_contra, /) -> S: ...


class Planned(Protocol):
    """What a row reads of a planned cell (:class:`runner.matrix.plan.CellPlan`)."""

    @property
    def options(self) -> TurnSettings: ...

    @property
    def model(self) -> ModelChoice: ...

    @property
    def dialect(self) -> str | None: ...

    @property
    def chooses_dialect(self) -> bool: ...

    @property
    def id(self) -> str: ...

    @property
    def trial(self) -> int: ...


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One cell setting. ``T`` is the value the command line gives (typer's, before parsing)."""

    name: str  # the commands' parameter (typer makes the flag of it), and the key of its value in what was given
    help: str
    default: T
    sets: Sets[T]
    fields: tuple[str, ...]  # the fields of the settings it sets
    metavar: str | None = None
    envvar: str | None = None
    min: int | None = None
    pin: str | None = None  # its key in result.json's pins; None: not pinned, not repeated, not read back
    pinned: Callable[[Planned], str | None] | None = None  # the pin's value (None: the pin is left out)
    shown: Callable[[Planned], str | None] | None = None  # its value in a repro command (None: left out)
    # the value that reruns a recorded cell, as the command line would give it; by default the pin, or the default
    recalled: Callable[[CellResult, Path], T] | None = None

    @property
    def flag(self) -> str:
        """The option, as typer makes it of the parameter's name and a repro command spells it."""
        return "--" + self.name.replace("_", "-")

    def said(self, plan: Planned) -> str | None:
        """Its value in the command that reruns ``plan`` (None: left out); by default, the pin's."""
        say = self.shown or self.pinned
        return say(plan) if say is not None else None

    def apply(self, settings: S, given: Mapping[str, object]) -> S:
        """``settings`` with this setting's fields set from what a command was given (typer's value for the
        parameter of this name; the default when not given)."""
        return self.sets(settings, cast(T, given.get(self.name, self.default)))

    def recall(self, recorded: CellResult, directory: Path) -> T:
        """The value that reruns ``recorded`` (its files in ``directory``)."""
        if self.recalled is not None:
            return self.recalled(recorded, directory)
        value = recorded.pins.to_dict().get(self.pin) if self.pin is not None else None
        return self.default if value is None else cast(T, value)  # a pin is the value's text


# --------------------------------------------------------------------------------------------- how values parse


def _behaviour(settings: S, text: str) -> S:
    from runner.conformance.behaviours import CoinSpecError, parse_behaviour
    from runner.turn.settings import SettingError

    try:
        return replace(settings, behaviour=parse_behaviour(text))
    except CoinSpecError as error:
        raise SettingError(f"--behaviour {error}") from None


def _model(settings: S, text: str | None) -> S:
    from runner.turn.settings import parse_model

    mode, recording = parse_model(text)
    return replace(settings, model=mode, recording=recording)


def _deadline(settings: S, seconds: float | None) -> S:
    from runner.turn.settings import SettingError

    if seconds is not None and seconds <= 0:
        raise SettingError("--deadline must be a positive number of seconds")
    return replace(settings, deadline=seconds)


def _fault(settings: S, text: str | None) -> S:
    from runner.turn.settings import parse_fault

    return replace(settings, fault=parse_fault(text))


def _dialect(settings: S, text: str | None) -> S:
    from runner.turn.settings import parse_dialect

    return replace(settings, dialect=parse_dialect(text))


def _transport(settings: S, text: str) -> S:
    from runner.turn.settings import parse_transport

    return replace(settings, transport=parse_transport(text))


def _runtime(settings: S, text: str) -> S:
    from runner.turn.settings import parse_runtime

    return replace(settings, runtime=parse_runtime(text))


def _protocol(settings: S, text: str | None) -> S:
    from runner.core.protocol import RELEASED_EPOCH
    from runner.turn.settings import parse_protocol

    return replace(settings, protocol=parse_protocol(text) if text is not None else RELEASED_EPOCH)


def _keep(settings: S, keep: bool) -> S:
    return replace(settings, keep=keep)


def _counted_by_the_command(settings: S, _trials: int) -> S:
    """``--trials``: how many runs the command makes of each cell (:func:`runner.matrix.plan.with_trials`), not how
    a cell runs: each trial is a cell of its own, pinned with its number."""
    return settings


# ------------------------------------------------------------------------------- how a planned cell says them


def _model_mode(plan: Planned) -> str | None:
    return plan.model.mode.value


def _model_asked(plan: Planned) -> str | None:
    """A replayed or model-less cell's repro asks for no mode: the column's own choice makes it again."""
    return plan.model.mode.value if plan.model.mode.value in ("scripted", "live") else None


def _model_replayed(recorded: CellResult, directory: Path) -> str | None:
    """A live cell is replayed from its own recorded exchanges (offline); a model-less cell asks for no mode."""
    mode = recorded.pins.model_mode
    if mode == "live":
        return f"replay:{directory / 'model-exchanges.jsonl'}"
    return mode if mode != "none" else None


def _deadline_asked(plan: Planned) -> str | None:
    deadline = plan.options.deadline
    return f"{deadline:g}" if deadline is not None else None


def _deadline_recorded(recorded: CellResult, _directory: Path) -> float | None:
    """No pin: the result records the deadline asked for (``deadlineSeconds``)."""
    return recorded.deadline_seconds


def _fault_played(plan: Planned) -> str | None:
    return plan.model.fault.spec if plan.model.fault else None  # a faulted cell is another experiment


def _dialect_chosen(plan: Planned) -> str | None:
    return plan.dialect if plan.chooses_dialect else None  # a column that cannot choose speaks its own


def _runtime_not_runc(plan: Planned) -> str | None:
    runtime = plan.options.runtime.value
    return runtime if runtime != RUNC else None  # runc, the engine's default, has no pin (every older result's)


def _protocol_pinned(plan: Planned) -> str | None:
    """Epoch 1 has no pin: every result written before epochs were selectable is of epoch 1, and an absent pin
    keeps meaning "1" whichever epoch becomes the default."""
    epoch = plan.options.protocol.value
    return epoch if epoch != FIRST_EPOCH else None


def _protocol_asked(plan: Planned) -> str | None:
    """The default's epoch goes unsaid; once the default moves, a cell of epoch 1 says ``--protocol 1``."""
    from runner.core.protocol import RELEASED_EPOCH

    epoch = plan.options.protocol
    return epoch.value if epoch is not RELEASED_EPOCH else None


def _protocol_recorded(recorded: CellResult, _directory: Path) -> str:
    return recorded.pins.protocol_version or FIRST_EPOCH  # no pin: epoch 1, whatever the default is now


def _behaviour_named(plan: Planned) -> str | None:
    return plan.options.behaviour.value


def _behaviour_played(plan: Planned) -> str | None:
    """A coin's trial reruns alone as the side it landed on: ``repro.sh`` runs one turn, which would be trial 1's
    toss (``runner repro`` reruns the coin itself as that trial, its pins matching)."""
    from runner.conformance.behaviours import tossed

    return tossed(plan.options.behaviour, plan.id, plan.trial).value


# ---------------------------------------------------------------------------------------------------- the rows

RUNTIME_ENV = "RUNNER_RUNTIME"  # runner.sandbox.interface.RUNTIME_ENV, spelt here so that --help loads no sandbox
RUNC = "runc"  # runner.sandbox.interface.Runtime.RUNC
FIRST_EPOCH = "1"  # runner.core.protocol.ProtocolEpoch.ONE

# each row: its name and help; its default, how it sets the settings' fields (and typer's extras); its pin, what is
# pinned, what a repro command says and what a recorded result gives back
BEHAVIOUR = Setting[str](
    "behaviour", (
        "How the CLI conducts itself: " + ", ".join(b.value for b in Behaviour) + f", or {COIN_SPELLING} (each "
        "trial asks with probability P, else answers without asking; seeded, so a run's counts are reproducible)."
    ),
    default=Behaviour.COOPERATIVE.value, sets=_behaviour, fields=("behaviour",),
    pin="behaviour", pinned=_behaviour_named, shown=_behaviour_played,
)
MODEL = Setting[str | None](
    "model", "scripted or live (default: live when the harness's credentials are set, else scripted).",
    default=None, sets=_model, fields=("model", "recording"),
    pin="modelMode", pinned=_model_mode, shown=_model_asked, recalled=_model_replayed,
)
DEADLINE = Setting[float | None](
    "deadline", "Turn deadline in seconds (default: the profile's).",
    default=None, sets=_deadline, fields=("deadline",),
    shown=_deadline_asked, recalled=_deadline_recorded,
)
MODEL_FAULT = Setting[str | None](
    "model_fault", (
        "Make the scripted model fail on purpose, from conversation request STEP (1-based, default 1; "
        "or after-ask: the first request after the ask) on: error (HTTP 500 with the dialect's error "
        "body), stall (never answers; the deadline settles the turn), early-close (the stream starts, "
        "then the connection drops before its terminal event). Scripted model only."
    ),
    default=None, sets=_fault, fields=("fault",), metavar="KIND[@STEP]",
    pin="modelFault", pinned=_fault_played,
)
MODEL_DIALECT = Setting[str | None](
    "model_dialect", (
        "The model API dialect a harness that can choose speaks (the model harness): anthropic, openai-chat, "
        "openai-responses or gemini (default: the profile's model.dialect)."
    ),
    default=None, sets=_dialect, fields=("dialect",), metavar="DIALECT",
    pin="modelDialect", pinned=_dialect_chosen,
)
RUNTIME = Setting[str](
    "runtime", (
        "The OCI runtime the CLI's container runs under: runc (the engine's default: the host's kernel behind the "
        "container's hardening) or runsc (gVisor: a kernel of its own between the CLI and the host's; set it up "
        "once with `sudo make engine RUNTIME=runsc`). The result pins it."
    ),
    default=RUNC, sets=_runtime, fields=("runtime",), envvar=RUNTIME_ENV,
    pin="runtime", pinned=_runtime_not_runc,
)
PROTOCOL = Setting[str | None](
    "protocol", (
        "The SharedOS protocol epoch the turn's MCP server speaks: 1 (what upstream has released, 1.0.0-preview; "
        "the default) or 2 (ADR 0027, unreleased upstream: _meta[\"sharedos/protocolVersion\"] on initialize, "
        "tools/list and every tool result, and a client's pin of another epoch refused with -32602). The result "
        "pins it."
    ),
    default=None, sets=_protocol, fields=("protocol",), metavar="1|2",
    pin="protocolVersion", pinned=_protocol_pinned, shown=_protocol_asked, recalled=_protocol_recorded,
)
TRANSPORT = Setting[str](
    "transport", (
        "How the container reaches the turn's files and sockets: mount (the turn dir bind-mounted; the engine must "
        "share runner's files), stream (the engine API only: archive copies and an exec stream), or auto (mount "
        "where a probe finds it works, else stream). The result records which ran."
    ),
    default="auto", sets=_transport, fields=("transport",),
)
KEEP = Setting[bool](
    "keep", "Keep the container after the turn, for inspection.",
    default=False, sets=_keep, fields=("keep",),
)
TRIALS = Setting[int](
    "trials", (
        "Run each cell N times, one trial after another: trial 1 in the cell's directory, trial k in its "
        "trial-<k>/ (a cell graded from what is declared is written once). The report shows the runs side by side "
        "with their stability; on the scripted model the trials are expected to be identical."
    ),
    default=1, sets=_counted_by_the_command, fields=(), metavar="N", min=1,
)

SETTINGS = (BEHAVIOUR, MODEL, DEADLINE, MODEL_FAULT, MODEL_DIALECT, RUNTIME, PROTOCOL, TRANSPORT, KEEP, TRIALS)


def parsed(settings: S, given: Mapping[str, object]) -> S:
    """``settings`` with every setting's fields set from what a command was given (typer's values by parameter
    name; a setting not given: its default)."""
    for row in SETTINGS:
        settings = row.apply(settings, given)
    return settings


def pins(plan: Planned) -> dict[str, str]:
    """The pins the settings give a planned cell."""
    found = {row.pin: row.pinned(plan) if row.pinned else None for row in SETTINGS if row.pin is not None}
    return {key: value for key, value in found.items() if value is not None}


def argv(plan: Planned) -> list[str]:
    """The settings' part of the command that reruns a planned cell, in the rows' order."""
    said = [(row.flag, row.said(plan)) for row in SETTINGS]
    return [part for flag, value in said if value is not None for part in (flag, value)]


def recalled(recorded: CellResult, directory: Path) -> dict[str, object]:
    """What a command would have been given to rerun ``recorded``, by parameter name."""
    return {row.name: row.recall(recorded, directory) for row in SETTINGS}
