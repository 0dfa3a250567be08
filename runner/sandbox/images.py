"""Pinned images: the offline bases and one image per harness, recorded in ``images/lock.json``.

* Bases: ``images/<base>/recipe.json`` (a directory with a recipe that has a ``suite`` and no Dockerfile:
  ``base`` is bookworm with python3, ``base-node`` is trixie with nodejs) drives mmdebstrap; the tarball is
  cached as ``$RUNNER_CACHE_DIR/base/<recipe-hash>.tar`` and imported with labels ``runner.base.recipe`` and
  ``runner.base.sha256``. ``RUNNER_BASE_IMAGE=name@sha256:…`` (``RUNNER_BASE_NODE_IMAGE`` for ``base-node``,
  see :func:`base_image_env`) replaces one with a registry image.
* Harness images: ``images/<harness>/`` holds a ``Dockerfile`` and a ``recipe.json`` naming its base
  (``"base"``, the default, or ``"base-node"``) and the inputs staged on the host (wheels, npm packages,
  repo files, CA certs). The build runs offline (network ``none``) and is labelled
  ``runner.recipe=<hash of every input>``; an image carrying that label is reused as is.
* npm packages are installed on the host with ``npm install --global --prefix <stage>/npm-global`` once per
  package list (``$RUNNER_CACHE_DIR/npm/<key>``); the stage's digest (every installed package's path, name and
  version, plus the symlinks) is computed once and kept in ``<stage>/.complete``, so the warm path reads one
  small file instead of hashing hundreds of megabytes. The context gets the tree as ``npm-global/``.
* A recipe with an ``"unavailable": "<reason>"`` field is skipped by :func:`buildable_harnesses`, listed by
  :func:`unavailable_images`, and :func:`ensure_image` raises :class:`ImageUnavailable` with that reason.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, fields
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import docker
import docker.errors
import requests
from docker.models.images import Image

from runner.sandbox import timings
from runner.sandbox.engine import (
    EngineError,
    ImageBuildError,
    ImageMissing,
    ImageReferenceError,
    ImageUnavailable,
    call_with_retry,
)

Progress = Callable[[str], None]

BASE_IMAGE_ENV = "RUNNER_BASE_IMAGE"
DEFAULT_BASE = "base"
CERTS_DIR = Path("/usr/local/share/ca-certificates")
LOCK_VERSION = 1
_DIGEST_REF = re.compile(r"^[^@\s]+@sha256:[0-9a-f]{64}$")
_VERSION = re.compile(r"\d+(?:\.\d+)+[\w.+-]*")
_NPM_BEFORE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
_NPM_STAGE_FORMAT = 1  # bump when the staging procedure changes, so old stages are not reused
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


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


@dataclass(frozen=True)
class _Base:
    image_id: str
    identity: str


# --------------------------------------------------------------------------------------------- paths


def repo_root() -> Path:
    """The directory holding ``images/`` and ``harness_profiles/`` ($RUNNER_REPO_ROOT overrides)."""
    override = os.environ.get("RUNNER_REPO_ROOT")
    if override:
        return Path(override).resolve()
    for start in (Path(__file__).resolve().parent, Path.cwd().resolve()):
        for d in (start, *start.parents):
            if (d / "images").is_dir() and (d / "harness_profiles").is_dir():
                return d
    raise EngineError("cannot find the runner repository (a directory with images/ and harness_profiles/)")


def cache_dir() -> Path:
    return Path(os.environ.get("RUNNER_CACHE_DIR") or Path.home() / ".cache" / "runner")


def lock_path(root: Path | None = None) -> Path:
    return (root or repo_root()) / "images" / "lock.json"


# ------------------------------------------------------------------------------------------- helpers


@contextmanager
def _exclusive(name: str) -> Iterator[None]:
    """Serialise a cold step (bootstrap, download, build, lock update) across processes; warm paths skip it."""
    path = cache_dir() / "locks" / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def _stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _hash_json(obj: object) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _load_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ImageBuildError(f"cannot read recipe {path}: {exc}") from exc
    if not isinstance(data, dict):
        raise ImageBuildError(f"recipe {path} is not a JSON object")
    return data


def _id(image: Image) -> str:
    if not image.id:
        raise ImageMissing(f"the engine returned an image without an id: {image!r}")
    return image.id


def _find_built(client: docker.DockerClient, harness: str, recipe_hash: str, tag: str) -> Image | None:
    """The image built for this recipe. It must carry its tag too: labels are inherited, so a failed build's
    leftover layer (or an image built FROM this one) can carry the same labels."""
    labels = [f"runner.image={harness}", f"runner.recipe={recipe_hash}"]
    found = [i for i in call_with_retry(client.images.list, filters={"label": labels}) if tag in i.tags]
    return max(found, key=lambda i: str(i.attrs.get("Created", "")), default=None)


def _find_base(client: docker.DockerClient, recipe_hash: str) -> Image | None:
    """The imported base for ``recipe_hash``: one layer, equal to the tarball (derived images inherit the labels)."""
    found = call_with_retry(client.images.list, filters={"label": f"runner.base.recipe={recipe_hash}"})
    bases = [
        i
        for i in found
        if i.attrs.get("RootFS", {}).get("Layers") == ["sha256:" + i.labels.get("runner.base.sha256", "")]
    ]
    return max(bases, key=lambda i: str(i.attrs.get("Created", "")), default=None)


# ---------------------------------------------------------------------------------------------- base


def base_image_env(name: str = DEFAULT_BASE) -> str:
    """The variable that replaces base ``name`` with a registry image pinned by digest.

    ``base`` -> ``RUNNER_BASE_IMAGE``, ``base-node`` -> ``RUNNER_BASE_NODE_IMAGE``.
    """
    return "RUNNER_" + re.sub(r"[^0-9A-Za-z]+", "_", name).upper() + "_IMAGE"


def _is_base_dir(directory: Path) -> bool:
    return (directory / "recipe.json").is_file() and not (directory / "Dockerfile").exists()


def _base_recipe(root: Path, name: str) -> dict[str, Any]:
    directory = root / "images" / name
    if not _is_base_dir(directory):
        raise ImageMissing(
            f"no base recipe {name!r}: {directory}/recipe.json is missing (or the directory holds a Dockerfile, "
            f"which makes it a harness image, not a base)"
        )
    recipe = _load_json(directory / "recipe.json")
    missing = [k for k in ("suite", "variant", "include", "source_date_epoch") if k not in recipe]
    if missing:
        raise ImageBuildError(f"base recipe {directory}/recipe.json lacks {', '.join(missing)}")
    return recipe


def base_recipe_hash(root: Path | None = None, name: str = DEFAULT_BASE) -> str:
    return _hash_json(_base_recipe(root or repo_root(), name))


def ensure_base(client: docker.DockerClient, progress: Progress | None = None, name: str = DEFAULT_BASE) -> str:
    """Return the id of base ``name``, importing the cached tarball or bootstrapping it first if needed."""
    return _ensure_base(client, progress or _stderr, repo_root(), name).image_id


def _pinned_ref(name: str = DEFAULT_BASE) -> str | None:
    env = base_image_env(name)
    ref = os.environ.get(env, "").strip()
    if ref and not _DIGEST_REF.match(ref):
        raise ImageReferenceError(
            f"{env}={ref!r} is not pinned by digest; give name@sha256:<64 hex digits> "
            f"or unset it to use the offline base"
        )
    return ref or None


def _ensure_base(client: docker.DockerClient, say: Progress, root: Path, name: str = DEFAULT_BASE) -> _Base:
    ref = _pinned_ref(name)
    if ref:
        try:
            return _Base(_id(call_with_retry(client.images.get, ref)), ref)
        except docker.errors.ImageNotFound:
            say(f"[{name}] pulling {ref}")
            try:
                return _Base(_id(call_with_retry(client.images.pull, ref)), ref)
            except docker.errors.APIError as exc:
                env = base_image_env(name)
                raise ImageMissing(f"{env}={ref} is not in the engine and cannot be pulled: {exc}") from exc
    recipe = _base_recipe(root, name)
    rhash = _hash_json(recipe)
    found = _find_base(client, rhash)
    if found is None:
        with _exclusive(f"base-{name}"):  # another process may be bootstrapping the same recipe
            found = _find_base(client, rhash) or _import_base(client, recipe, rhash, say, name)
    return _Base(_id(found), "sha256:" + found.labels.get("runner.base.sha256", ""))


def _import_base(
    client: docker.DockerClient, recipe: dict[str, Any], rhash: str, say: Progress, name: str = DEFAULT_BASE
) -> Image:
    tar = cache_dir() / "base" / f"{rhash}.tar"
    started = time.monotonic()
    bootstrapped = not tar.exists()
    if bootstrapped:
        _bootstrap(recipe, tar, say, name)
    digest = _sha256_file(tar)
    say(f"[{name}] importing {tar} ({tar.stat().st_size / 1e6:.0f} MB)")
    changes = [*recipe.get("changes", []), f"LABEL runner.base.recipe={rhash}", f"LABEL runner.base.sha256={digest}"]
    repository = str(recipe.get("repository", f"runner/{name}"))
    call_with_retry(client.api.import_image_from_file, str(tar), repository=repository, tag=rhash[:12], changes=changes)
    found = _find_base(client, rhash)
    if found is None:
        raise ImageMissing(f"imported {tar} but no image carries runner.base.recipe={rhash}")
    timings.record(cache_dir(), f"base.{name}", time.monotonic() - started, recipe=rhash, bootstrapped=bootstrapped)
    return found


def _mmdebstrap_argv(recipe: dict[str, Any], out: Path) -> list[str]:
    argv = ["mmdebstrap", f"--variant={recipe['variant']}", "--format=tar"]
    if recipe.get("architecture"):
        argv.append(f"--architectures={recipe['architecture']}")
    argv += [f"--hook-dir={d}" for d in recipe.get("hook_dirs", [])]
    argv.append("--include=" + ",".join(recipe["include"]))
    argv += [f"--dpkgopt={o}" for o in recipe.get("dpkgopts", [])]
    return [*argv, recipe["suite"], str(out), *recipe.get("sources", [])]


def _bootstrap(recipe: dict[str, Any], tar: Path, say: Progress, name: str = DEFAULT_BASE) -> None:
    tar.parent.mkdir(parents=True, exist_ok=True)
    tmp = tar.with_name(f".{tar.stem}.{os.getpid()}.tar")  # mmdebstrap picks the format from ".tar"
    log = tar.with_suffix(".log")
    argv = _mmdebstrap_argv(recipe, tmp)
    env = {**os.environ, "SOURCE_DATE_EPOCH": str(recipe["source_date_epoch"])}
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
            "mmdebstrap is not installed; run scripts/ensure-docker.sh or apt-get install mmdebstrap"
        ) from exc
    if proc.returncode != 0:
        tmp.unlink(missing_ok=True)
        raise ImageBuildError(f"mmdebstrap failed (exit {proc.returncode}); log {log}:\n" + "\n".join(tail))
    os.replace(tmp, tar)


# ------------------------------------------------------------------------------------ harness images


@dataclass(frozen=True)
class HarnessRecipe:
    harness: str
    directory: Path
    wheels: tuple[str, ...]
    wheel_python: str
    wheel_platforms: tuple[str, ...]
    npm: tuple[str, ...]
    files: tuple[str, ...]
    build_args: dict[str, str]
    version_command: tuple[str, ...]
    cli_package: str | None
    base: str = DEFAULT_BASE
    unavailable: str | None = None
    # npm install --before=<this>: resolve every dependency as the registry stood then (a CLI whose caret
    # ranges now pull in releases that break it, e.g. dsh 0.1.0-rc.8: images/deepseek/README.md)
    npm_before: str | None = None


def _is_harness_dir(directory: Path) -> bool:
    return (directory / "Dockerfile").is_file() and (directory / "recipe.json").is_file()


def load_harness_recipe(harness: str, root: Path | None = None) -> HarnessRecipe:
    directory = (root or repo_root()) / "images" / harness
    if not (directory / "Dockerfile").is_file():
        raise ImageMissing(f"no image recipe for harness {harness!r}: {directory}/Dockerfile is missing")
    data = _load_json(directory / "recipe.json")
    unavailable = data.get("unavailable")
    if unavailable is not None and not (isinstance(unavailable, str) and unavailable.strip()):
        raise ImageBuildError(f"{directory}/recipe.json: 'unavailable' must be a non-empty reason string")
    npm_before = data.get("npm_before")
    if npm_before is not None and not (isinstance(npm_before, str) and _NPM_BEFORE.match(npm_before)):
        raise ImageBuildError(f"{directory}/recipe.json: 'npm_before' must be a UTC time like 2026-08-25T00:00:00Z")
    return HarnessRecipe(
        harness=harness,
        directory=directory,
        wheels=tuple(data.get("wheels", [])),
        wheel_python=str(data.get("wheel_python", "3.11")),
        wheel_platforms=tuple(data.get("wheel_platforms", ["manylinux_2_17_x86_64", "manylinux2014_x86_64"])),
        npm=tuple(str(p) for p in data.get("npm", [])),
        files=tuple(data.get("files", [])),
        build_args={str(k): str(v) for k, v in data.get("build_args", {}).items()},
        version_command=tuple(data.get("version_command", [])),
        cli_package=data.get("cli_package"),
        base=str(data.get("base", DEFAULT_BASE)),
        unavailable=unavailable.strip() if unavailable else None,
        npm_before=npm_before,
    )


def _wheel_dir(recipe: HarnessRecipe) -> Path:
    key = _hash_json([list(recipe.wheels), recipe.wheel_python, list(recipe.wheel_platforms)])
    return cache_dir() / "wheels" / key[:24]


def _stage_wheels(recipe: HarnessRecipe, say: Progress) -> Path:
    """Download the wheels once per requirement set (for the image's Python ABI); later calls reuse them."""
    target = _wheel_dir(recipe)
    if (target / ".complete").exists():
        return target
    with _exclusive(f"wheels-{target.name}"):
        if not (target / ".complete").exists():
            _download_wheels(recipe, target, say)
    return target


def _download_wheels(recipe: HarnessRecipe, target: Path, say: Progress) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--disable-pip-version-check",
        "--no-input",
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        recipe.wheel_python,
        *[a for p in recipe.wheel_platforms for a in ("--platform", p)],
        "-d",
        str(tmp),
        *recipe.wheels,
    ]
    say(f"[{recipe.harness}] downloading wheels: {' '.join(recipe.wheels)}")
    proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ImageBuildError(f"pip download for {recipe.harness} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    (tmp / ".complete").write_text("\n".join(recipe.wheels) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)


@dataclass(frozen=True)
class _Tree:
    """A staged directory that goes into the build context as is (symlinks kept), hashed by its recorded digest."""

    path: Path
    digest: str


def _npm_dir(recipe: HarnessRecipe) -> Path:
    spec: dict[str, object] = {"format": _NPM_STAGE_FORMAT, "packages": sorted(recipe.npm)}
    if recipe.npm_before:
        spec["before"] = recipe.npm_before
    key = _hash_json(spec)
    return cache_dir() / "npm" / key[:24]


def _npm_digest(stage: Path) -> str | None:
    """The digest recorded when ``stage`` was completed, or None if it is not (fully) staged."""
    try:
        digest = (stage / ".complete").read_text().strip()
    except OSError:
        return None
    return digest if _HEX64.match(digest) and (stage / "npm-global").is_dir() else None


def _stage_npm(recipe: HarnessRecipe, say: Progress) -> _Tree:
    """Install the recipe's npm packages on the host once per package list; later calls only read the digest."""
    stage = _npm_dir(recipe)
    digest = _npm_digest(stage)
    if digest is None:
        with _exclusive(f"npm-{stage.name}"):
            digest = _npm_digest(stage) or _install_npm(recipe, stage, say)
    return _Tree(stage / "npm-global", digest)


def _install_npm(recipe: HarnessRecipe, stage: Path, say: Progress) -> str:
    stage.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".staging-", dir=stage.parent))
    prefix = tmp / "npm-global"
    argv = [
        "npm",
        "install",
        "--global",
        "--prefix",
        str(prefix),
        "--no-audit",
        "--no-fund",
        "--no-update-notifier",
        "--loglevel=warn",
        *([f"--before={recipe.npm_before}"] if recipe.npm_before else []),
        *recipe.npm,
    ]
    say(f"[{recipe.harness}] npm install --global: {' '.join(recipe.npm)} (cached under {stage})")
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    except FileNotFoundError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ImageBuildError("npm is not installed on the host; the vendor images stage their CLIs with it") from exc
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ImageBuildError(
            f"npm install for {recipe.harness} failed (exit {proc.returncode}):\n"
            f"{proc.stdout[-2000:]}{proc.stderr[-3000:]}"
        )
    inventory = _npm_inventory(prefix)
    if not inventory["packages"]:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ImageBuildError(f"npm install for {recipe.harness} installed nothing under {prefix}")
    digest = _hash_json(inventory)
    (tmp / "npm.log").write_text(proc.stdout + proc.stderr)
    (tmp / "installed.json").write_text(
        json.dumps({"requested": list(recipe.npm), "digest": digest, **inventory}, indent=1) + "\n"
    )
    (tmp / ".complete").write_text(digest + "\n")
    shutil.rmtree(stage, ignore_errors=True)
    os.replace(tmp, stage)
    return digest


