"""A harness image's own Debian packages (``"debian"`` in its recipe: vibe's python3 and python3-venv from
trixie): how the recipe is read, where the packages come from, what goes into the build context and the keys, and
that no other image moves. The download itself (apt against the mirror) and the image built from it are exercised
by ``runner images build vibe`` and tests/e2e (a real build, a real turn)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.images.bootstrap import debian_root
from runner.images.context import context_plan, local_inputs_of
from runner.images.errors import ImageBuildError
from runner.images.lock import read_lock
from runner.images.recipes import buildable_harnesses, load_harness_recipe
from runner.images.settings import ImageSettings
from runner.images.staging import StagedTree, debs_dir, empty_npm
from runner.images.tree import image_dir
from tests.support import copy_image_recipes

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    dest = tmp_path / "checkout"
    copy_image_recipes(REPO, dest)
    return dest


def _settings(repo: Path) -> ImageSettings:
    return ImageSettings(repo_root=repo, cache_dir=repo.parent / "cache")


def test_vibe_takes_trixies_python_in_its_own_layer_and_is_buildable() -> None:
    recipe = load_harness_recipe("vibe", REPO)
    assert recipe.debian == ("python3", "python3-venv") and recipe.unavailable is None
    assert recipe.base == "base-cli" and "vibe" in buildable_harnesses(REPO)
    assert recipe.wheels == ("mistral-vibe==3.0.2",) and recipe.wheel_python == "3.13"
    name, debian = debian_root(REPO, recipe.base)
    assert (name, debian["suite"]) == ("base-node", "trixie")  # trixie packages Python 3.13
    # no shared base carries a Python for it: the node base and the CLI layers stay as they were
    assert "python3" not in debian["include"]
    assert all(not load_harness_recipe(h, REPO).debian for h in buildable_harnesses(REPO) if h != "vibe")
    dockerfile = (image_dir("vibe", REPO) / "Dockerfile").read_text()
    assert "COPY debs/ /tmp/debs/" in dockerfile and "dpkg --install /tmp/debs/*.deb" in dockerfile


def test_the_lock_pins_mistral_vibe_with_its_wheels_integrity() -> None:
    entry = read_lock(REPO)["vibe"]
    assert (entry.base, entry.cli_package, entry.cli_version) == ("base-cli", "mistral-vibe", "3.0.2")
    [pin] = entry.pins
    assert (pin.kind, pin.package, pin.version) == ("pypi", "mistral-vibe", "3.0.2")
    assert pin.integrity == "sha256:9dae259db0651a3978653bed1a87005ded40532942f3c143e2d8228fce0f7563"


@pytest.mark.parametrize("debian", ["python3", ["python3=3.13.5-1"], ["Python3"], [""], [3]])
def test_a_debian_field_that_is_not_package_names_is_refused_naming_the_file(repo: Path, debian: object) -> None:
    recipe = image_dir("vibe", repo) / "recipe.json"
    recipe.write_text(json.dumps({**json.loads(recipe.read_text()), "debian": debian}))
    with pytest.raises(ImageBuildError, match=r"images/vibe/recipe.json: 'debian' must be a list of Debian package"):
        load_harness_recipe("vibe", repo)


def test_the_staged_packages_and_an_empty_npm_prefix_go_into_the_context_and_the_local_key(repo: Path) -> None:
    recipe = load_harness_recipe("vibe", repo)
    wheels = Path(repo / "wheels")
    wheels.mkdir()
    (wheels / "a-1.0-py3-none-any.whl").write_bytes(b"a wheel")
    debs = StagedTree(repo / "debs", "d" * 64)
    certs = _settings(repo).ca_certs_dir
    with pytest.raises(ImageBuildError, match="Debian packages for vibe are not staged"):
        context_plan(recipe, repo, wheels, empty_npm(_settings(repo)), certs=certs)
    plan = context_plan(recipe, repo, wheels, empty_npm(_settings(repo)), debs, certs=certs)
    assert plan["debs"] is debs and isinstance(plan["npm-global"], StagedTree)
    # base-cli's ONBUILD copies it: nothing lands in /usr/local
    assert not any(empty_npm(_settings(repo)).path.iterdir())
    staged = local_inputs_of(plan, "base")["staged"]
    other = local_inputs_of({**plan, "debs": StagedTree(repo / "debs", "e" * 64)}, "base")["staged"]
    assert staged != other  # other packages: another build key, never the image built from these


def test_an_image_on_the_python_base_gets_no_npm_prefix_and_no_debs(repo: Path) -> None:
    recipe = load_harness_recipe("reference", repo)
    wheels = Path(repo / "wheels")
    wheels.mkdir()
    plan = context_plan(recipe, repo, wheels, certs=_settings(repo).ca_certs_dir)
    assert "npm-global" not in plan and "debs" not in plan


def test_the_packages_are_staged_per_debian_base_not_per_certificate(tmp_path: Path) -> None:
    recipe = load_harness_recipe("vibe", REPO)
    settings = ImageSettings(repo_root=REPO, cache_dir=tmp_path / "cache")
    one, two = debs_dir(recipe, "sha256:" + "1" * 64, settings), debs_dir(recipe, "sha256:" + "2" * 64, settings)
    assert one != two and one == debs_dir(recipe, "sha256:" + "1" * 64, settings)
