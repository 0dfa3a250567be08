"""Connecting to the Docker Engine, its typed errors, and a bounded retry for engine calls: the floor both the image
builder (:mod:`runner.images`) and the sandbox stand on."""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Mapping
from typing import ParamSpec, TypeVar

import docker
import docker.errors
import requests
from tenacity import (
    RetryError,
    Retrying,
    before_sleep_log,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from runner.engine.host import setup_hint
from runner.errors import InfrastructureError

DEFAULT_SOCKET = "unix:///var/run/docker.sock"
ATTEMPTS = 4  # one call and three retries, 0.5 s, 1 s and 2 s apart: a hiccup costs seconds, never a hang
logger = logging.getLogger("runner.engine")

P = ParamSpec("P")
T = TypeVar("T")


class EngineError(InfrastructureError):
    """Base class for everything the engine, the image builder and the sandbox raise about the engine or its images."""


class EngineUnavailable(EngineError):
    """No Docker Engine answers at the configured address."""


class EngineCallFailed(EngineError):
    """An engine call kept failing (5xx answers, dropped connections, a timeout) after bounded retries."""

    def __init__(self, call: str, attempts: int, cause: BaseException) -> None:
        tries = f"after {attempts} attempts" if attempts > 1 else "(not retried)"
        super().__init__(f"the Docker Engine failed {call} {tries}: {cause}")
        self.call = call
        self.attempts = attempts


def engine_address(environ: Mapping[str, str]) -> str:
    """Where the engine answers: ``DOCKER_HOST`` among the host's variables ``environ``, or the default socket."""
    return environ.get("DOCKER_HOST") or DEFAULT_SOCKET


class EngineClient(docker.DockerClient):
    """A client of the engine at :attr:`address`, which the wiring probe keys its verdicts by and messages name."""

    address: str = DEFAULT_SOCKET


def connect(environ: Mapping[str, str], timeout: int = 120) -> EngineClient:
    """Return a client for the engine ``environ`` names (the host's variables, read at the edge: ``DOCKER_HOST``
    and docker-py's TLS ones; without ``DOCKER_HOST``, the default socket), API version negotiated.

    A daemon that hiccups at the first requests is retried like any engine call; one that never
    answers raises EngineUnavailable with a hint.
    """
    where = engine_address(environ)
    hint = (f"no Docker Engine answers at {where}; run `{setup_hint()}` (as root on Debian it installs and starts "
            "one) or set DOCKER_HOST")

    def ping() -> EngineClient:
        # version="auto" asks the engine for its API version (1.41 on dockerd 20.10);
        # docker-py's fixed default (1.45) would be rejected by that engine.
        client = EngineClient.from_env(version="auto", timeout=timeout, environment=dict(environ))
        assert isinstance(client, EngineClient)  # from_env makes its class's instance (typed as DockerClient)
        client.address = where
        client.ping()
        return client

    try:
        return call_with_retry(ping)
    except (EngineCallFailed, docker.errors.DockerException, requests.exceptions.RequestException, OSError) as exc:
        raise EngineUnavailable(f"{hint} ({exc})") from exc


def is_transient(exc: BaseException) -> bool:
    """True for failures worth retrying: engine 5xx answers and dropped connections, never 4xx.

    docker-py reports a failed version negotiation as a bare DockerException around the cause.
    """
    if isinstance(exc, docker.errors.APIError):
        return bool(exc.is_server_error())
    if isinstance(exc, requests.exceptions.ConnectionError):
        return True
    return type(exc) is docker.errors.DockerException and "server API version" in str(exc)


def _gives_up(exc: BaseException) -> bool:
    """Failures that end in EngineCallFailed: the transient ones once retries run out, and timeouts."""
    return is_transient(exc) or isinstance(exc, requests.exceptions.Timeout)


def call_with_retry(fn: Callable[P, T], *args: P.args, **kwargs: P.kwargs) -> T:
    """Call an idempotent engine method, retrying transient failures with exponential backoff.

    At most ATTEMPTS calls; then EngineCallFailed naming the call and the last failure. A 4xx answer
    (NotFound, Conflict, ...) is the caller's business and comes back as docker-py raised it.
    """
    retrying = Retrying(
        retry=retry_if_exception(is_transient),
        stop=stop_after_attempt(ATTEMPTS),
        wait=wait_exponential(multiplier=0.5, max=4),
        before_sleep=before_sleep_log(logger, logging.WARNING),
    )
    try:
        return retrying(fn, *args, **kwargs)
    except RetryError as exc:
        cause = exc.last_attempt.exception()
        raise EngineCallFailed(_call_name(fn), exc.last_attempt.attempt_number, cause or exc) from cause
    except Exception as exc:
        if _gives_up(exc):
            raise EngineCallFailed(_call_name(fn), 1, exc) from exc
        raise


def _call_name(fn: Callable[..., object]) -> str:
    """``containers.create``, ``Container.wait``, ... for the error message."""
    if isinstance(fn, functools.partial):
        fn = fn.func
    owner = getattr(fn, "__self__", None)
    name = getattr(fn, "__name__", repr(fn))
    if owner is None:
        return name
    kind = type(owner).__name__.removesuffix("Collection").lower()
    return f"{kind}s.{name}" if type(owner).__name__.endswith("Collection") else f"{kind}.{name}"
