"""Image recipes: an image folder (:mod:`runner.images.tree`: ``runner/harnesses/<package>/images/<image>/``)
holds a ``Dockerfile`` and a ``recipe.json`` naming its base and the inputs staged on the host (wheels, npm
packages, files of the runner package). A recipe with ``"kind": "base"`` (``runner/images/bases/base-cli``) is a
shared layer, built the same way, that other recipes name as their ``base``. A recipe with ``"unavailable":
"<reason>"`` is skipped by :func:`buildable_harnesses` and listed by :func:`unavailable_images`."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from runner.images.errors import ImageBuildError, ImageMissing
from runner.images.shared import DEFAULT_BASE, load_json
from runner.images.tree import RECIPE, find_image_dir, image_dirs, shown

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
    # ranges now pull in releases that break it, e.g. dsh 0.1.0-rc.8: the README.md of its image folder)
    npm_before: str | None = None
    kind: str = "harness"  # "base": a shared layer other recipes build on (base-cli), not a harness
    # Debian packages of the suite the image's Debian base is bootstrapped from, staged on the host as .debs
    # (with what they need that the base does not have) and installed in the image's own layer (vibe:
    # trixie's python3); like a base's include, resolved from the suite as it stands when staged
    debian: tuple[str, ...] = ()


def is_layer_dir(directory: Path) -> bool:
    """A base built from a Dockerfile (``"kind": "base"`` in its recipe), like ``base-cli``."""
    return _is_harness_dir(directory) and load_json(directory / RECIPE).get("kind") == "base"


def _is_harness_dir(directory: Path) -> bool:
    return (directory / "Dockerfile").is_file() and (directory / RECIPE).is_file()


def is_layer(name: str, root: Path) -> bool:
    """Whether image ``name`` is a layer built from a Dockerfile (``"kind": "base"``): False for an mmdebstrap base,
    a harness image, or a name with no folder."""
    directory = find_image_dir(name, root)
    return directory is not None and is_layer_dir(directory)


def has_dockerfile(name: str, root: Path) -> bool:
    """Whether image ``name`` is built from a Dockerfile (a harness image or a layer), not bootstrapped."""
    directory = find_image_dir(name, root)
    return directory is not None and _is_harness_dir(directory)


def load_harness_recipe(harness: str, root: Path) -> HarnessRecipe:
    directory = find_image_dir(harness, root)
    if directory is None or not (directory / "Dockerfile").is_file():
        where = f"{shown(directory, root)}/Dockerfile is missing" if directory else "no image folder of that name"
        raise ImageMissing(f"no image recipe for harness {harness!r}: {where}")
    at = shown(directory / RECIPE, root)
    data = load_json(directory / RECIPE)
    unavailable = data.get("unavailable")
    if data.get("kind", "harness") not in ("harness", "base"):
        raise ImageBuildError(f'{at}: \'kind\' must be "harness" (the default) or "base"')
    if unavailable is not None and not (isinstance(unavailable, str) and unavailable.strip()):
        raise ImageBuildError(f"{at}: 'unavailable' must be a non-empty reason string")
    npm_before = data.get("npm_before")
    debian = data.get("debian", [])
    if not isinstance(debian, list) or not all(isinstance(p, str) and DEBIAN_PACKAGE.match(p) for p in debian):
        raise ImageBuildError(f"{at}: 'debian' must be a list of Debian package names "
                              f"(no versions: they come from the base's suite), not {debian!r}")
    if npm_before is not None and not (isinstance(npm_before, str) and NPM_BEFORE.match(npm_before)):
        raise ImageBuildError(f"{at}: 'npm_before' must be a UTC time like 2026-08-25T00:00:00Z")
    build_args = data.get("build_args", {})
    if not isinstance(build_args, dict):
        raise ImageBuildError(f"{at}: 'build_args' must be an object of names and values")
    cli_package = data.get("cli_package")
    return HarnessRecipe(
        harness=harness,
        directory=directory,
        wheels=_strings(data, "wheels", at),
        wheel_python=str(data.get("wheel_python", "3.11")),
        wheel_platforms=_strings(data, "wheel_platforms", at, ("manylinux_2_17_x86_64", "manylinux2014_x86_64")),
        npm=_strings(data, "npm", at),
        files=_strings(data, "files", at),
        build_args={str(k): str(v) for k, v in build_args.items()},
        version_command=_strings(data, "version_command", at),
        cli_package=None if cli_package is None else str(cli_package),
        base=str(data.get("base", DEFAULT_BASE)),
        unavailable=unavailable.strip() if isinstance(unavailable, str) and unavailable else None,
        npm_before=npm_before if isinstance(npm_before, str) else None,
        kind=str(data.get("kind", "harness")),
        debian=tuple(str(p) for p in debian),
    )


def _strings(data: dict[str, object], key: str, at: str, default: tuple[str, ...] = ()) -> tuple[str, ...]:
    """A recipe field that is a list of strings (:class:`ImageBuildError` naming the file and field otherwise)."""
    value = data.get(key)
    if value is None:
        return default
    if not isinstance(value, list) or not all(isinstance(item, str) for item in value):
        raise ImageBuildError(f"{at}: {key!r} must be a list of strings, not {value!r}")
    return tuple(value)


def _harness_dirs(root: Path) -> list[Path]:
    return [d for d in image_dirs(root).values() if _is_harness_dir(d) and not is_layer_dir(d)]


def buildable_harnesses(root: Path) -> list[str]:
    """Every harness image (an image folder with a Dockerfile and a recipe.json) that can be built here: bases (no
    Dockerfile, or ``"kind": "base"``) and recipes marked ``unavailable`` are left out."""
    return [d.name for d in _harness_dirs(root) if not load_json(d / RECIPE).get("unavailable")]


def unavailable_images(root: Path) -> dict[str, str]:
    """Harness images whose recipe says they cannot be built here: {harness: reason}."""
    reasons = {d.name: load_json(d / RECIPE).get("unavailable") for d in _harness_dirs(root)}
    return {name: str(reason) for name, reason in reasons.items() if reason}
