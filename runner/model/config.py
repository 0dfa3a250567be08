"""What the model endpoint is asked to be: its mode and what that mode needs."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any

from runner.core.scrub import Scrubber
from runner.model.faults import FaultSpecError, ModelFault, as_fault
from runner.model.replay import RecordedExchange, load_recording
from runner.model.script import normalise_actions
from runner.model.types import (
    DEFAULT_MODEL,
    DEFAULT_PLACEHOLDER_KEY,
    LiveModel,
    ModelEndpoint,
    ModelEndpointError,
    resolve_credential,
)


class ModelMode(StrEnum):
    SCRIPTED = "scripted"  # a deterministic model playing the turn's action list
    LIVE = "live"  # forwards to the vendor API with the host's credential
    REPLAY = "replay"  # serves a recorded exchange log back, stopping at the first divergence


@dataclass(frozen=True, kw_only=True)
class ModelEndpointConfig:
    """``mode``; ``actions`` (scripted: action dicts or ``Action`` objects, validated here); ``live``
    (live: where to forward and which host variable holds the credential); ``scrubber`` (everything
    logged passes through it); ``placeholder_key`` (the only key the CLI holds); ``model`` (the model
    id the scripted model reports when a request names none); ``environ`` (where live mode reads the
    credential; default ``os.environ``); ``recording`` (replay: the exchange log to serve back, read
    and checked here, see :mod:`runner.model.replay`); ``fault`` (scripted only: a
    :class:`~runner.model.faults.ModelFault` or its ``KIND[@STEP]`` text, parsed here, see
    :mod:`runner.model.faults`)."""

    mode: ModelMode | str  # "scripted" | "live" | "replay"; stored as a ModelMode
    scrubber: Scrubber
    actions: list[dict[str, Any]] = field(default_factory=list)
    live: LiveModel | None = None
    placeholder_key: str = DEFAULT_PLACEHOLDER_KEY
    model: str = DEFAULT_MODEL
    environ: Mapping[str, str] | None = field(default=None, repr=False)
    recording: Path | None = None
    fault: ModelFault | str | None = None
    # the column filters nothing its model calls (``issues_uncatalogued``): the scripted model also makes the calls
    # the request does not offer, under their canonical names (runner.model.names.invented)
    invents: bool = False
    exchanges: tuple[RecordedExchange, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        try:
            mode = ModelMode(self.mode)
        except ValueError:
            raise ModelEndpointError(
                f"unknown model mode {self.mode!r} (expected one of {', '.join(m.value for m in ModelMode)})"
            ) from None
        object.__setattr__(self, "mode", mode)
        object.__setattr__(self, "actions", normalise_actions(self.actions))
        try:
            object.__setattr__(self, "fault", as_fault(self.fault))
        except FaultSpecError as err:
            raise ModelEndpointError(str(err)) from None
        if self.fault is not None and mode is not ModelMode.SCRIPTED:
            # a live or replayed model is what it is; a fault is something only the script can play
            raise ModelEndpointError(f"a model fault applies only to the scripted model, not in {mode.value} mode")
        if mode is ModelMode.REPLAY:
            if self.recording is None:
                raise ModelEndpointError(
                    "replay model mode needs a recording (the model-exchanges.jsonl of an earlier turn); none given"
                )
            object.__setattr__(self, "recording", Path(self.recording))
            object.__setattr__(self, "exchanges", load_recording(Path(self.recording)))
        elif self.recording is not None:
            raise ModelEndpointError(f"a recording is served only in replay mode, not in {mode.value} mode")
        if mode is ModelMode.LIVE:
            if self.live is None:
                raise ModelEndpointError("live model mode needs the profile's model.live settings (none given)")
            resolve_credential(self.live, self.host_environ)  # fail at construction, naming the variables

    @property
    def kind(self) -> ModelMode:
        """``mode`` as a :class:`ModelMode` (it is stored as one after construction)."""
        return ModelMode(self.mode)

    @property
    def injected_fault(self) -> ModelFault | None:
        """``fault`` as a :class:`ModelFault` (it is stored as one after construction)."""
        return as_fault(self.fault)

    @property
    def host_environ(self) -> Mapping[str, str]:
        """Where the live credential is read: ``environ``, or the process environment when none was
        given. The model layer's only read of the environment (the live credential variables the
        profile's ``model.live.credentials`` names); ``python -m runner.model`` passes its own."""
        return os.environ if self.environ is None else self.environ

    @classmethod
    def from_profile(
        cls,
        endpoint: ModelEndpoint,
        *,
        mode: ModelMode | str,
        scrubber: Scrubber,
        actions: list[Any] | None = None,
        environ: Mapping[str, str] | None = None,
        recording: Path | None = None,
        fault: ModelFault | str | None = None,
    ) -> ModelEndpointConfig:
        """The config for a profile's ``model:`` section."""
        return cls(
            mode=ModelMode(mode), scrubber=scrubber, actions=list(actions or []), live=endpoint.live,
            placeholder_key=endpoint.placeholder_key, model=endpoint.scripted_model, environ=environ,
            recording=recording, fault=fault,
        )

