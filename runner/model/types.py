"""The model endpoint's own vocabulary: its errors (and, below, the endpoint settings a profile holds).

Nothing here imports another part of :mod:`runner.model`, so every module of the endpoint (the
config, the replay, the live forwarder) and the harness profiles can take these from one place.
"""

from __future__ import annotations


class ModelEndpointError(ValueError):
    """A model endpoint that cannot be started as configured."""


class LiveCredentialMissing(ModelEndpointError):
    def __init__(self, variables: list[str]) -> None:
        super().__init__(
            "live model mode needs a host credential, but none of these variables is set: " + ", ".join(variables)
        )
        self.variables = variables
