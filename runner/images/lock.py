"""The lock, in two parts: what every machine agrees on, committed, and what one machine built, kept beside it.

* ``lock.json`` in each image folder (committed, beside the recipe it locks: :mod:`runner.images.tree`): for every
  harness image and every base one stands on, its pins (each npm package and wheel pinned by its recipe, with the
  integrity hash its registry publishes for that version), the Debian suite of a base, and a **recipe hash**
  computed from those and the committed recipe files alone (the image folder, the package files its recipe lists,
  its base's recipe hash). Nothing read from this machine goes in: not its CA
  certificates, not a base tarball's digest, not an image id or a build time. So the same tree gives the same lock
  on any machine, and only a change to the tree (a pin, a Dockerfile, a recipe) makes it stale. It is written by
  :func:`update_lock` (``runner images lock``, ``runner images bump``) and by nothing a build or a turn runs.
* ``$RUNNER_CACHE_DIR/builds/<image>/<build key>.json`` (this machine): the image built here for that recipe
  (:class:`ImageRecord`: id, tag, build time, the CLI's own version output) under its **build key**: the recipe
  hash plus what this machine adds (the host's extra CA certificates, the staged npm and wheel trees, the base
  tarball's digest), which the image's tag and ``runner.build`` label carry, so an image built with other
  certificates is never taken for this one.

:func:`verify_lock` tells the two apart: a *stale* finding (the committed lock does not describe the tree) is a real
one; a *local* finding (not built here yet, or built here from other certificates) only says what the next build
does.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

import docker
import docker.errors

from runner.engine import EngineError, call_with_retry
from runner.images.bootstrap import base_recipe_hash, base_suite, debian_root, find_base, pinned_ref
from runner.images.context import compute_build_key, context_plan, layer_identity, local_inputs_of, recipe_dir_files
from runner.images.errors import ImageBuildError, ImageMissing, ImageUnavailable
from runner.images.pins import Pin, recipe_pins
from runner.images.recipes import (
    HarnessRecipe,
    buildable_harnesses,
    has_dockerfile,
    is_layer,
    load_harness_recipe,
)
from runner.images.registry import ClientRegistry, RegistryError
from runner.images.shared import ImageSettings, hash_json, sha256_file
from runner.images.staging import (
    StagedTree,
    debs_digest,
    debs_dir,
    empty_npm,
    npm_digest,
    npm_dir,
    wheel_dir,
)
from runner.images.tree import LOCK, RECIPE, image_dirs, shown, source_root

LOCK_VERSION = 2
_RELOCK = "run `runner images lock` (or `runner images bump`) and commit the lock.json files it writes"

# (kind, package, version) -> the registry's integrity hash of that release
Integrity = Mapping[tuple[str, str, str], str]


class LockError(EngineError):
    """An image's ``lock.json`` cannot be read (the message names the file and the field at fault)."""


# ------------------------------------------------------------------------------------- the committed lock


@dataclass(frozen=True)
class LockedPin:
    kind: str  # "npm" or "pypi"
    package: str
    version: str
    integrity: str | None = None  # npm's dist.integrity ("sha512-…"), or the wheel's "sha256:<hex>"


@dataclass(frozen=True)
class LockEntry:
    name: str
    kind: str  # "harness", "layer" (a base built from a Dockerfile: base-cli) or "debian" (an mmdebstrap base)
    recipe_hash: str
    base: str | None = None
    suite: str | None = None
    cli_package: str | None = None
    cli_version: str | None = None
    pins: tuple[LockedPin, ...] = ()

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = {k: v for k, v in asdict(self).items() if v is not None and k != "name"}
        body["pins"] = [{k: v for k, v in asdict(p).items() if v is not None} for p in self.pins]
        return body


def recipe_hash(name: str, root: Path, integrity: Integrity | None = None) -> str:
    """The committed recipe hash of image ``name``, from the tree and the pins' integrity hashes only.

    A harness or a layer: its folder's files, the package files its recipe lists, each pin with its integrity, and
    its base's recipe hash. An mmdebstrap base: the hash of its recipe (suite, packages, sources, epoch).
    """
    return _recipe_hash(name, root, integrity or {}, ())


