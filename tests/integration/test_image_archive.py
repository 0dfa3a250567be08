"""Saved image archives against the real engine: save, remove, load, and the next build is a warm lookup.

Everything here is the test's own: a copy of the recipes whose node base differs by a comment (so it has its own
recipe hash and tag, imported from a hard link of the cached tarball: no mmdebstrap), a base-cli and a codex
image built on it, and a private cache (the npm stage hard-linked from the real one: no npm). Only those
images are removed.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import docker
import docker.errors
import pytest
from typer.testing import CliRunner

from runner.images import (
    ImageRecord,
    ImageSettings,
    archive_path,
    base_recipe_hash,
    cache_key,
    ensure_image,
    load_harness_recipe,
    load_images,
    save_images,
)
from runner.images.staging import npm_dir
from runner.images.tree import image_dir

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
HARNESS = "codex"


def _settings() -> ImageSettings:
    """What the edge reads from this process's environment (as the ``root`` fixture patches it)."""
    return ImageSettings.from_environ(os.environ)
COLD_STEPS = ("bootstrapping", "importing", "npm install", "downloading", "building")


@pytest.fixture(scope="module")
def client(engine: docker.DockerClient) -> docker.DockerClient:
    return engine  # tests/conftest.py: the real engine, or a failure saying why


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory, codex_image: ImageRecord) -> Iterator[Path]:
    # codex_image: the real node base tarball and Codex's npm stage exist once the real image has been built
    real_cache = Path(os.environ.get("RUNNER_CACHE_DIR") or Path.home() / ".cache" / "runner")
    dest = tmp_path_factory.mktemp("repo")
    cache = tmp_path_factory.mktemp("cache")
    for folder in [*(image_dir(name, REPO) for name in ("base-node", "base-cli", HARNESS)),
                   REPO / "runner" / "images" / "common"]:
        shutil.copytree(folder, dest / folder.relative_to(REPO))
    real_tar = real_cache / "base" / f"{base_recipe_hash(REPO, 'base-node')}.tar"
    if not real_tar.is_file():
        pytest.fail(f"the node base tarball {real_tar} is gone though the codex image is built: "
                    "remove the image runner/base-node and it is bootstrapped again")
    nonce = uuid.uuid4().hex
    recipe = image_dir("base-node", dest) / "recipe.json"
    recipe.write_text(json.dumps({**json.loads(recipe.read_text()), "comment": f"archive test {nonce}"}))
    # The base's identity is its tarball's digest, the same as the real one's: the nonce in the layer is what makes
    # this base-cli, and so this codex, the test's own images (their own recipe hashes and tags).
    with (image_dir("base-cli", dest) / "Dockerfile").open("a") as f:
        f.write(f"LABEL runner.test.archive={nonce}\n")
    (cache / "base").mkdir()
    os.link(real_tar, cache / "base" / f"{base_recipe_hash(dest, 'base-node')}.tar")
    # the same key under either cache
    stage = npm_dir(load_harness_recipe(HARNESS, dest), ImageSettings(cache_dir=real_cache))
    real_stage = real_cache / stage.relative_to(stage.parents[1])
    if not (real_stage / ".complete").is_file():
        pytest.fail(f"the npm stage {real_stage} is not cached though the codex image was just looked up")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("RUNNER_REPO_ROOT", str(dest))
        mp.setenv("RUNNER_CACHE_DIR", str(cache))
        for var in ("RUNNER_BASE_IMAGE", "RUNNER_BASE_NODE_IMAGE"):
            mp.delenv(var, raising=False)
        shutil.copytree(real_stage, cache / "npm" / real_stage.name, symlinks=True, copy_function=os.link)
        yield dest


def _remove(client: docker.DockerClient, refs: list[str]) -> None:
    for ref in refs:
        with contextlib.suppress(docker.errors.ImageNotFound):
            client.images.remove(ref, force=True)