def _npm_inventory(prefix: Path) -> dict[str, list[list[str]]]:
    """What a staged prefix holds, cheaply: every installed package (path, name, version) and every symlink.

    Registry tarballs are immutable per name@version, so this identifies the content without reading it.
    """
    packages: list[list[str]] = []
    links: list[list[str]] = []

    def scan(node_modules: Path) -> None:
        for entry in sorted(node_modules.iterdir()):
            if entry.name.startswith("."):
                continue
            scoped = entry.name.startswith("@") and entry.is_dir() and not entry.is_symlink()
            for pkg in sorted(entry.iterdir()) if scoped else [entry]:
                rel = pkg.relative_to(prefix).as_posix()
                if pkg.is_symlink():
                    links.append([rel, os.readlink(pkg)])
                    continue
                with suppress(OSError, ValueError, AttributeError):
                    manifest = json.loads((pkg / "package.json").read_text())
                    packages.append([rel, str(manifest.get("name")), str(manifest.get("version"))])
                if (pkg / "node_modules").is_dir():
                    scan(pkg / "node_modules")

    if (prefix / "lib" / "node_modules").is_dir():
        scan(prefix / "lib" / "node_modules")
    for entry in sorted((prefix / "bin").iterdir()) if (prefix / "bin").is_dir() else []:
        rel = entry.relative_to(prefix).as_posix()
        links.append([rel, os.readlink(entry) if entry.is_symlink() else "sha256:" + _sha256_file(entry)])
    return {"packages": packages, "links": links}


