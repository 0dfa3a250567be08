"""``images/lock.json``: the image recorded per harness (id, tag, recipe hash, base, CLI version), and its check
against the engine and the recipes on disk (:func:`verify_lock`, which recomputes :func:`current_recipe_hash`
without bootstrapping, downloading or building)."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

import docker
import docker.errors

from runner.sandbox.engine import EngineError, ImageMissing, ImageUnavailable, call_with_retry
from runner.sandbox.images.bases import _find_base, _pinned_ref, base_recipe_hash
from runner.sandbox.images.common import _sha256_file, cache_dir, lock_path, repo_root
from runner.sandbox.images.context import _context_plan, _layer_identity, _recipe_hash
from runner.sandbox.images.recipes import HarnessRecipe, is_layer_dir, load_harness_recipe
from runner.sandbox.images.staging import _npm_digest, _npm_dir, _Tree, _wheel_dir

LOCK_VERSION = 1


@dataclass(frozen=True)
class ImageRecord:
    harness: str
    image_id: str
    tag: str
    recipe_hash: str
    base: str  # "sha256:<tar sha256>" for the offline base, "name@sha256:…" for a registry base
    cli_package: str | None
    cli_version: str | None
    version_output: str | None
    built_at: str


def read_lock(root: Path | None = None) -> dict[str, ImageRecord]:
    path = lock_path(root)
    if not path.exists():
        return {}
    names = {f.name for f in fields(ImageRecord)}
    try:
        data = json.loads(path.read_text())
        return {
            h: ImageRecord(**{k: v for k, v in entry.items() if k in names} | {"harness": h})
            for h, entry in data["images"].items()
        }
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise EngineError(f"{path} is malformed ({exc!r}); delete it and run ensure_image again") from exc


def write_lock(records: dict[str, ImageRecord], root: Path | None = None) -> None:
    path = lock_path(root)
    body = {"version": LOCK_VERSION, "images": {h: asdict(r) for h, r in sorted(records.items())}}
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(body, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def current_recipe_hash(client: docker.DockerClient, harness: str, root: Path | None = None) -> str:
    """The recipe hash ``ensure_image`` would compute now, without bootstrapping, downloading or building."""
    root = root or repo_root()
    recipe = load_harness_recipe(harness, root)
    if recipe.unavailable:
        raise ImageUnavailable(harness, recipe.unavailable)
    return _hash_now(client, recipe, root)


def _hash_now(client: docker.DockerClient, recipe: HarnessRecipe, root: Path) -> str:
    identity = _base_identity_now(client, recipe.base, root)
    wheels = _wheel_dir(recipe)
    stage = _npm_dir(recipe)
    digest = _npm_digest(stage)
    npm = _Tree(stage / "npm-global", digest) if digest else None
    plan = _context_plan(recipe, root, wheels if (wheels / ".complete").exists() else None, npm)
    return _recipe_hash(plan, identity, recipe.build_args)


def _base_identity_now(client: docker.DockerClient, name: str, root: Path) -> str:
    if is_layer_dir(root / "images" / name):  # a layer built from a Dockerfile: its own recipe hash, recursively
        return _layer_identity(name, _hash_now(client, load_harness_recipe(name, root), root))
    ref = _pinned_ref(name)
    if ref:
        return ref
    bhash = base_recipe_hash(root, name)
    found = _find_base(client, bhash)
    tar = cache_dir() / "base" / f"{bhash}.tar"
    if found is not None:
        return "sha256:" + found.labels.get("runner.base.sha256", "")
    if tar.exists():
        return "sha256:" + _sha256_file(tar)
    raise ImageMissing(f"the base image {name!r} for recipe {bhash[:12]} is not built")


def verify_lock(client: docker.DockerClient, root: Path | None = None) -> list[str]:
    """Problems with ``images/lock.json``: images missing from the engine, or recipes changed since the lock."""
    problems: list[str] = []
    try:
        records = read_lock(root)
    except EngineError as exc:
        return [str(exc)]
    for harness, rec in sorted(records.items()):
        try:
            image = call_with_retry(client.images.get, rec.image_id)
        except docker.errors.ImageNotFound:
            problems.append(f"{harness}: locked image {rec.image_id} is not in the engine")
        else:
            label = image.labels.get("runner.recipe")
            if label != rec.recipe_hash:
                problems.append(
                    f"{harness}: image {rec.image_id[:19]} is labelled runner.recipe={label}, "
                    f"lock says {rec.recipe_hash}"
                )
        try:
            current = current_recipe_hash(client, harness, root)
        except EngineError as exc:
            problems.append(f"{harness}: cannot recompute the recipe hash: {exc}")
            continue
        if current != rec.recipe_hash:
            problems.append(
                f"{harness}: recipe changed since the lock (lock {rec.recipe_hash[:12]}, now {current[:12]})"
            )
    return problems
