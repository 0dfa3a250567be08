"""A harness is one folder, ``runner/harnesses/<package>/``: its package, its profile(s), its image folder(s) and its
evidence (README.md), found by its id. Every package is named by one of the harness ids it serves ('-' as '_'),
every profile names an image folder of its own package, every image folder serves one of its package's profiles,
and the profile and the package point at the README beside them, not at a document elsewhere."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from runner.harnesses.profile import HARNESSES, load_profile, shipped_profiles
from runner.images.tree import INSTALLED_ROOT, image_dirs

PACKAGES = sorted(p.parent for p in HARNESSES.glob("*/__init__.py"))


def _header(profile: Path) -> str:
    """The comment lines a profile opens with."""
    lines = profile.read_text(encoding="utf-8").splitlines()
    return "\n".join(line for line in lines[: next(i for i, line in enumerate(lines) if not line.startswith("#"))])


def test_there_are_harness_packages() -> None:
    assert len(PACKAGES) > 1 and len(shipped_profiles()) >= len(PACKAGES)


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_a_package_is_named_by_its_harness_and_holds_its_profile_and_evidence(package: Path) -> None:
    profiles = {p.stem for p in package.glob("*.yaml")}
    assert package.name.replace("_", "-") in profiles, f"{package.name}: no profile {package.name.replace('_', '-')}"
    assert (package / "README.md").is_file(), f"runner/harnesses/{package.name} has no README.md (its evidence)"
    docstring = ast.get_docstring(ast.parse((package / "__init__.py").read_text(encoding="utf-8"))) or ""
    assert "README.md" in docstring, f"runner/harnesses/{package.name}/__init__.py does not point at its README.md"
    for profile in package.glob("*.yaml"):
        assert "README.md" in _header(profile), f"{profile.name}: its header comment should point at README.md"


@pytest.mark.parametrize("profile", shipped_profiles(), ids=lambda p: p.stem)
def test_a_profile_names_an_image_folder_of_its_own_package(profile: Path) -> None:
    image = load_profile(profile).image
    assert image_dirs(INSTALLED_ROOT).get(image) == profile.parent / "images" / image, (
        f"{profile.name}: image {image!r} is not runner/harnesses/{profile.parent.name}/images/{image}/")


@pytest.mark.parametrize("package", PACKAGES, ids=lambda p: p.name)
def test_every_image_folder_of_a_package_serves_one_of_its_profiles(package: Path) -> None:
    served = {load_profile(p).image for p in package.glob("*.yaml")}
    folders = {d.name for d in (package / "images").iterdir() if d.is_dir()}
    assert folders == served, f"runner/harnesses/{package.name}/images: {sorted(folders ^ served)}"


def test_a_harness_id_is_shipped_once() -> None:
    ids = [p.stem for p in shipped_profiles()]
    assert len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)
