"""The host-side model endpoint a vendor CLI reaches through ``model.sock``.

``scripted`` plays a turn's action list in the CLI's own API dialect (OpenAI Responses, OpenAI Chat
Completions, Anthropic Messages, Gemini); ``live`` forwards to the vendor API with the host's
credential; ``replay`` serves a recorded exchange log back, request by request, and stops at the
first request that differs from the recording. Every exchange is written, scrubbed, to an exchange log.

API::

    config = ModelEndpointConfig(mode="scripted", actions=[...], scrubber=scrubber)
    # or ModelEndpointConfig.from_profile(profile.model, mode=..., scrubber=..., actions=...)
    async with serve_model(turn_dir / "model.sock", config, turn_dir / "model-exchanges.jsonl",
                           server_name=profile.mcp_server_name) as handle:
        ...  # handle.requests, handle.by_dialect, handle.side_requests, handle.stalls, ...
        # handle.usage (UsageTotals: conversation / side), handle.generation_requests, handle.tool_requests,
        # handle.offered_tools, handle.error_statuses, handle.last_status
    async with serve_model_tcp(config, log_path, host="127.0.0.1", port=0) as handle:
        handle.url  # "http://127.0.0.1:<port>"

    config = ModelEndpointConfig(mode="replay", recording=earlier_turn / "model-exchanges.jsonl", scrubber=...)
    async with serve_model(...) as handle:
        ...  # handle.replayed; handle.divergence: None, or {"step", "path", "what", "field"?}
    first_divergence(recorded_request, received_request, dialect)  # None, or a sentence naming the field

Where the rules live: the step rule in :mod:`runner.model.script`, the tool-name rule in
:mod:`runner.model.names`, the live URL and header rules in :mod:`runner.model.live`, the replay
rule in :mod:`runner.model.replay` and what it normalises in :mod:`runner.model.compare`, what each CLI
was measured to send and need in the docstring of each :mod:`runner.model.dialects` module, and the
exchange-log record in :mod:`runner.model.exchange_log`, how an answer's usage is read in
:mod:`runner.model.usage_meter` (and each dialect's fields in its module), and the tool policy a turn's requests
support in :mod:`runner.model.tool_policy`. ``python -m runner.model`` runs it standalone.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # the names the package offers, for the type checker (``import X as X``: re-exported)
    from runner.model.compare import first_divergence as first_divergence
    from runner.model.config import ModelEndpointConfig as ModelEndpointConfig
    from runner.model.config import ModelMode as ModelMode
    from runner.model.replay import RecordingError as RecordingError
    from runner.model.script import ScriptError as ScriptError
    from runner.model.server import ModelEndpointHandle as ModelEndpointHandle
    from runner.model.server import serve_model as serve_model
    from runner.model.server import serve_model_tcp as serve_model_tcp
    from runner.model.types import DEFAULT_MODEL as DEFAULT_MODEL
    from runner.model.types import DEFAULT_PLACEHOLDER_KEY as DEFAULT_PLACEHOLDER_KEY
    from runner.model.types import LiveCredentialMissing as LiveCredentialMissing
    from runner.model.types import ModelEndpointError as ModelEndpointError

# The same names at run time, each imported from its module when first asked for, so that importing one light
# module of the package (runner.model.types, which the harness profiles use) does not start the HTTP server's
# imports (uvicorn, starlette, httpx2). tests/unit/test_model_exports.py holds the two lists to each other.
_HOMES = {
    "DEFAULT_MODEL": "types",
    "DEFAULT_PLACEHOLDER_KEY": "types",
    "LiveCredentialMissing": "types",
    "ModelEndpointConfig": "config",
    "ModelEndpointError": "types",
    "ModelEndpointHandle": "server",
    "ModelMode": "config",
    "RecordingError": "replay",
    "ScriptError": "script",
    "first_divergence": "compare",
    "serve_model": "server",
    "serve_model_tcp": "server",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_HOMES})