PlanEntry = Path | bytes | _Tree


def _context_plan(
    recipe: HarnessRecipe, root: Path, wheels: Path | None, npm: _Tree | None = None
) -> dict[str, PlanEntry]:
    """Every entry of the build context: relative path -> source file, generated bytes, or a staged tree."""
    plan: dict[str, PlanEntry] = {}
    for p in sorted(recipe.directory.rglob("*")):
        rel = p.relative_to(recipe.directory)
        if p.is_file() and not any(part.startswith(".") or part == "__pycache__" for part in rel.parts):
            plan[rel.as_posix()] = p
    certs = sorted(CERTS_DIR.glob("*.crt")) if CERTS_DIR.is_dir() else []
    for c in certs:
        plan[f"certs/{c.name}"] = c
    if not certs:
        plan["certs/README"] = b"no extra CA certificates on the host\n"
    if recipe.wheels:
        if wheels is None:
            raise ImageBuildError(f"wheels for {recipe.harness} are not staged (run ensure_image)")
        for w in sorted(wheels.glob("*.whl")):
            plan[f"wheels/{w.name}"] = w
        plan["wheels/requirements.txt"] = ("\n".join(recipe.wheels) + "\n").encode()
    if recipe.npm:
        if npm is None:
            raise ImageBuildError(f"npm packages for {recipe.harness} are not staged (run ensure_image)")
        plan["npm-global"] = npm
    for rel_src in recipe.files:
        src = root / rel_src
        if not src.is_file():
            raise ImageBuildError(
                f"{recipe.harness}: build input {rel_src} is missing (listed under 'files' in "
                f"images/{recipe.harness}/recipe.json)"
            )
        plan[f"repo/{rel_src}"] = src
    return plan


