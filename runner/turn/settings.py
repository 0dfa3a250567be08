"""How a command's turns run: one frozen, typed record, built once at the command's edge (:mod:`runner.cli.settings`)
from its options and the host's environment, and carried down unchanged; nothing below parses a setting again or
reads the environment (the last exceptions, the engine's address and the image code's locations, are counted in
tests/unit/test_environment_edge.py).

:class:`TurnSettings` is what every turn of a command shares (the plan's options,
:class:`runner.matrix.plan.CellOptions`, add what only the matrix needs); :class:`Host` is what the host's
environment says. Light to import: enums and dataclasses, no engine, SDK or case data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runner.conformance.behaviours import Behaviour, Coin
from runner.core.protocol import RELEASED_EPOCH, ProtocolEpoch, parse_epoch
from runner.errors import UsageError
from runner.images.settings import ImageSettings
from runner.model.settings import Dialect, FaultSpecError, ModelFault, ModelMode
from runner.sandbox.interface import RUNTIME_ENV, Runtime, TransportChoice

REPLAY_PREFIX = "replay:"
FAULT_ENV = "RUNNER_FAULT"
LIVE_BASE_URL_ENV = "RUNNER_LIVE_BASE_URL"


class SettingError(UsageError, ValueError):
    """An option's value that is not one the option takes; the message names the option."""


@dataclass(frozen=True)
class Host:
    """The host's environment, as the turn uses it (read once, by the edge)."""

    # every variable: the credentials live mode may forward, and every value the scrubber keeps out of the files
    variables: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)
    # RUNNER_FAULT=latch-disabled: a deliberately broken build (the MCP server calls the envelope, not the latch),
    # for proving that the judge and the gate catch it
    latch_disabled: bool = False
    # RUNNER_LIVE_BASE_URL: where live mode forwards instead of the profile's base_url (a gateway, a recording
    # proxy, or in the tests a local upstream standing in for the vendor)
    live_base_url: str | None = None
    # RUNNER_REPO_ROOT, RUNNER_CACHE_DIR, RUNNER_CA_CERTS_DIR, the pinned bases: where the image code (and the
    # wiring probe's cache) finds things, and the environment npm and mmdebstrap run with
    images: ImageSettings = field(default_factory=ImageSettings, compare=False)  # derived from the variables

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> Host:
        """What ``environ`` (the process environment, handed in by the edge that reads it) says."""
        variables = dict(environ)
        return cls(variables, latch_disabled=variables.get(FAULT_ENV) == "latch-disabled",
                   live_base_url=variables.get(LIVE_BASE_URL_ENV) or None,
                   images=ImageSettings.from_environ(variables))


@dataclass(frozen=True)
class TurnSettings:
    """What the command asked for, parsed: every turn of the command runs with these."""

    behaviour: Behaviour | Coin = Behaviour.COOPERATIVE  # a coin is tossed per trial (CellPlan.turn_settings)
    model: ModelMode | None = None  # --model scripted|live|replay:PATH; None: chosen per column
    recording: Path | None = None  # --model replay:PATH: the exchange log served back
    fault: ModelFault | None = None  # --model-fault KIND[@STEP] (the scripted model only)
    dialect: Dialect | None = None  # --model-dialect NAME: the dialect a column that can choose speaks
    # --transport: how the container reaches the turn's files and sockets (auto: the wiring probe decides)
    transport: TransportChoice = TransportChoice.AUTO
    deadline: float | None = None  # --deadline SECONDS; the profile's when None
    keep: bool = False  # --keep: the container is left for inspection
    runtime: Runtime = Runtime.RUNC  # --runtime runc|runsc (RUNNER_RUNTIME): the container's OCI runtime
    protocol: ProtocolEpoch = RELEASED_EPOCH  # --protocol 1|2: the SharedOS protocol epoch the turn's MCP speaks
    run_id: str = "run"  # the run's containers are labelled with it
    host: Host = Host()


# ------------------------------------------------------------------------------- parsing, at the edge only
# each the parser of one row of runner.matrix.options, the table the commands, the pins and the repro derive from


def parse_model(text: str | None) -> tuple[ModelMode | None, Path | None]:
    """``--model scripted|live|replay:PATH`` as (mode, recording); (None, None) when not given."""
    if text is None:
        return None, None
    if text.startswith(REPLAY_PREFIX):
        return ModelMode.REPLAY, Path(text[len(REPLAY_PREFIX):])
    if text in (ModelMode.SCRIPTED, ModelMode.LIVE):
        return ModelMode(text), None
    raise SettingError(f"unknown --model {text!r}: expected scripted, live or replay:PATH")


def parse_fault(text: str | None) -> ModelFault | None:
    """``--model-fault KIND[@STEP]``."""
    try:
        return ModelFault.parse(text) if text is not None else None
    except FaultSpecError as error:
        raise SettingError(str(error)) from None


def parse_dialect(text: str | None) -> Dialect | None:
    """``--model-dialect NAME`` (a dialect or an alias)."""
    try:
        return Dialect.parse(text) if text is not None else None
    except ValueError as error:
        raise SettingError(str(error)) from None


def parse_transport(text: str) -> TransportChoice:
    """``--transport mount|stream|auto``."""
    try:
        return TransportChoice(text)
    except ValueError:
        raise SettingError(f"--transport must be mount, stream or auto, not {text!r}") from None


def parse_protocol(text: str) -> ProtocolEpoch:
    """``--protocol 1|2``."""
    try:
        return parse_epoch(text)
    except ValueError as error:
        raise SettingError(f"--protocol: {error}") from None


def parse_runtime(text: str) -> Runtime:
    """``--runtime runc|runsc`` (or ``RUNNER_RUNTIME``)."""
    try:
        return Runtime(text)
    except ValueError:
        known = ", ".join(r.value for r in Runtime)
        raise SettingError(f"--runtime (or {RUNTIME_ENV}) must be one of {known}, not {text!r}") from None
