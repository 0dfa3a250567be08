"""Which model a CLI talks to on this turn: scripted, live or a replayed recording. Pure.

``replay`` serves a recorded exchange log back, so a live cell reproduces offline. The default
is live when the harness's credentials are present on the host and scripted otherwise;
whichever is used is stated in the output and the result. ``--model live`` without credentials is
an error naming the variables. A live base URL (the profile's ``model.live.base_url``, or ``RUNNER_LIVE_BASE_URL``
in its place) that would carry the host's key in plain http to anything but loopback is an error naming that
setting (:func:`runner.model.live_policy.check_base_url`), here, before any turn starts.

``--model-fault KIND[@STEP]`` (:mod:`runner.model.faults`) is played by the scripted model only: it
implies ``scripted`` when no mode is asked for, and is an error with any other mode (a live or
replayed model is what it is) or with a harness that talks to no model.

The mode and the fault arrive parsed (:class:`runner.turn.settings.TurnSettings`); what is decided here is
whether they fit this column.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from runner.harnesses.profile import Profile
from runner.model.live_policy import LiveBaseUrlError, check_base_url
from runner.model.settings import ModelFault, ModelMode
from runner.turn.settings import LIVE_BASE_URL_ENV, REPLAY_PREFIX, SettingError


class ModelChoiceError(SettingError):
    """The requested model mode cannot be used for this harness."""


@dataclass(frozen=True)
class ModelChoice:
    mode: ModelMode
    why: str
    credential: str | None = None  # the host variable live mode takes its key from (never its value)
    recording: Path | None = None  # replay: the exchange log served back
    fault: ModelFault | None = None  # scripted: the injected fault

    def to_json(self) -> dict[str, str | None]:
        body = {"mode": self.mode.value, "why": self.why, "credential": self.credential}
        if self.recording:
            body["recording"] = str(self.recording)
        if self.fault:
            body["fault"] = self.fault.spec
        return body


def model_option(mode: ModelMode | None, recording: Path | None) -> str | None:
    """The ``--model`` text that asks for ``mode`` (what the messages quote)."""
    if mode is ModelMode.REPLAY:
        return f"{REPLAY_PREFIX}{recording}"
    return mode.value if mode is not None else None


def choose_model(
    requested: ModelMode | None, profile: Profile, environ: Mapping[str, str], fault: ModelFault | None = None,
    recording: Path | None = None, live_base_url: str | None = None,
) -> ModelChoice:
    """The model for this turn: ``requested`` (None: chosen here), ``recording`` (replay's log), ``fault`` (played
    by the scripted model), checked against the column; ``environ`` holds the host's credential variables,
    ``live_base_url`` the host's ``RUNNER_LIVE_BASE_URL`` (where live mode forwards instead of the profile's)."""
    if fault is None:
        choice = _choose(requested, recording, profile, environ)
        if choice.mode is ModelMode.LIVE:
            _check_live_base_url(profile, live_base_url)
        return choice
    if profile.model is None:
        raise ModelChoiceError(f"--model-fault {fault.shown}: the {profile.id} harness talks to no model")
    if requested not in (None, ModelMode.SCRIPTED):
        raise ModelChoiceError(
            f"--model-fault {fault.shown} applies only to the scripted model, not to --model "
            f"{model_option(requested, recording)}"
        )
    choice = _choose(ModelMode.SCRIPTED, None, profile, environ)
    why = choice.why if requested else "--model-fault plays its fault on the scripted model"
    return replace(choice, why=why, fault=fault)


def _choose(
    requested: ModelMode | None, recording: Path | None, profile: Profile, environ: Mapping[str, str]
) -> ModelChoice:
    if profile.model is None:
        if requested not in (None, ModelMode.SCRIPTED):
            raise ModelChoiceError(
                f"the {profile.id} harness talks to no model; --model {model_option(requested, recording)} does not "
                "apply"
            )
        return ModelChoice(ModelMode.NONE, f"the {profile.id} harness plays its script and talks to no model")
    if requested is ModelMode.REPLAY:
        if recording is None or not recording.is_file():
            raise ModelChoiceError(
                f"--model {model_option(requested, recording)}: no recorded exchange log at {recording}"
            )
        return ModelChoice(ModelMode.REPLAY, f"replaying {recording}, offline", recording=recording)
    live = profile.model.live
    present = next((name for name in (live.credentials if live else []) if environ.get(name)), None)
    if requested is ModelMode.SCRIPTED:
        return ModelChoice(ModelMode.SCRIPTED, "--model scripted")
    if requested is ModelMode.LIVE:
        if live is None:
            raise ModelChoiceError(f"the {profile.id} profile declares no live endpoint (model.live)")
        if present is None:
            raise ModelChoiceError(
                f"--model live needs one of {', '.join(live.credentials)} set on the host; none is"
            )
        return ModelChoice(ModelMode.LIVE, f"--model live, with the key from {present}", present)
    if requested is not None:
        raise ModelChoiceError(f"--model {requested.value} is not a mode a command can ask for")
    if present is not None:
        return ModelChoice(ModelMode.LIVE, f"{present} is set on the host", present)
    names = ", ".join(live.credentials) if live else "none declared"
    return ModelChoice(ModelMode.SCRIPTED, f"no credential on the host ({names}): the scripted model plays the case")


def _check_live_base_url(profile: Profile, override: str | None) -> None:
    """The live base URL this column's turns would forward to, refused (naming the setting) when the host's key
    would travel in the clear."""
    endpoint = profile.model
    if endpoint is None or endpoint.live is None:  # pragma: no cover - a live choice has both
        return
    if override:
        url, setting = override, LIVE_BASE_URL_ENV
    else:
        # the model column asked for another dialect carries that dialect's endpoint (ModelEndpoint.in_dialect)
        from_dialects = endpoint.dialects.get(endpoint.dialect) == endpoint.live
        field = f"model.dialects.{endpoint.dialect}.base_url" if from_dialects else "model.live.base_url"
        url, setting = endpoint.live.base_url, f"{field} of {profile.source or profile.id}"
    try:
        check_base_url(url, setting)
    except LiveBaseUrlError as error:
        raise ModelChoiceError(str(error)) from None
