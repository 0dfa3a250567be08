"""Saved images for CI caches: a harness image and every base it stands on, in one ``docker save`` archive.

* :func:`cache_key`: a key for ``actions/cache`` computed from the declared inputs only (no engine, no staging):
  the harness's and its bases' image folders, the package files their recipes list, the mmdebstrap recipes (or
  the pinned registry references), the host's extra CA certificates, the npm staging format and the source of the
  image-building code. The same checkout on another machine with the same extra certificates gives the same key.
  The certificates are in it because the archive holds them (base-cli copies them in) and the build key refuses
  an image built with others: a key without them would restore, on a runner with other extra certificates, an
  archive that is never used and, the key being a hit, never replaced. The distribution's own CA bundle
  (``/etc/ssl/certs``, updated with the runner's OS) is in neither the image nor the key.
* :func:`save_images`: ``ensure_image`` (a warm lookup when built), then one ``docker save`` of the harness image
  and its bases with their tags, streamed to ``$RUNNER_CACHE_DIR/saved/<harness>.tar`` (plain tar: the
  actions/cache store compresses with zstd itself) through a temporary file and ``os.replace``; beside it
  ``<harness>.json`` records the recipe hash, image id, tags and size it holds.
* :func:`load_images`: ``docker load`` of that archive if present. Absent is not an error, and neither is a
  corrupt archive: it is reported and the next ``ensure_image`` builds as usual. Image ids survive save and load,
  and so do the labels the recipe-hash lookup reads, so after a load ``ensure_image`` finds the image warm as long
  as the staged npm packages (``$RUNNER_CACHE_DIR/npm``) are there to compute the same hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests

from runner.engine import EngineError
from runner.images.bootstrap import base_recipe_hash, pinned_ref
from runner.images.build import ensure_from, ensure_image
from runner.images.context import entry_digest, host_certs, recipe_dir_files
from runner.images.errors import ImageBuildError
from runner.images.lock import ImageRecord
from runner.images.recipes import has_dockerfile, load_harness_recipe
from runner.images.shared import ImageSettings, Progress, hash_json, sha256_file, to_stderr
from runner.images.staging import NPM_STAGE_FORMAT
from runner.images.tree import RECIPE, shown, source_root

ARCHIVE_FORMAT = 1  # bump when what an archive holds, or how the key is made, changes
# The modules whose code decides what an image holds; their source is part of the cache key.
_BUILD_MODULES = ("bootstrap.py", "build.py", "context.py", "lock.py", "recipes.py", "shared.py", "staging.py",
                  "tree.py")
_CHUNK = 1 << 20


class ArchiveError(EngineError):
    """An archive could not be written (the engine refused, or the disk did)."""


@dataclass(frozen=True)
class SavedArchive:
    harness: str
    path: str
    recipe_hash: str
    image_id: str
    refs: list[str]  # the harness image's tag first, then its bases' from the nearest down
    bytes: int
    cache_key: str
    seconds: float


@dataclass(frozen=True)
class LoadResult:
    harness: str
    status: str  # "loaded", "absent" or "corrupt"
    path: str
    message: str
    seconds: float
    recipe_hash: str | None = None


# ----------------------------------------------------------------------------------------------- key


def _code_digest() -> str:
    here = Path(__file__).resolve().parent
    return hash_json({name: hashlib.sha256((here / name).read_bytes()).hexdigest() for name in _BUILD_MODULES})


def cache_key_inputs(harness: str, settings: ImageSettings) -> dict[str, object]:
    """What :func:`cache_key` hashes: digests only, by path relative to the image folder or the source root (never
    absolute paths, times or anything read from an engine)."""
    root = source_root(settings)
    chain: list[dict[str, object]] = []
    name, seen = harness, list[str]()
    while name not in seen:
        seen.append(name)
        if not has_dockerfile(name, root):  # an mmdebstrap base, or a registry image pinned by digest
            ref = pinned_ref(name, settings)
            chain.append(
                {"name": name, "pinned": ref} if ref else {"name": name, "recipe": base_recipe_hash(root, name)}
            )
            break
        recipe = load_harness_recipe(name, root)
        missing = [rel for rel in recipe.files if not (root / rel).is_file()]
        if missing:
            raise ImageBuildError(f"{name}: build input {missing[0]} is missing (listed in "
                                  f"{shown(recipe.directory / RECIPE, root)})")
        chain.append(
            {
                "name": name,
                "directory": {rel: sha256_file(p) for rel, p in recipe_dir_files(recipe.directory).items()},
                "files": {rel: sha256_file(root / rel) for rel in recipe.files},
            }
        )
        name = recipe.base
    else:
        raise ImageBuildError(f"{harness}: its bases name each other in a loop ({' -> '.join(seen)})")
    certs = {rel: entry_digest(src) for rel, src in host_certs(settings.ca_certs_dir).items()}
    return {
        "format": ARCHIVE_FORMAT,
        "chain": chain,
        "certs": certs,
        "npm_stage_format": NPM_STAGE_FORMAT,
        "code": _code_digest(),
    }


def cache_key(harness: str, settings: ImageSettings) -> str:
    """``runner-image-<harness>-<24 hex>``: stable for unchanged declared inputs, for an ``actions/cache`` key."""
    return f"runner-image-{harness}-{hash_json(cache_key_inputs(harness, settings))[:24]}"


# ------------------------------------------------------------------------------------------ save/load


def archive_path(harness: str, settings: ImageSettings) -> Path:
    return settings.cache_dir / "saved" / f"{harness}.tar"


def _meta_path(archive: Path) -> Path:
    return archive.with_suffix(".json")


def _write_atomically(path: Path, write: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with tmp.open("wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


def _base_refs(client: docker.DockerClient, harness: str, say: Progress, settings: ImageSettings) -> list[str]:
    """The tags of every base ``harness`` stands on, nearest first (all found warm after ``ensure_image``)."""
    root = source_root(settings)
    refs: list[str] = []
    name = load_harness_recipe(harness, root).base
    while True:
        base = ensure_from(client, say, root, name, settings)
        refs.append(base.ref or base.image_id)
        if not has_dockerfile(name, root):
            return refs
        name = load_harness_recipe(name, root).base


def save_images(
    client: docker.DockerClient, harness: str, settings: ImageSettings, to: Path | None = None,
    progress: Progress | None = None,
) -> SavedArchive:
    """Write one archive of ``harness``'s image and its bases (building them first if they are not built)."""
    say = progress or to_stderr
    record: ImageRecord = ensure_image(client, harness, settings, progress=say)
    refs = [record.tag, *_base_refs(client, harness, say, settings)]
    path = to or archive_path(harness, settings)
    started = time.monotonic()

    def stream(f: Any) -> None:
        # docker-py's get_image saves one name; the endpoint takes several, so the shared layers are stored once.
        api = client.api  # a requests.Session: stream the answer to disk, never whole in memory
        url = f"{api.base_url}/v{api.api_version}/images/get"
        try:
            with api.get(url, params={"names": refs}, stream=True, timeout=(api.timeout, 600)) as res:
                res.raise_for_status()
                for chunk in res.iter_content(chunk_size=_CHUNK):
                    f.write(chunk)
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            raise ArchiveError(f"docker save of {', '.join(refs)} failed: {exc}") from exc

    try:
        _write_atomically(path, stream)
    except OSError as exc:
        raise ArchiveError(f"cannot write {path}: {exc}") from exc
    saved = SavedArchive(
        harness=harness,
        path=str(path),
        recipe_hash=record.recipe_hash,
        image_id=record.image_id,
        refs=refs,
        bytes=path.stat().st_size,
        cache_key=cache_key(harness, settings),
        seconds=round(time.monotonic() - started, 2),
    )
    meta = json.dumps({"format": ARCHIVE_FORMAT, **asdict(saved)}, indent=1, sort_keys=True) + "\n"
    _write_atomically(_meta_path(path), lambda f: f.write(meta.encode()))
    return saved