@pytest.fixture(scope="module")
def built(
    client: docker.DockerClient, root: Path, codex_image: ImageRecord
) -> Iterator[tuple[ImageRecord, float]]:
    started = time.monotonic()
    record = ensure_image(client, HARNESS, _settings(), progress=lambda _line: None)
    elapsed = time.monotonic() - started
    real = json.loads((image_dir(HARNESS, REPO) / "lock.json").read_text())
    assert record.image_id != codex_image.image_id and record.build_key != codex_image.build_key
    assert record.recipe_hash != real["recipe_hash"]  # the nonce in the test's base-cli
    yield record, elapsed
    ids = [record.image_id]
    with contextlib.suppress(OSError, ValueError, KeyError):
        ids = json.loads(archive_path(HARNESS, _settings()).with_suffix(".json").read_text())["refs"]
    _remove(client, ids)


def test_save_remove_load_then_the_build_is_a_warm_lookup(
    client: docker.DockerClient, root: Path, built: tuple[ImageRecord, float]
) -> None:
    record, cold = built
    saved = save_images(client, HARNESS, _settings(), progress=lambda _line: None)
    assert Path(saved.path) == archive_path(HARNESS, _settings()) and Path(saved.path).stat().st_size == saved.bytes
    assert saved.refs[0] == record.tag and saved.recipe_hash == record.recipe_hash
    assert [r.split(":")[0] for r in saved.refs] == ["runner/codex", "runner/base-cli", "runner/base-node"]
    meta = json.loads(Path(saved.path).with_suffix(".json").read_text())
    assert meta["recipe_hash"] == record.recipe_hash and meta["cache_key"] == cache_key(HARNESS, _settings())
    assert not [p for p in Path(saved.path).parent.iterdir() if p.name.startswith(".")]  # no temporary left

    ids = {ref: client.images.get(ref).id for ref in saved.refs}
    _remove(client, saved.refs)
    for ref in saved.refs:
        with pytest.raises(docker.errors.ImageNotFound):
            client.images.get(ref)

    loaded = load_images(client, HARNESS, _settings())
    assert loaded.status == "loaded", loaded.message
    assert loaded.recipe_hash == record.recipe_hash
    assert {ref: client.images.get(ref).id for ref in saved.refs} == ids  # image ids survive save and load

    lines: list[str] = []
    started = time.monotonic()
    again = ensure_image(client, HARNESS, _settings(), progress=lines.append)
    warm = time.monotonic() - started
    print(f"cold build {cold:.1f} s, save {saved.seconds:.1f} s ({saved.bytes / 1e6:.0f} MB), "
          f"load {loaded.seconds:.1f} s, build after load {warm:.2f} s")  # fmt: skip
    assert not [line for line in lines if any(step in line for step in COLD_STEPS)], lines
    assert (again.image_id, again.recipe_hash) == (record.image_id, record.recipe_hash)


def test_absent_and_corrupt_archives_are_not_errors(
    client: docker.DockerClient, root: Path, tmp_path: Path, built: tuple[ImageRecord, float]
) -> None:
    absent = load_images(client, HARNESS, _settings(), tmp_path / "nothing.tar")
    assert absent.status == "absent"
    runner_cli = CliRunner()
    from runner.cli import app

    result = runner_cli.invoke(app, ["images", "load", "--harness", HARNESS, "--from", str(tmp_path / "nothing.tar")])
    assert result.exit_code == 0 and "no saved image" in result.output

    garbage = tmp_path / "garbage.tar"
    garbage.write_bytes(b"this is not a tar archive\n" * 1000)
    assert load_images(client, HARNESS, _settings(), garbage).status == "corrupt"
    result = runner_cli.invoke(app, ["images", "load", "--harness", HARNESS, "--from", str(garbage)])
    assert result.exit_code == 0 and "corrupt" in result.output

    saved = archive_path(HARNESS, _settings())
    if not saved.is_file():
        save_images(client, HARNESS, _settings(), progress=lambda _line: None)
    truncated = tmp_path / "truncated.tar"
    with saved.open("rb") as src, truncated.open("wb") as dst:
        dst.write(src.read(saved.stat().st_size // 2))
    shutil.copyfile(saved.with_suffix(".json"), truncated.with_suffix(".json"))
    result = load_images(client, HARNESS, _settings(), truncated)
    assert result.status == "corrupt" and "bytes" in result.message  # the recorded size catches it before docker
    truncated.with_suffix(".json").unlink()
    # and docker load without the record
    assert load_images(client, HARNESS, _settings(), truncated).status == "corrupt"
