"""The offline bases: ``runner/images/bases/<base>/recipe.json`` (a folder with a recipe that has a ``suite`` and
no Dockerfile: ``base`` is bookworm with python3, ``base-node`` is trixie with nodejs) drives mmdebstrap; the tarball
is cached as ``$RUNNER_CACHE_DIR/base/<recipe-hash>.tar`` and imported with labels ``runner.base.recipe`` and
``runner.base.sha256``. ``RUNNER_BASE_IMAGE=name@sha256:…`` (``RUNNER_BASE_NODE_IMAGE`` for ``base-node``, see
:func:`base_image_env`) replaces one with a registry image pinned by digest."""

from __future__ import annotations

import os
import re
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
from docker.models.images import Image

from runner.engine import call_with_retry
from runner.images.errors import ImageBuildError, ImageMissing, ImageReferenceError
from runner.images.settings import ImageSettings
from runner.images.shared import (
    DEFAULT_BASE,
    Progress,
    exclusive,
    hash_json,
    image_id_of,
    load_json,
    sha256_file,
    to_stderr,
)
from runner.images.timings import record as record_timing
from runner.images.tree import RECIPE, find_image_dir, shown, source_root

BASE_IMAGE_ENV = "RUNNER_BASE_IMAGE"
_DIGEST_REF = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")


@dataclass(frozen=True)
class BaseImage:
    image_id: str
    identity: str  # what the recipe hash of an image built on it covers
    ref: str = ""  # a name that `docker save` keeps with the image (its tag), when it has one


def find_base(client: docker.DockerClient, recipe_hash: str) -> Image | None:
    """The imported base for ``recipe_hash``: one layer, equal to the tarball (derived images inherit the labels)."""
    found = call_with_retry(client.api.images, filters={"label": f"runner.base.recipe={recipe_hash}"})
    # every image built on the base carries its labels too (20 and more here), and each image runner builds has a
    # runner.build label: only the others are inspected, not every image of the engine
    ids = [s["Id"] for s in found if "runner.build" not in (s.get("Labels") or {})]
    candidates = [call_with_retry(client.images.get, image_id) for image_id in ids]
    bases = [
        i
        for i in candidates
        if i.attrs.get("RootFS", {}).get("Layers") == ["sha256:" + i.labels.get("runner.base.sha256", "")]
    ]
    return max(bases, key=lambda i: str(i.attrs.get("Created", "")), default=None)


def base_image_env(name: str = DEFAULT_BASE) -> str:
    """The variable that replaces base ``name`` with a registry image pinned by digest.

    ``base`` -> ``RUNNER_BASE_IMAGE``, ``base-node`` -> ``RUNNER_BASE_NODE_IMAGE``.
    """
    return "RUNNER_" + re.sub(r"[^0-9A-Za-z]+", "_", name).upper() + "_IMAGE"


def _is_base_dir(directory: Path) -> bool:
    return (directory / "recipe.json").is_file() and not (directory / "Dockerfile").exists()


def _base_recipe(root: Path, name: str) -> dict[str, Any]:
    directory = find_image_dir(name, root)
    if directory is None or not _is_base_dir(directory):
        where = f"{shown(directory, root)} holds a Dockerfile" if directory else "there is no image folder of that name"
        raise ImageMissing(f"no base recipe {name!r}: {where} (a base's folder holds a recipe.json and no Dockerfile)")
    recipe = load_json(directory / RECIPE)
    missing = [k for k in ("suite", "variant", "include", "source_date_epoch") if k not in recipe]
    if missing:
        raise ImageBuildError(f"base recipe {shown(directory / RECIPE, root)} lacks {', '.join(missing)}")
    return recipe


def debian_root(root: Path, name: str) -> tuple[str, dict[str, object]]:
    """The mmdebstrap base at the root of base ``name``'s chain (``name`` itself, or the base a layer such as
    base-cli stands on, recursively), and its recipe: the suite, sources and architecture its image's packages
    come from."""
    seen: list[str] = []
    while (directory := find_image_dir(name, root)) is not None and not _is_base_dir(directory):
        recipe = load_json(directory / RECIPE)
        if name in seen or "base" not in recipe:
            raise ImageBuildError(f"{shown(directory, root)}: no Debian base at the root of its chain "
                                  f"({' -> '.join(seen)})")
        seen.append(name)
        name = str(recipe["base"])
    return name, _base_recipe(root, name)


def base_recipe_hash(root: Path, name: str = DEFAULT_BASE) -> str:
    return hash_json(_base_recipe(root, name))


def base_suite(root: Path, name: str) -> str:
    """The Debian suite mmdebstrap base ``name`` is bootstrapped from (what its lock entry records)."""
    return str(_base_recipe(root, name)["suite"])


def ensure_base(
    client: docker.DockerClient, settings: ImageSettings, progress: Progress | None = None, name: str = DEFAULT_BASE
) -> str:
    """Return the id of base ``name``, importing the cached tarball or bootstrapping it first if needed."""
    return ensure_base_image(client, progress or to_stderr, source_root(settings), settings, name).image_id


def pinned_ref(name: str, settings: ImageSettings) -> str | None:
    env = base_image_env(name)
    ref = settings.base_refs.get(env, "").strip()
    if ref and not _DIGEST_REF.match(ref):
        raise ImageReferenceError(
            f"{env}={ref!r} is not pinned by digest; give name@sha256:<64 hex digits> "
            f"or unset it to use the offline base"
        )
    return ref or None