def _read_meta(archive: Path) -> dict[str, Any]:
    try:
        data = json.loads(_meta_path(archive).read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def load_images(
    client: docker.DockerClient, harness: str, settings: ImageSettings, src: Path | None = None
) -> LoadResult:
    """``docker load`` the saved archive of ``harness`` if there is one; never raises for a bad archive."""
    path = src or archive_path(harness, settings)
    started = time.monotonic()

    def result(status: str, message: str, recipe_hash: str | None = None) -> LoadResult:
        return LoadResult(harness, status, str(path), message, round(time.monotonic() - started, 2), recipe_hash)

    if not path.is_file():
        return result("absent", f"no saved image at {path}")
    meta = _read_meta(path)
    size = path.stat().st_size
    if meta.get("bytes") not in (None, size):
        return result("corrupt", f"{path} holds {size} bytes, {_meta_path(path).name} says {meta['bytes']}")
    loaded: list[str] = []
    try:
        with path.open("rb") as f:
            # the decoded JSON objects `docker load` streams (types-docker leaves APIClient.load_image unannotated)
            chunks: Iterator[dict[str, object]] = client.api.load_image(f, quiet=True)  # type: ignore[no-untyped-call]
            for chunk in chunks:
                if "error" in chunk:
                    return result("corrupt", f"docker load {path}: {chunk['error']}")
                loaded += [line for line in str(chunk.get("stream", "")).splitlines() if line.strip()]
    except (docker.errors.APIError, requests.exceptions.RequestException, OSError) as exc:
        return result("corrupt", f"docker load {path}: {exc}")
    expected = meta.get("image_id")
    if expected:
        try:
            image_id = client.images.get(meta["refs"][0]).id
        except (docker.errors.APIError, KeyError, IndexError, TypeError) as exc:
            return result("corrupt", f"loaded {path}, but its image {meta.get('refs')} is not in the engine: {exc}")
        if image_id != expected:
            return result("corrupt", f"loaded {path}: {meta['refs'][0]} is {image_id}, the archive says {expected}")
    what = "; ".join(loaded) or "loaded"
    return result("loaded", f"{what} ({size / 1e6:.0f} MB)", meta.get("recipe_hash"))
