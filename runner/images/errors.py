"""What the image builder raises: each an :class:`~runner.engine.EngineError` (an infrastructure failure, exit code
4), named for what went wrong with an image."""

from __future__ import annotations

from runner.engine import EngineError


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
