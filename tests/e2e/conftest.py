"""What several end-to-end modules share: one runnable column at a time, with its pinned image built."""

from __future__ import annotations

import docker
import pytest

from runner.harnesses.profile import find_profile, known_harnesses
from runner.images import ImageRecord, ImageSettings, ensure_image

# every profile in harness_profiles/ that is not declared unavailable here
RUNNABLE_COLUMNS = [h for h in known_harnesses() if not find_profile(h).unavailable]


@pytest.fixture(scope="module", params=RUNNABLE_COLUMNS)
def column(
    request: pytest.FixtureRequest, engine: docker.DockerClient, image_settings: ImageSettings
) -> tuple[str, ImageRecord]:
    """A runnable column and its image, one module-scoped instance per column (each image is ensured once)."""
    harness = request.param
    return harness, ensure_image(engine, find_profile(harness).image, image_settings)