def _entry_digest(src: PlanEntry) -> str:
    if isinstance(src, _Tree):
        return "tree:" + src.digest
    return hashlib.sha256(src).hexdigest() if isinstance(src, bytes) else _sha256_file(src)


def _recipe_hash(plan: dict[str, PlanEntry], base_identity: str, build_args: dict[str, str]) -> str:
    entries = {rel: _entry_digest(src) for rel, src in plan.items()}
    return _hash_json({"context": entries, "base": base_identity, "build_args": build_args})


def ensure_image(client: docker.DockerClient, harness: str, progress: Progress | None = None) -> ImageRecord:
    """Return the pinned image for ``harness``, building it offline only when its recipe hash is new.

    Raises :class:`ImageUnavailable` (with the recipe's reason) for an image that cannot be built here.
    """
    say = progress or _stderr
    root = repo_root()
    recipe = load_harness_recipe(harness, root)
    if recipe.unavailable:
        raise ImageUnavailable(harness, recipe.unavailable)
    base = _ensure_base(client, say, root, recipe.base)
    started = time.monotonic()  # staging is part of a cold build; a warm one finds it cached
    wheels = _stage_wheels(recipe, say) if recipe.wheels else None
    npm = _stage_npm(recipe, say) if recipe.npm else None
    plan = _context_plan(recipe, root, wheels, npm)
    rhash = _recipe_hash(plan, base.identity, recipe.build_args)
    tag = f"runner/{harness}:{rhash[:12]}"
    image, built = _find_built(client, harness, rhash, tag), False
    if image is not None:
        locked = read_lock(root).get(harness)
        if locked and locked.image_id == image.id and locked.recipe_hash == rhash:
            return locked
    else:
        with _exclusive(f"image-{harness}"):
            image = _find_built(client, harness, rhash, tag)  # another process may have built it meanwhile
            if image is None:
                image = call_with_retry(client.images.get, _build(client, recipe, plan, base, rhash, tag, say))
                built = True
    image_id = _id(image)
    output = _version_output(client, image_id, recipe.version_command) if recipe.version_command else None
    if built:
        timings.record(cache_dir(), f"image.{harness}", time.monotonic() - started, recipe=rhash)
    found = _VERSION.search(output or "")
    record = ImageRecord(
        harness=harness,
        image_id=image_id,
        tag=tag,
        recipe_hash=rhash,
        base=base.identity,
        cli_package=recipe.cli_package,
        cli_version=found.group(0) if found else None,
        version_output=output,
        built_at=str(image.attrs.get("Created", datetime.now(UTC).isoformat())),
    )
    with _exclusive("lockfile"):
        write_lock({**read_lock(root), harness: record}, root)
    return record


