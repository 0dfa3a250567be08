"""Building a harness image: :func:`ensure_image` stages the recipe's inputs, plans the context, and builds it
offline (classic builder, network ``none``) only when no image carries its build key (label and tag); then it runs
the recipe's version command in a hardened container and records the image built here under
``$RUNNER_CACHE_DIR/builds``. It never writes an image's ``lock.json``: the committed recipe hash is computed from the
tree and the lock's integrity hashes, and the build key adds this machine's inputs (CA certificates and all).
:class:`ImageUnavailable` (with the recipe's reason) is raised for a recipe marked ``unavailable``."""

from __future__ import annotations

import io
import re
import tarfile
import tempfile
import time
from collections.abc import Callable, Iterable
from contextlib import suppress
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import docker
import docker.errors
import requests
from docker.models.images import Image

from runner.engine import call_with_retry
from runner.images.bootstrap import BaseImage, debian_root, ensure_base_image
from runner.images.context import (
    PlanEntry,
    compute_build_key,
    context_plan,
    layer_identity,
    local_inputs_of,
    materialise,
)
from runner.images.errors import ImageBuildError, ImageMissing, ImageUnavailable
from runner.images.lock import ImageRecord, lock_integrity_or_none, read_build, recipe_hash, write_build
from runner.images.recipes import HarnessRecipe, is_layer, load_harness_recipe
from runner.images.shared import ImageSettings, Progress, exclusive, image_id_of, to_stderr
from runner.images.staging import StagedTree, empty_npm, stage_debs, stage_npm, stage_wheels
from runner.images.timings import record as record_timing
from runner.images.tree import source_root

# the first version-looking token; a full stop ending the sentence is not part of it ("GitHub Copilot CLI 1.0.102.")
_VERSION = re.compile(r"\d+(?:\.\d+)+(?:[\w.+-]*[\w+-])?")


def _find_built(client: docker.DockerClient, harness: str, build_key: str, tag: str) -> Image | None:
    """The image built here for this build key. It must carry its tag too: labels are inherited, so a failed
    build's leftover layer (or an image built FROM this one) can carry the same labels."""
    labels = [f"runner.image={harness}", f"runner.build={build_key}"]
    # the engine's summaries, and one inspect of the image chosen: images.list would inspect every match
    summaries = call_with_retry(client.api.images, filters={"label": labels})
    found = [i for i in summaries if tag in (i.get("RepoTags") or [])]
    newest = max(found, key=lambda i: int(i.get("Created") or 0), default=None)
    return None if newest is None else call_with_retry(client.images.get, newest["Id"])


@dataclass(frozen=True)
class _Found:
    image: Image
    base: BaseImage
    rhash: str  # the committed recipe hash
    key: str  # the local build key
    local: dict[str, str]
    tag: str
    built: bool


def ensure_from(
    client: docker.DockerClient, say: Progress, root: Path, name: str, settings: ImageSettings
) -> BaseImage:
    """The base ``name`` stands for: an mmdebstrap base (or its pinned registry image), or a layer built from a
    Dockerfile (``"kind": "base"``, like ``base-cli``) on its own base, whose identity is its recipe hash."""
    if not is_layer(name, root):
        return ensure_base_image(client, say, root, settings, name)
    found = _ensure_built(client, load_harness_recipe(name, root), root, say, settings)
    return BaseImage(image_id_of(found.image), layer_identity(name, found.key), found.tag)


def _ensure_built(
    client: docker.DockerClient, recipe: HarnessRecipe, root: Path, say: Progress, settings: ImageSettings
) -> _Found:
    """Stage, plan and key ``recipe`` on its (ensured) base; build it offline unless an image already carries that
    build key and tag."""
    name = recipe.harness
    base = ensure_from(client, say, root, recipe.base, settings)
    started = time.monotonic()  # staging is part of a cold build; a warm one finds it cached
    wheels = stage_wheels(recipe, say, settings) if recipe.wheels else None
    npm = stage_npm(recipe, say, settings) if recipe.npm else None
    if npm is None and is_layer(recipe.base, root):
        npm = empty_npm(settings)  # the layer's ONBUILD copies a prefix (vibe installs nothing from npm)
    debs = _ensure_debs(client, recipe, root, base, say, settings) if recipe.debian else None
    plan = context_plan(recipe, root, wheels, npm, debs, certs=settings.ca_certs_dir)
    rhash = recipe_hash(name, root, lock_integrity_or_none(root))
    key = compute_build_key(plan, base.identity, recipe.build_args, rhash)
    local = local_inputs_of(plan, base.identity)
    tag = f"runner/{name}:{key[:12]}"
    image = _find_built(client, name, key, tag)
    if image is not None:
        return _Found(image, base, rhash, key, local, tag, built=False)
    with exclusive(settings.cache_dir, f"image-{name}"):
        image = _find_built(client, name, key, tag)  # another process may have built it meanwhile
        if image is not None:
            return _Found(image, base, rhash, key, local, tag, built=False)
        labels = {"runner.image": name, "runner.recipe": rhash, "runner.build": key, "runner.base": base.identity}
        image = call_with_retry(client.images.get, _build(client, recipe, plan, base, labels, tag, say))
    record_timing(settings.cache_dir, f"image.{name}", time.monotonic() - started, recipe=rhash)
    return _Found(image, base, rhash, key, local, tag, built=True)


