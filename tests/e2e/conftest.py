"""What several end-to-end modules share: one runnable column at a time, with its pinned image built."""

from __future__ import annotations

import docker
import pytest

from runner.harnesses.interpreters import PACKAGES
from runner.harnesses.profile import find_profile, known_harnesses
from runner.images import ImageRecord, ImageSettings, ensure_image

# every shipped profile that is not declared unavailable here
RUNNABLE_COLUMNS = [h for h in known_harnesses() if not find_profile(h).unavailable]
# of those, the ones that run a CLI of its vendor: read by an interpreter a harness package provides (not runner's
# own jsonl frames, which the reference client and the model loop print)
CLI_HARNESSES = [h for h in RUNNABLE_COLUMNS
                 if find_profile(h).interpreter in {name for p in PACKAGES.values() for name in p.interpreters}]


@pytest.fixture(scope="module", params=RUNNABLE_COLUMNS)
def harness(
    request: pytest.FixtureRequest, engine: docker.DockerClient, image_settings: ImageSettings
) -> tuple[str, ImageRecord]:
    """A runnable column and its image, one module-scoped instance per column (each image is ensured once)."""
    harness = request.param
    return harness, ensure_image(engine, find_profile(harness).image, image_settings)