def _link_tree(src: Path, dest: Path) -> None:
    """Replicate a staged tree in the build context: hard links (no copying hundreds of MB), symlinks as symlinks."""

    def link(s: str, d: str) -> str:
        try:
            os.link(s, d)
        except OSError:  # another filesystem, or links not allowed: copy
            shutil.copy2(s, d)
        return d

    shutil.copytree(src, dest, symlinks=True, copy_function=link)


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
        for rel, src in plan.items():
            dest = Path(ctx, rel)
            dest.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(src, _Tree):
                _link_tree(src.path, dest)
            elif isinstance(src, bytes):
                dest.write_bytes(src)
            else:
                shutil.copyfile(src, dest)
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


# ---------------------------------------------------------------------------------------------- lock


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
    ref = _pinned_ref(recipe.base)
    if ref:
        identity = ref
    else:
        bhash = base_recipe_hash(root, recipe.base)
        found = _find_base(client, bhash)
        tar = cache_dir() / "base" / f"{bhash}.tar"
        if found is not None:
            identity = "sha256:" + found.labels.get("runner.base.sha256", "")
        elif tar.exists():
            identity = "sha256:" + _sha256_file(tar)
        else:
            raise ImageMissing(f"the base image {recipe.base!r} for recipe {bhash[:12]} is not built")
    wheels = _wheel_dir(recipe)
    stage = _npm_dir(recipe)
    digest = _npm_digest(stage)
    npm = _Tree(stage / "npm-global", digest) if digest else None
    plan = _context_plan(recipe, root, wheels if (wheels / ".complete").exists() else None, npm)
    return _recipe_hash(plan, identity, recipe.build_args)


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


def _harness_dirs(root: Path | None) -> list[Path]:
    images = (root or repo_root()) / "images"
    return sorted(p.parent for p in images.glob("*/recipe.json") if _is_harness_dir(p.parent))


def buildable_harnesses(root: Path | None = None) -> list[str]:
    """Every harness image under ``images/`` (a directory with a Dockerfile and a recipe.json) that can be built
    here: bases (no Dockerfile) and recipes marked ``unavailable`` are left out."""
    return [d.name for d in _harness_dirs(root) if not _load_json(d / "recipe.json").get("unavailable")]


def unavailable_images(root: Path | None = None) -> dict[str, str]:
    """Harness images whose recipe says they cannot be built here: {harness: reason}."""
    reasons = {d.name: _load_json(d / "recipe.json").get("unavailable") for d in _harness_dirs(root)}
    return {name: str(reason) for name, reason in reasons.items() if reason}
