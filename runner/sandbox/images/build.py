"""Building a harness image: :func:`ensure_image` stages the recipe's inputs, plans the context, and builds it
offline (classic builder, network ``none``) only when no image carries its recipe hash and tag; then it runs the
recipe's version command in a hardened container and records the image in ``images/lock.json``.
:class:`ImageUnavailable` (with the recipe's reason) is raised for a recipe marked ``unavailable``."""

from __future__ import annotations

import re
import tempfile
import time
from collections.abc import Iterable
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import docker
import docker.errors
import requests
from docker.models.images import Image

from runner.sandbox import timings
from runner.sandbox.engine import ImageBuildError, ImageMissing, ImageUnavailable, call_with_retry
from runner.sandbox.images.bases import _Base, _ensure_base
from runner.sandbox.images.common import Progress, _exclusive, _id, _stderr, cache_dir, repo_root
from runner.sandbox.images.context import PlanEntry, _context_plan, _layer_identity, _materialise, _recipe_hash
from runner.sandbox.images.lock import ImageRecord, read_lock, write_lock
from runner.sandbox.images.recipes import HarnessRecipe, is_layer_dir, load_harness_recipe
from runner.sandbox.images.staging import _stage_npm, _stage_wheels

# the first version-looking token; a full stop ending the sentence is not part of it ("GitHub Copilot CLI 1.0.102.")
_VERSION = re.compile(r"\d+(?:\.\d+)+(?:[\w.+-]*[\w+-])?")


def _find_built(client: docker.DockerClient, harness: str, recipe_hash: str, tag: str) -> Image | None:
    """The image built for this recipe. It must carry its tag too: labels are inherited, so a failed build's
    leftover layer (or an image built FROM this one) can carry the same labels."""
    labels = [f"runner.image={harness}", f"runner.recipe={recipe_hash}"]
    found = [i for i in call_with_retry(client.images.list, filters={"label": labels}) if tag in i.tags]
    return max(found, key=lambda i: str(i.attrs.get("Created", "")), default=None)


@dataclass(frozen=True)
class _Found:
    image: Image
    base: _Base
    rhash: str
    tag: str
    built: bool


def _ensure_from(client: docker.DockerClient, say: Progress, root: Path, name: str) -> _Base:
    """The base ``name`` stands for: an mmdebstrap base (or its pinned registry image), or a layer built from a
    Dockerfile (``"kind": "base"``, like ``images/base-cli``) on its own base, whose identity is its recipe hash."""
    if not is_layer_dir(root / "images" / name):
        return _ensure_base(client, say, root, name)
    found = _ensure_built(client, load_harness_recipe(name, root), root, say)
    return _Base(_id(found.image), _layer_identity(name, found.rhash), found.tag)


def _ensure_built(client: docker.DockerClient, recipe: HarnessRecipe, root: Path, say: Progress) -> _Found:
    """Stage, plan and hash ``recipe`` on its (ensured) base; build it offline unless an image already carries
    that recipe hash and tag."""
    name = recipe.harness
    base = _ensure_from(client, say, root, recipe.base)
    started = time.monotonic()  # staging is part of a cold build; a warm one finds it cached
    wheels = _stage_wheels(recipe, say) if recipe.wheels else None
    npm = _stage_npm(recipe, say) if recipe.npm else None
    plan = _context_plan(recipe, root, wheels, npm)
    rhash = _recipe_hash(plan, base.identity, recipe.build_args)
    tag = f"runner/{name}:{rhash[:12]}"
    image = _find_built(client, name, rhash, tag)
    if image is not None:
        return _Found(image, base, rhash, tag, built=False)
    with _exclusive(f"image-{name}"):
        image = _find_built(client, name, rhash, tag)  # another process may have built it meanwhile
        if image is not None:
            return _Found(image, base, rhash, tag, built=False)
        image = call_with_retry(client.images.get, _build(client, recipe, plan, base, rhash, tag, say))
    timings.record(cache_dir(), f"image.{name}", time.monotonic() - started, recipe=rhash)
    return _Found(image, base, rhash, tag, built=True)


