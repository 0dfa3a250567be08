"""Connecting to the Docker Engine, its typed errors, and a bounded retry for engine calls."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import ParamSpec, TypeVar, cast

import docker
import docker.errors
import requests
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

DEFAULT_SOCKET = "unix:///var/run/docker.sock"

P = ParamSpec("P")
T = TypeVar("T")


class EngineError(Exception):
    """Base class for everything the sandbox layer raises about the engine or its images."""


class EngineUnavailable(EngineError):
    """No Docker Engine answers at the configured address."""


class ImageBuildError(EngineError):
    """An image could not be bootstrapped, staged, built or checked."""


class ImageMissing(EngineError):
    """An image that should exist in the engine (or be pullable) does not."""


class ImageReferenceError(EngineError):
    """An image reference given by the user is not acceptable (e.g. a tag without a digest)."""


class ImageUnavailable(EngineError):
    """An image whose recipe says it cannot be built on this machine; ``reason`` says why (from recipe.json)."""

    def __init__(self, harness: str, reason: str) -> None:
        super().__init__(f"the {harness} image cannot be built here: {reason}")
        self.harness = harness
        self.reason = reason


def engine_address() -> str:
    return os.environ.get("DOCKER_HOST") or DEFAULT_SOCKET


def connect(timeout: int = 120) -> docker.DockerClient:
    """Return a client for the engine at DOCKER_HOST (or the default socket), API version negotiated.

    Raises EngineUnavailable with a hint when nothing answers.
    """
    where = engine_address()
    hint = f"no Docker Engine answers at {where}; run scripts/ensure-docker.sh or set DOCKER_HOST"
    try:
        # version="auto" asks the engine for its API version (1.41 on dockerd 20.10);
        # docker-py's fixed default (1.45) would be rejected by that engine.
        client = docker.from_env(version="auto", timeout=timeout)
        client.ping()
    except (docker.errors.DockerException, requests.exceptions.RequestException, OSError) as exc:
        raise EngineUnavailable(f"{hint} ({exc})") from exc
    return client


def is_transient(exc: BaseException) -> bool:
    """True for failures worth retrying: engine 5xx answers and dropped connections, never 4xx."""
    if isinstance(exc, docker.errors.APIError):
        return bool(exc.is_server_error())
    return isinstance(exc, requests.exceptions.ConnectionError)


def engine_retry(fn: Callable[P, T]) -> Callable[P, T]:
    """Decorate an idempotent engine call: 4 attempts, exponential backoff (0.5 s .. 4 s), transient errors only."""
    wrapped = retry(
        retry=retry_if_exception(is_transient),
        stop=stop_after_attempt(4),
        wait=wait_exponential(multiplier=0.5, max=4),
        reraise=True,
    )(fn)
    return cast(Callable[P, T], wrapped)


def call_with_retry(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Call ``fn(*args, **kwargs)`` under :func:`engine_retry`."""
    return engine_retry(fn)(*args, **kwargs)
