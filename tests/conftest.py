"""Shared fixtures for the integration layer: the real Docker Engine and the real images.

These tests never skip for want of an engine: ``make test`` provisions one, and an integration
layer that silently skipped would prove nothing.
"""

from __future__ import annotations

import os

import docker
import pytest

from runner.engine import EngineClient, EngineUnavailable, connect
from runner.images import ImageRecord, ImageSettings, ensure_image
from runner.sandbox.docker_backend import DockerBackend
from tests.hosted_runner import hosted_runner  # noqa: F401 (GitHub's hosted runner's user, for the workflow's jobs)


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    """runner runs on asyncio. anyio's plugin would otherwise run every async test once per event loop installed, and
    trio is installed too (selenium's dependency, for the HTML report's browser test)."""
    return "asyncio"


@pytest.fixture(scope="session")
def engine() -> docker.DockerClient:
    try:
        return connect(os.environ)
    except EngineUnavailable as exc:
        pytest.fail(f"integration tests need a Docker Engine (make test starts one): {exc}")


@pytest.fixture(scope="session")
def backend(engine: docker.DockerClient) -> DockerBackend:
    """The sandbox backend a command would connect, on the same engine: what the turn and the cell are handed."""
    assert isinstance(engine, EngineClient)
    return DockerBackend(engine)


@pytest.fixture(scope="session")
def image_settings() -> ImageSettings:
    """What the command line's edge would read from this process's environment (RUNNER_CACHE_DIR and the rest),
    handed to the image functions a test calls in-process."""
    return ImageSettings.from_environ(os.environ)


@pytest.fixture(scope="session")
def reference_image(engine: docker.DockerClient, image_settings: ImageSettings) -> ImageRecord:
    return ensure_image(engine, "reference", image_settings)


@pytest.fixture(scope="session")
def codex_image(engine: docker.DockerClient, image_settings: ImageSettings) -> ImageRecord:
    """The Codex image on the host's engine, built (node base, npm stage and all) on a fresh machine."""
    return ensure_image(engine, "codex", image_settings)