def ensure_image(client: docker.DockerClient, harness: str, progress: Progress | None = None) -> ImageRecord:
    """Return the pinned image for ``harness``, building it (and any layer it stands on) offline only when its
    recipe hash is new.

    Raises :class:`ImageUnavailable` (with the recipe's reason) for an image that cannot be built here.
    """
    say = progress or _stderr
    root = repo_root()
    recipe = load_harness_recipe(harness, root)
    if recipe.unavailable:
        raise ImageUnavailable(harness, recipe.unavailable)
    if recipe.kind != "harness":
        raise ImageMissing(f'images/{harness} is a base layer ("kind": "base"), not a harness image')
    found = _ensure_built(client, recipe, root, say)
    image, rhash = found.image, found.rhash
    if not found.built:
        locked = read_lock(root).get(harness)
        if locked and locked.image_id == image.id and locked.recipe_hash == rhash:
            return locked
    image_id = _id(image)
    output = _version_output(client, image_id, recipe.version_command) if recipe.version_command else None
    version = _VERSION.search(output or "")
    record = ImageRecord(
        harness=harness,
        image_id=image_id,
        tag=found.tag,
        recipe_hash=rhash,
        base=found.base.identity,
        cli_package=recipe.cli_package,
        cli_version=version.group(0) if version else None,
        version_output=output,
        built_at=str(image.attrs.get("Created", datetime.now(UTC).isoformat())),
    )
    with _exclusive("lockfile"):
        write_lock({**read_lock(root), harness: record}, root)
    return record


def _build(
    client: docker.DockerClient,
    recipe: HarnessRecipe,
    plan: dict[str, PlanEntry],
    base: _Base,
    rhash: str,
    tag: str,
    say: Progress,
) -> str:
    labels = {"runner.image": recipe.harness, "runner.recipe": rhash, "runner.base": base.identity}
    with tempfile.TemporaryDirectory(prefix=f"runner-ctx-{recipe.harness}-") as ctx:
        _materialise(plan, Path(ctx))
        say(f"[{recipe.harness}] building {tag} offline from {len(plan)} context entries")
        image_id: str | None = None
        tail: list[str] = []
        try:
            for chunk in client.api.build(
                path=ctx,
                dockerfile="Dockerfile",
                tag=tag,
                buildargs={"BASE": base.image_id, **recipe.build_args},
                labels=labels,
                network_mode="none",
                pull=False,
                rm=True,
                forcerm=True,
                decode=True,
            ):
                if "stream" in chunk:
                    for line in str(chunk["stream"]).splitlines():
                        if line.strip():
                            tail = [*tail[-19:], line]
                            say(f"[{recipe.harness}] {line}")
                if "aux" in chunk and "ID" in chunk["aux"]:
                    image_id = str(chunk["aux"]["ID"])
                if "error" in chunk:
                    raise ImageBuildError(f"building {tag} failed: {chunk['error']}\n" + "\n".join(tail))
        except (docker.errors.APIError, requests.exceptions.RequestException) as exc:
            raise ImageBuildError(f"building {tag} failed: {exc}") from exc
    if image_id is None:
        image_id = _id(call_with_retry(client.images.get, tag))
    return image_id


def _version_output(client: docker.DockerClient, image_id: str, command: Iterable[str], timeout: int = 60) -> str:
    """Run the recipe's version command in a short-lived hardened container (no network), removed afterwards.

    It runs as the image's user with a read-only root, and a tmpfs on /tmp and on the home directory (the way turns
    run), so a CLI that writes state on start still answers. The limits are loose enough for node and the
    native CLIs (several hundred MB binaries, a dozen threads each).
    """
    container = None
    try:
        container = client.containers.run(
            image_id,
            list(command),
            detach=True,
            network_mode="none",
            cap_drop=["ALL"],
            security_opt=["no-new-privileges"],
            read_only=True,
            tmpfs={
                "/tmp": "rw,size=64m,mode=1777",
                "/home/runner": "rw,size=64m,mode=0700,uid=1000,gid=1000",
            },
            pids_limit=256,
            mem_limit="1g",
            labels={"runner.owner": "images"},
        )
        status = container.wait(timeout=timeout)
        out = container.logs(stdout=True, stderr=True).decode(errors="replace").strip()
    except requests.exceptions.RequestException as exc:  # wait(timeout=) surfaces as a ConnectionError
        raise ImageBuildError(f"version command did not finish within {timeout} s in {image_id[:19]}") from exc
    except docker.errors.APIError as exc:
        raise ImageBuildError(f"version command could not run in {image_id[:19]}: {exc}") from exc
    finally:
        if container is not None:
            with suppress(docker.errors.APIError):
                container.remove(force=True)
    if status.get("StatusCode") != 0:
        raise ImageBuildError(f"version command exited {status.get('StatusCode')} in {image_id[:19]}:\n{out[-2000:]}")
    return out
