"""`runner images outdated` and `runner images bump` for real: the npm registry through its client, the offline build
on the shared vendor layer, the lock. A scratch image tree (RUNNER_REPO_ROOT) holds one small image that pins a
small npm package (semver, no dependencies) one release behind its newest; outdated says 1 behind, bump rewrites the
recipe and the lock (the new pin and its registry integrity hash) and rebuilds, outdated then says nothing is behind,
and the image and the CLI's version output follow. The build alone never writes the lock; the bump does, and the
tree then verifies. The bases are shared with normal use ($RUNNER_CACHE_DIR, found by recipe hash); the scratch image is
removed afterwards.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest

from runner.images import ImageSettings, read_build
from runner.images.lock import lock_files
from runner.images.registry import ClientRegistry, is_prerelease, newer_than, version_key
from runner.images.tree import image_dir

pytestmark = [pytest.mark.docker, pytest.mark.timeout(1200)]

REPO = Path(__file__).resolve().parents[2]
RUNNER = REPO / ".venv" / "bin" / "runner"
PACKAGE = "semver"
IMAGE = "tiny"
# where the runner subprocesses record their builds: the cache of this process's environment, as their edge reads it
SETTINGS = ImageSettings.from_environ(os.environ)


def _runner(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "RUNNER_REPO_ROOT": str(root)}
    for var in ("RUNNER_BASE_IMAGE", "RUNNER_BASE_NODE_IMAGE"):
        env.pop(var, None)
    return subprocess.run([str(RUNNER), *args], capture_output=True, text=True, env=env, timeout=1100, cwd=root)


@pytest.fixture(scope="module")
def versions() -> tuple[str, str]:
    """(one release behind the newest, the newest), as the registry says now."""
    found = ClientRegistry().releases("npm", PACKAGE)
    _, newest = newer_than("0.0.0", found)
    assert newest is not None
    older = [r.version for r in found.releases
             if not is_prerelease(r.version) and version_key(r.version) < version_key(newest.version)]
    return max(older, key=version_key), newest.version


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory, versions: tuple[str, str]) -> Path:
    dest = tmp_path_factory.mktemp("repo")
    for folder in [image_dir("base-node", REPO), image_dir("base-cli", REPO), REPO / "runner" / "images" / "common"]:
        shutil.copytree(folder, dest / folder.relative_to(REPO), ignore=shutil.ignore_patterns("lock.json"))
    image = dest / "runner" / "harnesses" / IMAGE / "images" / IMAGE
    image.mkdir(parents=True)
    (image / "Dockerfile").write_text(f"ARG BASE\nFROM ${{BASE}}\nRUN test -f /usr/local/lib/node_modules/{PACKAGE}/"
                                      "package.json\nUSER 1000:1000\n")
    (image / "recipe.json").write_text(json.dumps({
        "comment": "a scratch image for the bump test", "base": "base-cli", "cli_package": PACKAGE,
        "npm": [f"{PACKAGE}@{versions[0]}"], "files": [], "build_args": {},
        "version_command": ["node", "-p", f"'{PACKAGE} ' + require('/usr/local/lib/node_modules/{PACKAGE}/"
                            "package.json').version"],
    }, indent=2) + "\n")
    (dest / "README.md").write_text(f"| `{IMAGE}` | `{PACKAGE}@{versions[0]}` |\n")
    return dest


@pytest.fixture(scope="module")
def cleanup(engine: docker.DockerClient) -> Iterator[None]:
    yield
    shutil.rmtree(SETTINGS.cache_dir / "builds" / IMAGE, ignore_errors=True)
    for found in engine.images.list(filters={"label": f"runner.image={IMAGE}"}):
        for tag in found.tags:
            if tag.startswith(f"runner/{IMAGE}:"):
                with contextlib.suppress(docker.errors.APIError):
                    engine.images.remove(tag, force=True)


def _rows(root: Path) -> dict[str, dict[str, object]]:
    done = _runner(root, "images", "outdated", "--json")
    assert done.returncode == 0, done.stderr
    return {f"{r['image']}:{r['package']}": r for r in json.loads(done.stdout)["images"]}


def test_bump_brings_a_pin_one_release_behind_to_the_newest_and_rebuilds(
    root: Path, versions: tuple[str, str], engine: docker.DockerClient, cleanup: None
) -> None:
    old, new = versions
    lock = image_dir(IMAGE, root) / "lock.json"
    built = _runner(root, "images", "build", "--harness", IMAGE)
    assert built.returncode == 0, built.stderr
    assert lock_files(root) == []  # a build records what it built in the cache, never in the tree
    before = read_build(IMAGE, SETTINGS)
    assert before is not None and before.version_output == f"{PACKAGE} {old}"

    row = _rows(root)[f"{IMAGE}:{PACKAGE}"]
    assert (row["pinned"], row["newest"], row["behind"], row["outdated"]) == (old, new, 1, True)
    assert isinstance(row["days"], int) and row["days"] >= 0 and row["error"] is None

    bumped = _runner(root, "images", "bump", "--harness", IMAGE)
    assert bumped.returncode == 0, bumped.stderr
    locked = {path.parent.name: json.loads(path.read_text()) for path in lock_files(root)}
    assert set(locked) == {IMAGE, "base-cli", "base-node"}
    entry = locked[IMAGE]
    assert entry["cli_version"] == new and [(p["package"], p["version"]) for p in entry["pins"]] == [(PACKAGE, new)]
    assert entry["pins"][0]["integrity"].startswith("sha512-")
    after = read_build(IMAGE, SETTINGS)
    assert after is not None
    assert f"{IMAGE}: {PACKAGE} {old} → {new}; image {after.image_id[:19]}; {PACKAGE} {new}" in bumped.stdout
    assert after.version_output == f"{PACKAGE} {new}" and after.cli_version == new
    assert after.image_id != before.image_id and after.recipe_hash == entry["recipe_hash"] != before.recipe_hash
    assert engine.images.get(after.image_id).labels["runner.recipe"] == entry["recipe_hash"]
    verified = _runner(root, "images", "verify", "--json")
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert json.loads(verified.stdout)["stale"] == []
    text = lock.read_text()
    assert _runner(root, "images", "build", "--harness", IMAGE).returncode == 0 and lock.read_text() == text
    recipe = json.loads((image_dir(IMAGE, root) / "recipe.json").read_text())
    assert recipe["npm"] == [f"{PACKAGE}@{new}"]
    assert (root / "README.md").read_text() == f"| `{IMAGE}` | `{PACKAGE}@{new}` |\n"

    row = _rows(root)[f"{IMAGE}:{PACKAGE}"]
    assert (row["pinned"], row["behind"], row["outdated"]) == (new, 0, False)
    assert "nothing to bump" in _runner(root, "images", "bump", "--all").stdout
    # held back on purpose: --to the old release is refused with the reason, the recipe untouched
    recipe["hold"] = "kept for the test"
    (image_dir(IMAGE, root) / "recipe.json").write_text(json.dumps(recipe, indent=2) + "\n")
    held = _runner(root, "images", "bump", "--harness", IMAGE, "--to", old)
    assert held.returncode == 0 and "skipped (held: kept for the test)" in held.stdout
    assert json.loads((image_dir(IMAGE, root) / "recipe.json").read_text())["npm"] == [f"{PACKAGE}@{new}"]