def _recipe_hash(name: str, root: Path, integrity: Integrity, seen: tuple[str, ...]) -> str:
    if not has_dockerfile(name, root):
        return base_recipe_hash(root, name)
    if name in seen:
        raise ImageBuildError(f"{seen[0]}: its bases name each other in a loop ({' -> '.join([*seen, name])})")
    recipe = load_harness_recipe(name, root)
    missing = [rel for rel in recipe.files if not (root / rel).is_file()]
    if missing:
        raise ImageBuildError(f"{name}: build input {missing[0]} is missing (listed under 'files' in "
                              f"{shown(recipe.directory / RECIPE, root)})")
    return hash_json({
        "lock": LOCK_VERSION,
        "directory": {rel: sha256_file(p) for rel, p in recipe_dir_files(recipe.directory).items()},
        "files": {rel: sha256_file(root / rel) for rel in recipe.files},
        "pins": [[p.kind, p.package, p.version, integrity.get((p.kind, p.package, p.version))]
                 for p in recipe_pins(name, root)],
        "base": f"{recipe.base}@recipe:{_recipe_hash(recipe.base, root, integrity, (*seen, name))}",
    })


def _chain(root: Path, harness: str) -> list[str]:
    names, name = [harness], harness
    while has_dockerfile(name, root) and len(names) < 16:
        name = load_harness_recipe(name, root).base
        names.append(name)
    return names


def lock_names(root: Path) -> list[str]:
    """What the lock holds: every harness that can be built here, and every base they stand on."""
    return sorted({n for h in buildable_harnesses(root) for n in _chain(root, h)})


def expected_lock(root: Path, integrity: Integrity | None = None) -> dict[str, LockEntry]:
    """The lock the tree describes, with the given integrity hashes (those of the committed lock, to check it)."""
    integrity = integrity or {}
    harnesses = set(buildable_harnesses(root))
    entries: dict[str, LockEntry] = {}
    for name in lock_names(root):
        rhash = recipe_hash(name, root, integrity)
        if not has_dockerfile(name, root):
            entries[name] = LockEntry(name, "debian", rhash, suite=base_suite(root, name))
            continue
        recipe = load_harness_recipe(name, root)
        pins = tuple(LockedPin(p.kind, p.package, p.version, integrity.get((p.kind, p.package, p.version)))
                     for p in recipe_pins(name, root))
        cli = next((p.version for p in pins if p.package == recipe.cli_package), None)
        entries[name] = LockEntry(name, "harness" if name in harnesses else "layer", rhash, recipe.base,
                                  cli_package=recipe.cli_package if name in harnesses else None,
                                  cli_version=cli if name in harnesses else None, pins=pins)
    return entries


def locked_integrity(entries: Mapping[str, LockEntry]) -> dict[tuple[str, str, str], str]:
    return {(p.kind, p.package, p.version): p.integrity for e in entries.values() for p in e.pins if p.integrity}


def _bad(at: str, where: str, why: str) -> LockError:
    return LockError(f"{at}: {where} {why}; {_RELOCK}")


def _str(value: object, at: str, where: str, *, optional: bool = False) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise _bad(at, where, "must be a non-empty string")
    return value


def lock_files(root: Path) -> list[Path]:
    """The committed lock files there are: each image folder's ``lock.json``."""
    return [d / LOCK for d in image_dirs(root).values() if (d / LOCK).is_file()]


def read_lock(root: Path) -> dict[str, LockEntry]:
    """The committed lock: every image folder's ``lock.json``, by image (an image without one is not in it).
    Raises :class:`LockError` naming the file and the field at fault."""
    return {path.parent.name: _read_entry(path.parent.name, path, shown(path, root)) for path in lock_files(root)}


def _read_entry(name: str, path: Path, at: str) -> LockEntry:
    try:
        body = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise LockError(f"{at} is not JSON ({exc}); {_RELOCK}") from exc
    if not isinstance(body, dict):
        raise _bad(at, "the top level", "must be an object")
    if body.get("version") != LOCK_VERSION:
        raise _bad(at, "'version'", f"is {body.get('version')!r}, not {LOCK_VERSION} (version 1 held this machine's "
                   "image ids)")
    pins = body.get("pins", [])
    if not isinstance(pins, list) or not all(isinstance(p, dict) for p in pins):
        raise _bad(at, "pins", "must be a list of objects")
    return LockEntry(
        name=name,
        kind=_str(body.get("kind"), at, "kind"),
        recipe_hash=_str(body.get("recipe_hash"), at, "recipe_hash"),
        **{k: _str(body.get(k), at, k, optional=True) for k in ("base", "suite", "cli_package", "cli_version")},
        pins=tuple(LockedPin(*(_str(p.get(k), at, f"pins[{i}].{k}", optional=k == "integrity")
                               for k in ("kind", "package", "version", "integrity")))
                   for i, p in enumerate(pins)),
    )


