"""What the model endpoint is asked to be: its mode and what that mode needs."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runner.core.outcomes import JsonValue
from runner.core.scrub import Scrubber
from runner.model.live_policy import check_base_url, policy_for
from runner.model.names import BUILT_IN, ToolNaming
from runner.model.replay import RecordedExchange, load_recording
from runner.model.script import normalise_actions
from runner.model.settings import ModelFault, ModelMode
from runner.model.types import (
    DEFAULT_MODEL,
    DEFAULT_PLACEHOLDER_KEY,
    LiveModel,
    ModelEndpoint,
    ModelEndpointError,
    resolve_credential,
)

__all__ = ["ModelEndpointConfig", "ModelMode"]


@dataclass(frozen=True, kw_only=True)
class ModelEndpointConfig:
    """``mode``; ``actions`` (scripted: action dicts or ``Action`` objects, validated here); ``live``
    (live: where to forward and which host variable holds the credential); ``scrubber`` (everything
    logged passes through it); ``placeholder_key`` (the only key the CLI holds); ``model`` (the model
    id the scripted model reports when a request names none); ``environ`` (the host's variables, where
    live mode reads the credential: given by the command's edge, which alone reads the environment);
    ``recording`` (replay: the exchange log to serve back, read and checked here, see
    :mod:`runner.model.replay`); ``fault`` (scripted only, see :mod:`runner.model.faults`); ``dialect`` (the
    column's, ``model.dialect``: live mode forwards only that dialect's model calls, :mod:`runner.model.live_policy`,
    and answers what it refuses in that dialect's error shape). The mode and the fault come parsed
    (:mod:`runner.model.settings`); what is checked here is that they fit together."""

    mode: ModelMode
    scrubber: Scrubber
    actions: list[dict[str, JsonValue]] = field(default_factory=list)  # normalised (and checked) on construction
    live: LiveModel | None = None
    placeholder_key: str = DEFAULT_PLACEHOLDER_KEY
    model: str = DEFAULT_MODEL
    environ: Mapping[str, str] = field(default_factory=dict, repr=False)
    recording: Path | None = None
    fault: ModelFault | None = None
    dialect: str | None = None
    # the column filters nothing its model calls (``issues_uncatalogued``): the scripted model also makes the calls
    # the request does not offer, under their canonical names (runner.model.names.invented)
    invents: bool = False
    # how the column's CLI names the MCP tools it offers its model (its harness package's ``tool_naming``): the
    # scripted model calls them by those names, and tells a side request by their absence
    naming: ToolNaming = BUILT_IN
    exchanges: tuple[RecordedExchange, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        mode = self.mode
        if mode is ModelMode.NONE:
            raise ModelEndpointError("a column that talks to no model is served no model endpoint (mode none)")
        object.__setattr__(self, "actions", normalise_actions(self.actions))
        if self.fault is not None and mode is not ModelMode.SCRIPTED:
            # a live or replayed model is what it is; a fault is something only the script can play
            raise ModelEndpointError(f"a model fault applies only to the scripted model, not in {mode.value} mode")
        if mode is ModelMode.REPLAY:
            if self.recording is None:
                raise ModelEndpointError(
                    "replay model mode needs a recording (the model-exchanges.jsonl of an earlier turn); none given"
                )
            object.__setattr__(self, "exchanges", load_recording(self.recording))
        elif self.recording is not None:
            raise ModelEndpointError(f"a recording is served only in replay mode, not in {mode.value} mode")
        if mode is ModelMode.LIVE:
            if self.live is None:
                raise ModelEndpointError("live model mode needs the profile's model.live settings (none given)")
            resolve_credential(self.live, self.environ)  # fail at construction, naming the variables
            if self.dialect is None:
                raise ModelEndpointError("live model mode needs the column's dialect (model.dialect): it forwards "
                                         "only that dialect's model calls")
            policy_for(self.dialect)
            check_base_url(self.live.base_url, "the live base URL")

    @classmethod
    def from_profile(
        cls,
        endpoint: ModelEndpoint,
        *,
        mode: ModelMode,
        scrubber: Scrubber,
        actions: Iterable[object] | None = None,
        environ: Mapping[str, str] | None = None,
        recording: Path | None = None,
        fault: ModelFault | None = None,
    ) -> ModelEndpointConfig:
        """The config for a profile's ``model:`` section."""
        return cls(
            mode=mode, scrubber=scrubber, actions=normalise_actions(actions or []), live=endpoint.live,
            placeholder_key=endpoint.placeholder_key, model=endpoint.scripted_model, environ=environ or {},
            recording=recording, fault=fault, dialect=endpoint.dialect,
        )