def _ensure_debs(
    client: docker.DockerClient, recipe: HarnessRecipe, root: Path, base: BaseImage, say: Progress,
    settings: ImageSettings,
) -> StagedTree:
    """The recipe's Debian packages staged for ``base``: resolved against what that image has installed, from the
    suite of the mmdebstrap base at the root of its chain."""
    name, debian = debian_root(root, recipe.base)
    identity = ensure_base_image(client, say, root, settings, name).identity  # ensured already, on the way to ``base``
    return stage_debs(recipe, identity, debian, lambda: _dpkg_status(client, base), say, settings)


def _dpkg_status(client: docker.DockerClient, base: BaseImage) -> bytes:
    """``/var/lib/dpkg/status`` of the base image, read from a container created (never started) from it."""
    container = call_with_retry(client.containers.create, base.image_id, ["true"], network_mode="none",
                                labels={"runner.owner": "images"})
    try:
        stream, _ = container.get_archive("/var/lib/dpkg/status")
        with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tar:
            member = tar.extractfile("status")
            if member is None:
                raise ImageBuildError(f"{base.ref or base.image_id}: /var/lib/dpkg/status is not a file")
            return member.read()
    except docker.errors.APIError as exc:
        raise ImageBuildError(f"{base.ref or base.image_id} has no dpkg status to stage Debian packages for: {exc}") \
            from exc
    finally:
        with suppress(docker.errors.APIError):
            container.remove(force=True)


def ensure_image(
    client: docker.DockerClient, harness: str, settings: ImageSettings, progress: Progress | None = None,
    recorded: Callable[[ImageRecord], object] | None = None,
) -> ImageRecord:
    """Return the pinned image for ``harness``, building it (and any layer it stands on) offline only when its
    build key is new. Records it under ``settings.cache_dir / "builds"`` ($RUNNER_CACHE_DIR), never in the tree, and
    hands a new record to ``recorded`` (the sandbox backend learns the image's wiring there:
    :mod:`runner.sandbox.docker_backend`).

    Raises :class:`ImageUnavailable` (with the recipe's reason) for an image that cannot be built here.
    """
    say = progress or to_stderr
    root = source_root(settings)
    recipe = load_harness_recipe(harness, root)
    if recipe.unavailable:
        raise ImageUnavailable(harness, recipe.unavailable)
    if recipe.kind != "harness":
        raise ImageMissing(f'{harness} is a base layer ("kind": "base"), not a harness image')
    found = _ensure_built(client, recipe, root, say, settings)
    image = found.image
    if not found.built:
        known = read_build(harness, settings, found.key)
        if known and known.image_id == image.id and known.recipe_hash == found.rhash:
            return known
    image_id = image_id_of(image)
    output = _version_output(client, image_id, recipe.version_command) if recipe.version_command else None
    version = _VERSION.search(output or "")
    record = ImageRecord(
        harness=harness,
        image_id=image_id,
        tag=found.tag,
        recipe_hash=found.rhash,
        base=found.base.identity,
        cli_package=recipe.cli_package,
        cli_version=version.group(0) if version else None,
        version_output=output,
        built_at=str(image.attrs.get("Created", datetime.now(UTC).isoformat())),
        build_key=found.key,
        local_inputs=found.local,
    )
    write_build(record, settings)
    if recorded is not None:
        recorded(record)
    return record


def _build(
    client: docker.DockerClient,
    recipe: HarnessRecipe,
    plan: dict[str, PlanEntry],
    base: BaseImage,
    labels: dict[str, str],
    tag: str,
    say: Progress,
) -> str:
    with tempfile.TemporaryDirectory(prefix=f"runner-ctx-{recipe.harness}-") as ctx:
        materialise(plan, Path(ctx))
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
        image_id = image_id_of(call_with_retry(client.images.get, tag))
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
