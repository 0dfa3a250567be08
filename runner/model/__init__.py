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
exchange-log record in :mod:`runner.model.exchange_log`. ``python -m runner.model`` runs it standalone.
"""

from runner.model.compare import first_divergence
from runner.model.config import DEFAULT_MODEL, DEFAULT_PLACEHOLDER_KEY, ModelEndpointConfig, ModelMode
from runner.model.replay import RecordingError
from runner.model.script import ScriptError
from runner.model.server import ModelEndpointHandle, serve_model, serve_model_tcp
from runner.model.types import LiveCredentialMissing, ModelEndpointError

__all__ = [
    "DEFAULT_MODEL",
    "DEFAULT_PLACEHOLDER_KEY",
    "LiveCredentialMissing",
    "ModelEndpointConfig",
    "ModelEndpointError",
    "ModelEndpointHandle",
    "ModelMode",
    "RecordingError",
    "ScriptError",
    "first_divergence",
    "serve_model",
    "serve_model_tcp",
]