def _render(entry: LockEntry) -> str:
    return json.dumps({"version": LOCK_VERSION, **entry.to_json()}, indent=2, sort_keys=True) + "\n"


def write_lock(entries: Mapping[str, LockEntry], root: Path) -> list[Path]:
    """Write each image folder's ``lock.json`` whose content changes (and remove one that no entry is for any more:
    an image that became unavailable); returns the files written or removed."""
    changed: list[Path] = []
    for name, directory in image_dirs(root).items():
        path = directory / LOCK
        if name not in entries:
            if path.exists():
                path.unlink()
                changed.append(path)
            continue
        text = _render(entries[name])
        if path.exists() and path.read_text() == text:
            continue
        tmp = path.with_name(f".{path.name}.{os.getpid()}")
        tmp.write_text(text)
        os.replace(tmp, path)
        changed.append(path)
    return changed


Resolve = Callable[[HarnessRecipe, Pin], str]


def registry_integrity(registry: ClientRegistry | None = None) -> Resolve:
    """Ask the pin's registry (through its client) for its integrity hash; :class:`LockError` when it cannot say."""
    client = registry or ClientRegistry()

    def resolve(recipe: HarnessRecipe, pin: Pin) -> str:
        try:
            return client.integrity(pin.kind, pin.package, pin.version, recipe.wheel_python, recipe.wheel_platforms)
        except RegistryError as exc:
            raise LockError(f"{recipe.harness}: no integrity hash for {pin.spec}: {exc}") from exc

    return resolve


def update_lock(resolve: Resolve, root: Path) -> list[Path]:
    """Bring every image folder's ``lock.json`` to what the tree describes. The registry (``resolve``) is asked only
    for a pin the lock does not already hold at that version; returns the files that changed."""
    try:
        known = locked_integrity(read_lock(root))
    except LockError:
        known = {}
    for name in lock_names(root):
        if not has_dockerfile(name, root):
            continue
        recipe = load_harness_recipe(name, root)
        for pin in recipe_pins(name, root):
            key = (pin.kind, pin.package, pin.version)
            if key not in known:
                known[key] = resolve(recipe, pin)
    return write_lock(expected_lock(root, known), root)


# ------------------------------------------------------------------------------- this machine's builds


@dataclass(frozen=True)
class ImageRecord:
    """An image built on this machine (``$RUNNER_CACHE_DIR/builds/<harness>/<build key>.json``, never the tree)."""

    harness: str
    image_id: str
    tag: str
    recipe_hash: str  # the committed recipe hash it was built for
    base: str  # the base's local identity: "sha256:<tar sha256>", "name@sha256:…", or "<layer>@build:<key>"
    cli_package: str | None
    cli_version: str | None
    version_output: str | None
    built_at: str
    build_key: str = ""  # the recipe hash plus this machine's inputs: the image's tag and runner.build label
    local_inputs: dict[str, str] = field(default_factory=dict, hash=False)  # {"certs", "staged", "base"}


def _builds(harness: str, settings: ImageSettings) -> Path:
    return settings.cache_dir / "builds" / harness


def read_build(harness: str, settings: ImageSettings, build_key: str | None = None) -> ImageRecord | None:
    """The image recorded as built here for ``harness`` with ``build_key`` (without one: the newest recorded). One
    record per build key, so checkouts that share the cache (worktrees, a test's scratch tree) keep their own.
    None when there is none or it cannot be read: it is a cache, and the next build writes it again."""
    names = {f.name for f in fields(ImageRecord)}
    where = _builds(harness, settings)
    if build_key is not None:
        paths = [where / f"{build_key}.json"]
    else:
        with_times = []
        for p in where.glob("*.json"):
            try:
                with_times.append((p.stat().st_mtime, p))
            except OSError:
                continue
        paths = [p for _, p in sorted(with_times, reverse=True)]
    for path in paths:
        try:
            data = json.loads(path.read_text())
            return ImageRecord(**{k: v for k, v in data.items() if k in names})
        except (OSError, ValueError, TypeError, AttributeError):
            continue
    return None