def ensure_base_image(
    client: docker.DockerClient, say: Progress, root: Path, settings: ImageSettings, name: str = DEFAULT_BASE
) -> BaseImage:
    ref = pinned_ref(name, settings)
    if ref:
        try:
            return BaseImage(image_id_of(call_with_retry(client.images.get, ref)), ref, ref)
        except docker.errors.ImageNotFound:
            say(f"[{name}] pulling {ref}")
            try:
                return BaseImage(image_id_of(call_with_retry(client.images.pull, ref)), ref, ref)
            except docker.errors.APIError as exc:
                env = base_image_env(name)
                raise ImageMissing(f"{env}={ref} is not in the engine and cannot be pulled: {exc}") from exc
    recipe = _base_recipe(root, name)
    rhash = hash_json(recipe)
    found = find_base(client, rhash)
    if found is None:
        with exclusive(settings.cache_dir, f"base-{name}"):  # another process may be bootstrapping the same recipe
            found = find_base(client, rhash) or _import_base(client, recipe, rhash, say, settings, name)
    tag = f"{recipe.get('repository', f'runner/{name}')}:{rhash[:12]}"
    ref = tag if tag in found.tags else next(iter(found.tags), image_id_of(found))
    return BaseImage(image_id_of(found), "sha256:" + found.labels.get("runner.base.sha256", ""), ref)


def _import_base(
    client: docker.DockerClient, recipe: dict[str, Any], rhash: str, say: Progress, settings: ImageSettings,
    name: str = DEFAULT_BASE,
) -> Image:
    tar = settings.cache_dir / "base" / f"{rhash}.tar"
    started = time.monotonic()
    bootstrapped = not tar.exists()
    if bootstrapped:
        _bootstrap(recipe, tar, say, settings.environ, name)
    digest = sha256_file(tar)
    say(f"[{name}] importing {tar} ({tar.stat().st_size / 1e6:.0f} MB)")
    changes = [*recipe.get("changes", []), f"LABEL runner.base.recipe={rhash}", f"LABEL runner.base.sha256={digest}"]
    repository = str(recipe.get("repository", f"runner/{name}"))
    call_with_retry(client.api.import_image_from_file, str(tar), repository=repository, tag=rhash[:12], changes=changes)
    found = find_base(client, rhash)
    if found is None:
        raise ImageMissing(f"imported {tar} but no image carries runner.base.recipe={rhash}")
    record_timing(settings.cache_dir, f"base.{name}", time.monotonic() - started, recipe=rhash,
                   bootstrapped=bootstrapped)
    return found


def _mmdebstrap_argv(recipe: dict[str, Any], out: Path) -> list[str]:
    argv = ["mmdebstrap", f"--variant={recipe['variant']}", "--format=tar"]
    if recipe.get("architecture"):
        argv.append(f"--architectures={recipe['architecture']}")
    argv += [f"--hook-dir={d}" for d in recipe.get("hook_dirs", [])]
    argv.append("--include=" + ",".join(recipe["include"]))
    argv += [f"--dpkgopt={o}" for o in recipe.get("dpkgopts", [])]
    return [*argv, recipe["suite"], str(out), *recipe.get("sources", [])]


def _bootstrap(
    recipe: dict[str, Any], tar: Path, say: Progress, environ: Mapping[str, str], name: str = DEFAULT_BASE
) -> None:
    """mmdebstrap runs with ``environ``, the host's environment handed down from the edge, and the recipe's
    ``SOURCE_DATE_EPOCH``."""
    tar.parent.mkdir(parents=True, exist_ok=True)
    tmp = tar.with_name(f".{tar.stem}.{os.getpid()}.tar")  # mmdebstrap picks the format from ".tar"
    log = tar.with_suffix(".log")
    argv = _mmdebstrap_argv(recipe, tmp)
    env = {**environ, "SOURCE_DATE_EPOCH": str(recipe["source_date_epoch"])}
    say(f"[{name}] bootstrapping {recipe['suite']} with mmdebstrap (30-60 s; log {log})")
    tail: list[str] = []
    try:
        with (
            log.open("w") as logf,
            subprocess.Popen(
                argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, text=True, env=env
            ) as proc,
        ):
            assert proc.stdout is not None
            for line in proc.stdout:
                logf.write(line)
                tail = [*tail[-19:], line.rstrip()]
                if line[:2] in ("I:", "W:", "E:"):  # mmdebstrap's own progress; dpkg chatter goes to the log only
                    say(f"[{name}] " + line.rstrip())
    except FileNotFoundError as exc:
        raise ImageBuildError(
            f"mmdebstrap is needed to bootstrap the Debian base {name!r} (no saved base {tar.name} in "
            f"{tar.parent}, none in the engine) and it is not installed. Install it with: "
            "sudo apt-get install -y mmdebstrap debian-archive-keyring uidmap "
            "(as root on Debian: runner setup tools mmdebstrap)"
        ) from exc
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise ImageBuildError(f"mmdebstrap failed (exit {proc.returncode}); log {log}:\n" + "\n".join(tail))
    os.replace(tmp, tar)
