"""Which model a CLI talks to on this turn: scripted, live or (later) a replayed recording. Pure.

``replay:PATH`` serves a recorded exchange log back, so a live cell reproduces offline. The default
is live when the harness's credentials are present on the host and scripted otherwise;
whichever is used is stated in the output and the result. ``--model live`` without credentials is
an error naming the variables.

``--model-fault KIND[@STEP]`` (:mod:`runner.model.faults`) is played by the scripted model only: it
implies ``scripted`` when no mode is asked for, and is an error with any other mode (a live or
replayed model is what it is) or with a harness that talks to no model.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from runner.errors import UsageError
from runner.harnesses.profile import Profile

Mode = Literal["none", "scripted", "live", "replay"]
REPLAY_PREFIX = "replay:"


class ModelChoiceError(UsageError, ValueError):
    """The requested model mode cannot be used for this harness."""


@dataclass(frozen=True)
class ModelChoice:
    mode: Mode
    why: str
    credential: str | None = None  # the host variable live mode takes its key from (never its value)
    recording: str | None = None  # replay: the exchange log served back
    fault: str | None = None  # scripted: the injected fault, as its canonical KIND@STEP

    def to_json(self) -> dict[str, str | None]:
        body = {"mode": self.mode, "why": self.why, "credential": self.credential}
        if self.recording:
            body["recording"] = self.recording
        if self.fault:
            body["fault"] = self.fault
        return body


def choose_model(
    requested: str | None, profile: Profile, environ: Mapping[str, str], fault: str | None = None
) -> ModelChoice:
    """The model for this turn; ``fault`` is a ``--model-fault`` value (parsed and checked here)."""
    if fault is None:
        return _choose(requested, profile, environ)
    from runner.model.faults import FaultSpecError, ModelFault

    try:
        spec = ModelFault.parse(fault).spec
    except FaultSpecError as error:
        raise ModelChoiceError(str(error)) from None
    if profile.model is None:
        raise ModelChoiceError(f"--model-fault {fault}: the {profile.id} harness talks to no model")
    if requested not in (None, "scripted"):
        raise ModelChoiceError(
            f"--model-fault {fault} applies only to the scripted model, not to --model {requested}"
        )
    choice = _choose("scripted", profile, environ)
    why = choice.why if requested else "--model-fault plays its fault on the scripted model"
    return replace(choice, why=why, fault=spec)


def _choose(requested: str | None, profile: Profile, environ: Mapping[str, str]) -> ModelChoice:
    if profile.model is None:
        if requested not in (None, "scripted"):
            raise ModelChoiceError(f"the {profile.id} harness talks to no model; --model {requested} does not apply")
        return ModelChoice("none", f"the {profile.id} harness plays its script and talks to no model")
    if requested is not None and requested.startswith(REPLAY_PREFIX):
        recording = Path(requested[len(REPLAY_PREFIX):])
        if not recording.is_file():
            raise ModelChoiceError(f"--model {requested}: no recorded exchange log at {recording}")
        return ModelChoice("replay", f"replaying {recording}, offline", recording=str(recording))
    live = profile.model.live
    present = next((name for name in (live.credentials if live else []) if environ.get(name)), None)
    if requested == "scripted":
        return ModelChoice("scripted", "--model scripted")
    if requested == "live":
        if live is None:
            raise ModelChoiceError(f"the {profile.id} profile declares no live endpoint (model.live)")
        if present is None:
            raise ModelChoiceError(
                f"--model live needs one of {', '.join(live.credentials)} set on the host; none is"
            )
        return ModelChoice("live", f"--model live, with the key from {present}", present)
    if requested is not None:
        raise ModelChoiceError(f"unknown --model {requested!r}: expected scripted, live or replay:PATH")
    if present is not None:
        return ModelChoice("live", f"{present} is set on the host", present)
    names = ", ".join(live.credentials) if live else "none declared"
    return ModelChoice("scripted", f"no credential on the host ({names}): the scripted model plays the case")