def write_build(record: ImageRecord, settings: ImageSettings) -> None:
    path = _builds(record.harness, settings) / f"{record.build_key}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(asdict(record), indent=2, sort_keys=True) + "\n")
    os.replace(tmp, path)


def lock_integrity_or_none(root: Path) -> dict[tuple[str, str, str], str]:
    """The integrity hashes of the committed lock, or none when it cannot be read (a build goes on; verify says)."""
    try:
        return locked_integrity(read_lock(root))
    except LockError:
        return {}


@dataclass(frozen=True)
class Keys:
    recipe_hash: str
    build_key: str
    local_inputs: dict[str, str]


def current_keys(client: docker.DockerClient, harness: str, settings: ImageSettings) -> Keys:
    """The recipe hash and build key ``ensure_image`` would compute now, without bootstrapping, staging or
    building (:class:`ImageMissing` or :class:`ImageBuildError` when an input is not there yet)."""
    root = source_root(settings)
    recipe = load_harness_recipe(harness, root)
    if recipe.unavailable:
        raise ImageUnavailable(harness, recipe.unavailable)
    return _keys_now(client, recipe, root, lock_integrity_or_none(root), settings)


def _keys_now(client: docker.DockerClient, recipe: HarnessRecipe, root: Path, integrity: Integrity,
              settings: ImageSettings) -> Keys:
    identity = _base_identity_now(client, recipe.base, root, integrity, settings)
    wheels = wheel_dir(recipe, settings)
    stage = npm_dir(recipe, settings)
    digest = npm_digest(stage)
    npm = StagedTree(stage / "npm-global", digest) if digest else None
    if not recipe.npm and is_layer(recipe.base, root):
        npm = empty_npm(settings)
    debs = None
    if recipe.debian:
        debian_identity = _base_identity_now(client, debian_root(root, recipe.base)[0], root, integrity, settings)
        debs_stage = debs_dir(recipe, debian_identity, settings)
        staged = debs_digest(debs_stage)
        if staged is None:
            raise ImageMissing(f"the Debian packages of {recipe.harness} are not staged for its base here")
        debs = StagedTree(debs_stage / "debs", staged)
    plan = context_plan(recipe, root, wheels if (wheels / ".complete").exists() else None, npm, debs,
                         certs=settings.ca_certs_dir)
    rhash = recipe_hash(recipe.harness, root, integrity)
    return Keys(rhash, compute_build_key(plan, identity, recipe.build_args, rhash), local_inputs_of(plan, identity))


def _base_identity_now(client: docker.DockerClient, name: str, root: Path, integrity: Integrity,
                       settings: ImageSettings) -> str:
    if is_layer(name, root):  # a layer built from a Dockerfile: its own build key, recursively
        keys = _keys_now(client, load_harness_recipe(name, root), root, integrity, settings)
        return layer_identity(name, keys.build_key)
    ref = pinned_ref(name, settings)
    if ref:
        return ref
    bhash = base_recipe_hash(root, name)
    found = find_base(client, bhash)
    tar = settings.cache_dir / "base" / f"{bhash}.tar"
    if found is not None:
        return "sha256:" + str(found.labels.get("runner.base.sha256", ""))
    if tar.exists():
        return "sha256:" + sha256_file(tar)
    raise ImageMissing(f"the base image {name!r} for recipe {bhash[:12]} is not built")


# ------------------------------------------------------------------------------------------------ verify


@dataclass(frozen=True)
class Finding:
    image: str
    kind: str  # "stale": the committed lock does not describe the tree; "local": this machine only
    message: str

    def __str__(self) -> str:
        return f"{self.image}: {self.message}"


