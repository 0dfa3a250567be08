"""What every part of the image code shares: the cross-process lock of a cold step, and small hashing and JSON
helpers (the recipe hashes are ``sha256`` of canonical JSON)."""

from __future__ import annotations

import fcntl
import hashlib
import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from docker.models.images import Image

from runner.images.errors import ImageBuildError, ImageMissing
from runner.images.settings import CERTS_DIR, CERTS_ENV, ImageSettings

Progress = Callable[[str], None]

DEFAULT_BASE = "base"
__all__ = ["CERTS_DIR", "CERTS_ENV", "DEFAULT_BASE", "ImageSettings", "Progress"]


# ------------------------------------------------------------------------------------------- helpers


@contextmanager
def exclusive(cache: Path, name: str) -> Iterator[None]:
    """Serialise a cold step (bootstrap, download, build, lock update) across processes; warm paths skip it."""
    path = cache / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def hash_json(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def load_json(path: Path) -> dict[str, object]:
    """A recipe's JSON object (:class:`ImageBuildError` naming the file when it is not one)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ImageBuildError(f"cannot read recipe {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ImageBuildError(f"recipe {path} is not a JSON object")
    return data


def image_id_of(image: Image) -> str:
    if not image.id:
        raise ImageMissing(f"the engine returned an image without an id: {image!r}")
    return image.id
