"""The model endpoint's own vocabulary: the settings a profile's ``model:`` section holds, and the errors.

:class:`ModelEndpoint` (how a CLI reaches its model) and :class:`LiveModel` (where live mode
forwards) are validated pydantic models: :mod:`runner.harnesses.profile` embeds them in a profile's
schema, so a bad ``model:`` section fails with the profile's own error naming the file and the field.
Nothing here imports another part of :mod:`runner.model` or anything above it, so every module of
the endpoint and the harness profiles take these from one place.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field

DEFAULT_PLACEHOLDER_KEY = "sk-runner-placeholder-not-a-key"
DEFAULT_MODEL = "runner-scripted"

DialectName = Literal["openai-responses", "openai-chat", "anthropic-messages", "gemini"]
DIALECT_NAMES: tuple[str, ...] = get_args(DialectName)
DIALECT_ALIASES = {"anthropic": "anthropic-messages"}  # what --model-dialect also accepts
AuthScheme = Literal["bearer", "x-api-key", "x-goog-api-key"]


class ModelEndpointError(ValueError):
    """A model endpoint that cannot be started as configured."""


class LiveCredentialMissing(ModelEndpointError):
    def __init__(self, variables: list[str]) -> None:
        super().__init__(
            "live model mode needs a host credential, but none of these variables is set: " + ", ".join(variables)
        )
        self.variables = variables


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class LiveModel(_Strict):
    """Where live mode forwards the CLI's model requests, and which host credential it adds."""

    base_url: str
    credentials: list[str] = Field(min_length=1, description="host variables, first one set wins")
    auth: AuthScheme = "bearer"
    model: str | None = None  # the model id a live run asks for; None: the CLI's own default


class ModelEndpoint(_Strict):
    """How the CLI reaches its model: a loopback port inside the container, forwarded to model.sock."""

    dialect: DialectName
    port: int = Field(default=8787, ge=1024, le=65535)
    scripted_model: str = DEFAULT_MODEL
    placeholder_key: str = DEFAULT_PLACEHOLDER_KEY
    live: LiveModel | None = None
    # the other dialects this column can be asked to speak (``--model-dialect``), each with its live endpoint;
    # a vendor CLI speaks only its own and leaves this empty
    dialects: dict[DialectName, LiveModel] = {}

    @property
    def speaks(self) -> list[str]:
        """Every dialect this column can be asked for, its own first."""
        return [self.dialect, *(d for d in self.dialects if d != self.dialect)]

    def in_dialect(self, name: str) -> ModelEndpoint:
        """This endpoint speaking ``name`` (a name in :attr:`speaks`, or an alias), with that dialect's live
        endpoint; :class:`ModelEndpointError` for a dialect it cannot speak."""
        name = DIALECT_ALIASES.get(name, name)
        if name == self.dialect:
            return self
        if name not in self.dialects:
            raise ModelEndpointError(f"speaks {', '.join(self.speaks)}, not {name}")
        return self.model_copy(update={"dialect": name, "live": self.dialects[name]})


def resolve_credential(live: LiveModel, environ: Mapping[str, str]) -> tuple[str, str]:
    """``(variable, value)`` of the first of ``live.credentials`` set (non-empty) in ``environ``."""
    for name in live.credentials:
        value = environ.get(name, "")
        if value:
            return name, value
    raise LiveCredentialMissing(list(live.credentials))