def stale_findings(root: Path) -> list[Finding]:
    """Where the committed lock does not describe the tree (no engine, no registry, nothing of this machine)."""
    try:
        locked = read_lock(root)
    except LockError as exc:
        return [Finding("lock.json", "stale", str(exc))]
    try:
        expected = expected_lock(root, locked_integrity(locked))
    except EngineError as exc:
        return [Finding("lock.json", "stale", f"cannot compute the recipe hashes: {exc}")]
    found: list[Finding] = []
    for name in sorted(expected.keys() | locked.keys()):
        want, have = expected.get(name), locked.get(name)
        if have is None:
            found.append(Finding(name, "stale", f"no lock.json in its folder (a new image or base); {_RELOCK}"))
        elif want is None:
            found.append(Finding(name, "stale", f"its folder holds a lock.json, but no harness image builds on it "
                                 f"any more; {_RELOCK}"))
        elif message := _difference(want, have, expected, locked):
            found.append(Finding(name, "stale", f"{message}; {_RELOCK}"))
    return found


def _difference(want: LockEntry, have: LockEntry, expected: Mapping[str, LockEntry],
                locked: Mapping[str, LockEntry]) -> str | None:
    pins_now = [(p.kind, p.package, p.version) for p in want.pins]
    pins_then = [(p.kind, p.package, p.version) for p in have.pins]
    if pins_now != pins_then:
        now = ", ".join(f"{p}@{v}" for _, p, v in pins_now) or "none"
        then = ", ".join(f"{p}@{v}" for _, p, v in pins_then) or "none"
        return f"pin changed since the lock: the recipe pins {now}, the lock {then}"
    unhashed = [p.package for p in have.pins if not p.integrity]
    if unhashed:
        return f"the lock has no integrity hash for {', '.join(unhashed)}"
    if want.recipe_hash != have.recipe_hash:
        base = want.base and expected.get(want.base)
        if base and locked.get(base.name) and base.recipe_hash != locked[base.name].recipe_hash:
            return f"its base {base.name} changed since the lock"
        return (f"recipe changed since the lock (its Dockerfile, recipe.json or a file it lists): lock "
                f"{have.recipe_hash[:12]}, now {want.recipe_hash[:12]}")
    if want != have:
        diff = [f.name for f in fields(LockEntry) if getattr(want, f.name) != getattr(have, f.name)]
        return f"the lock's {', '.join(diff)} differ from the recipe"
    return None


def local_findings(client: docker.DockerClient, settings: ImageSettings) -> list[Finding]:
    """What this machine holds for each locked harness: never a reason to call the lock stale."""
    root = source_root(settings)
    try:
        locked = read_lock(root)
    except LockError:
        return []
    found: list[Finding] = []
    for name, entry in sorted(locked.items()):
        if entry.kind != "harness":
            continue
        try:
            now = current_keys(client, name, settings)
        except EngineError as exc:
            found.append(Finding(name, "local", f"not built here yet ({exc}); `runner images build` builds it"))
            continue
        record = read_build(name, settings, now.build_key) or read_build(name, settings)
        if record is None:
            found.append(Finding(name, "local", "not built here yet; `runner images build` builds it"))
        elif record.build_key != now.build_key:
            what = [_LOCAL_NAMES[k] for k in _LOCAL_NAMES if record.local_inputs.get(k) != now.local_inputs.get(k)]
            if record.recipe_hash != now.recipe_hash:
                what.insert(0, "the recipe")
            found.append(Finding(name, "local", f"the image built here ({record.tag}) was built from other inputs: "
                                 f"{', '.join(what) or 'the build context'}; the next build builds a new one"))
        else:
            try:
                image = call_with_retry(client.images.get, record.image_id)
            except docker.errors.ImageNotFound:
                found.append(Finding(name, "local", f"the image built here ({record.image_id[:19]}) is not in the "
                                     "engine any more; the next build builds it again"))
                continue
            if image.labels.get("runner.build") != now.build_key:
                found.append(Finding(name, "local", f"image {record.image_id[:19]} is labelled runner.build="
                                     f"{image.labels.get('runner.build')}, this machine's key is {now.build_key}"))
    return found


_LOCAL_NAMES = {"certs": "the host's CA certificates", "staged": "the staged npm or wheel trees",
                "base": "the base"}


def verify_lock(client: docker.DockerClient | None, settings: ImageSettings) -> list[Finding]:
    """The stale findings (the committed lock against the tree), then, with an engine, the local ones."""
    found = stale_findings(source_root(settings))
    if client is not None:
        found += local_findings(client, settings)
    return found
