"""Live mode's pure parts: the URL rule, the header rewrite, the credential lookup, the config."""

from __future__ import annotations

import pytest

from runner.core.scrub import Scrubber
from runner.model import LiveCredentialMissing, ModelEndpointConfig, ModelEndpointError, ModelMode
from runner.model.live import auth_header, forward_request_headers, forward_response_headers, upstream_url
from runner.model.types import LiveModel, ModelEndpoint, resolve_credential

LIVE = LiveModel(base_url="https://api.example.com/v1", credentials=["RUNNER_A_KEY", "RUNNER_B_KEY"])


@pytest.mark.parametrize(
    ("base", "path", "query", "expected"),
    [
        ("https://api.openai.com/v1", "/v1/responses", "", "https://api.openai.com/v1/responses"),
        ("https://api.openai.com/v1/", "/v1/chat/completions", "", "https://api.openai.com/v1/chat/completions"),
        ("https://api.openai.com/v1", "/chat/completions", "", "https://api.openai.com/v1/chat/completions"),
        ("https://api.anthropic.com", "/v1/messages", "beta=true", "https://api.anthropic.com/v1/messages?beta=true"),
        ("https://generativelanguage.googleapis.com", "/v1beta/models/g:streamGenerateContent", "alt=sse",
         "https://generativelanguage.googleapis.com/v1beta/models/g:streamGenerateContent?alt=sse"),
        ("https://generativelanguage.googleapis.com/v1beta", "/v1beta/models/g:generateContent", "key=sk-fake",
         "https://generativelanguage.googleapis.com/v1beta/models/g:generateContent"),
        ("https://dashscope.example.com/compatible-mode/v1", "/v1/chat/completions", "",
         "https://dashscope.example.com/compatible-mode/v1/chat/completions"),
        ("https://open.example.cn/api/paas/v4", "/v1/chat/completions", "",
         "https://open.example.cn/api/paas/v4/chat/completions"),
        ("http://127.0.0.1:9999", "/v1/models", "", "http://127.0.0.1:9999/v1/models"),
    ],
)
def test_upstream_url(base: str, path: str, query: str, expected: str) -> None:
    assert upstream_url(base, path, query) == expected


def test_auth_header() -> None:
    assert auth_header("bearer", "k") == ("authorization", "Bearer k")
    assert auth_header("x-api-key", "k") == ("x-api-key", "k")
    assert auth_header("x-goog-api-key", "k") == ("x-goog-api-key", "k")


def test_request_headers_lose_the_client_credential() -> None:
    sent = [("Authorization", "Bearer sk-placeholder"), ("x-api-key", "sk-placeholder"), ("Host", "127.0.0.1:8787"),
            ("Content-Length", "10"), ("Connection", "keep-alive"), ("Accept-Encoding", "gzip"),
            ("anthropic-version", "2023-06-01"), ("User-Agent", "claude-cli/2.1.328")]
    out = forward_request_headers(sent, ("x-api-key", "HOST"))
    assert out == [("anthropic-version", "2023-06-01"), ("User-Agent", "claude-cli/2.1.328"),
                   ("accept-encoding", "identity"), ("x-api-key", "HOST")]


def test_response_headers_drop_hop_by_hop() -> None:
    got = forward_response_headers([("content-type", "text/event-stream"), ("transfer-encoding", "chunked"),
                                    ("content-length", "5"), ("request-id", "r1")])
    assert got == [("content-type", "text/event-stream"), ("request-id", "r1")]


def test_first_set_credential_wins() -> None:
    assert resolve_credential(LIVE, {"RUNNER_B_KEY": "b", "RUNNER_A_KEY": ""}) == ("RUNNER_B_KEY", "b")
    assert resolve_credential(LIVE, {"RUNNER_A_KEY": "a", "RUNNER_B_KEY": "b"}) == ("RUNNER_A_KEY", "a")


def test_missing_credential_names_the_variables() -> None:
    with pytest.raises(LiveCredentialMissing, match="RUNNER_A_KEY, RUNNER_B_KEY"):
        ModelEndpointConfig(mode=ModelMode.LIVE, live=LIVE, scrubber=Scrubber({}), environ={})


def test_config_validation() -> None:
    config = ModelEndpointConfig(mode=ModelMode.SCRIPTED, scrubber=Scrubber({}),
                                 actions=[{"do": "finish", "text": "x"}])
    assert config.mode is ModelMode.SCRIPTED
    with pytest.raises(ModelEndpointError, match="talks to no model"):
        ModelEndpointConfig(mode=ModelMode.NONE, scrubber=Scrubber({}))
    with pytest.raises(ModelEndpointError, match="needs a recording"):
        ModelEndpointConfig(mode=ModelMode.REPLAY, scrubber=Scrubber({}))
    with pytest.raises(ModelEndpointError, match=r"model\.live"):
        ModelEndpointConfig(mode=ModelMode.LIVE, scrubber=Scrubber({}))
    live = ModelEndpointConfig(mode=ModelMode.LIVE, live=LIVE, scrubber=Scrubber({}), environ={"RUNNER_A_KEY": "a"},
                               dialect="openai-chat")
    assert live.mode is ModelMode.LIVE


def test_from_profile() -> None:
    endpoint = ModelEndpoint(dialect="gemini", scripted_model="m1", placeholder_key="pk", live=LIVE)
    config = ModelEndpointConfig.from_profile(endpoint, mode=ModelMode.SCRIPTED, scrubber=Scrubber({}))
    assert (config.model, config.placeholder_key, config.live) == ("m1", "pk", LIVE)
