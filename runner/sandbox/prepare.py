"""Preparing a turn's image: :func:`runner.images.ensure_image`, and for an image recorded anew, its wiring learnt on
the engine that built it while building costs seconds anyway (the verdict is remembered by
:mod:`runner.sandbox.probe`), so the image's first turn here starts one container, its own, not a probe before it."""

from __future__ import annotations

import tempfile
from contextlib import suppress
from pathlib import Path

import docker

from runner.engine import EngineClient, EngineError
from runner.images import ImageRecord, ImageSettings, Progress, ensure_image
from runner.sandbox.container import CELL_LABEL
from runner.sandbox.interface import ContainerSpec
from runner.sandbox.probe import WIRING


def prepare_image(
    client: docker.DockerClient, image: str, settings: ImageSettings, progress: Progress | None = None
) -> ImageRecord:
    """The pinned image ``image`` (built offline when its build key is new), its wiring probed if it was recorded
    anew."""
    return ensure_image(client, image, settings, progress,
                        recorded=lambda record: learn_wiring(client, record, settings))


def learn_wiring(client: docker.DockerClient, record: ImageRecord, settings: ImageSettings) -> None:
    """Probe a newly recorded image's wiring now. A failure (or an engine that fails the probe's calls) is not the
    build's: the turn that needs the image probes again and names it."""
    if not isinstance(client, EngineClient):  # an engine runner did not connect to itself: its address is unknown,
        return  # so a verdict could not be keyed by it; the image's first turn probes
    labels = {CELL_LABEL: f"image.{record.harness}"}
    with suppress(EngineError):
        spec = ContainerSpec(record.image_id, ["true"], Path(tempfile.gettempdir()), labels)
        WIRING.check(client, spec, cache=settings.cache_dir)
