"""What the real registries answer through their ordinary clients (``pip``, ``npm``) when ``runner images outdated``
asks which release is the newest that installs: releases listed for the recipe's own Python (not runner's), and a
dry-run install that refuses what cannot install here. The facts asked about are published and cannot change: a
release's ``Requires-Python`` and a platform package that was never published for a launcher release."""

from __future__ import annotations

from pathlib import Path

import pytest

from runner.images.pins import recipe_pins
from runner.images.registry import ClientRegistry, InstallTarget, RegistryError

pytestmark = [pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]

REGISTRY = ClientRegistry(timeout=120.0)


def test_pypi_releases_are_listed_and_installed_for_the_recipes_own_python() -> None:
    """mistral-vibe needs Python >= 3.12: under runner's own Python pip lists nothing; for the vibe recipe's target
    (CPython 3.13, manylinux) it lists the 3.x line, and 3.0.0 (Requires-Python >= 3.14) does not install there."""
    (pin,) = recipe_pins("vibe", REPO)
    assert pin.target.python == "3.13"
    with pytest.raises(RegistryError, match="mistral-vibe"):
        REGISTRY.releases("pypi", "mistral-vibe", InstallTarget("3.11"))
    listed = {r.version for r in REGISTRY.releases("pypi", "mistral-vibe", pin.target).releases}
    assert {"3.0.2", "2.26.1"} <= listed and "3.0.0" not in listed
    refusal = REGISTRY.installs("pypi", "mistral-vibe", "3.0.0", pin.target)
    assert refusal is not None and refusal.startswith("ERROR") and "mistral-vibe" in refusal


def test_an_npm_release_whose_linux_x64_platform_package_is_unpublished_does_not_install() -> None:
    """Kilo 7.8.1: npm installs its launcher and skips the unpublished optional @kilocode/cli-linux-x64@7.8.1
    without a word; the check names it. A small package with no platform packages (semver) installs."""
    refusal = REGISTRY.installs("npm", "@kilocode/cli", "7.8.1")
    assert refusal == "its linux-x64 platform package @kilocode/cli-linux-x64@7.8.1 is not published"
    assert REGISTRY.installs("npm", "semver", "7.6.3") is None
    assert (REGISTRY.installs("npm", "semver", "0.0.404") or "").startswith("npm error code ETARGET")
