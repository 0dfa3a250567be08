"""Harness image recipes: ``images/<harness>/`` holds a ``Dockerfile`` and a ``recipe.json`` naming its base and
the inputs staged on the host (wheels, npm packages, repo files). A recipe with ``"kind": "base"``
(``images/base-cli``) is a shared layer, built the same way, that other recipes name as their ``base``. A recipe
with ``"unavailable": "<reason>"`` is skipped by :func:`buildable_harnesses` and listed by
:func:`unavailable_images`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from runner.images.errors import ImageBuildError, ImageMissing
from runner.images.shared import DEFAULT_BASE, _load_json

NPM_BEFORE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
DEBIAN_PACKAGE = re.compile(r"^[a-z0-9][a-z0-9+.-]+$")  # a Debian package name (Policy §5.6.1), no version

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
    kind: str = "harness"  # "base": a shared layer other recipes build on (images/base-cli), not a harness
    # Debian packages of the suite the image's Debian base is bootstrapped from, staged on the host as .debs
    # (with what they need that the base does not have) and installed in the image's own layer (images/vibe:
    # trixie's python3); like a base's include, resolved from the suite as it stands when staged
    debian: tuple[str, ...] = ()


def is_layer_dir(directory: Path) -> bool:
    """A base built from a Dockerfile (``"kind": "base"`` in its recipe), like ``images/base-cli``."""
    return _is_harness_dir(directory) and _load_json(directory / "recipe.json").get("kind") == "base"


def _is_harness_dir(directory: Path) -> bool:
    return (directory / "Dockerfile").is_file() and (directory / "recipe.json").is_file()


def load_harness_recipe(harness: str, root: Path) -> HarnessRecipe:
    directory = root / "images" / harness
    if not (directory / "Dockerfile").is_file():
        raise ImageMissing(f"no image recipe for harness {harness!r}: {directory}/Dockerfile is missing")
    data = _load_json(directory / "recipe.json")
    unavailable = data.get("unavailable")
    if data.get("kind", "harness") not in ("harness", "base"):
        raise ImageBuildError(f'{directory}/recipe.json: \'kind\' must be "harness" (the default) or "base"')
    if unavailable is not None and not (isinstance(unavailable, str) and unavailable.strip()):
        raise ImageBuildError(f"{directory}/recipe.json: 'unavailable' must be a non-empty reason string")
    npm_before = data.get("npm_before")
    debian = data.get("debian", [])
    if not isinstance(debian, list) or not all(isinstance(p, str) and DEBIAN_PACKAGE.match(p) for p in debian):
        raise ImageBuildError(f"{directory}/recipe.json: 'debian' must be a list of Debian package names "
                              f"(no versions: they come from the base's suite), not {debian!r}")
    if npm_before is not None and not (isinstance(npm_before, str) and NPM_BEFORE.match(npm_before)):
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
        kind=str(data.get("kind", "harness")),
        debian=tuple(debian),
    )


def _harness_dirs(root: Path) -> list[Path]:
    images = root / "images"
    dirs = (p.parent for p in images.glob("*/recipe.json") if _is_harness_dir(p.parent))
    return sorted(d for d in dirs if not is_layer_dir(d))


def buildable_harnesses(root: Path) -> list[str]:
    """Every harness image under ``images/`` (a directory with a Dockerfile and a recipe.json) that can be built
    here: bases (no Dockerfile, or ``"kind": "base"``) and recipes marked ``unavailable`` are left out."""
    return [d.name for d in _harness_dirs(root) if not _load_json(d / "recipe.json").get("unavailable")]


def unavailable_images(root: Path) -> dict[str, str]:
    """Harness images whose recipe says they cannot be built here: {harness: reason}."""
    reasons = {d.name: _load_json(d / "recipe.json").get("unavailable") for d in _harness_dirs(root)}
    return {name: str(reason) for name, reason in reasons.items() if reason}
