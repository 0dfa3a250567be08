"""Image layer against the real Docker Engine: offline base, offline harness build, warm path, lock checks.

The harness build runs in a temporary copy of the repository's image recipes (``ImageSettings.repo_root``) and its lock
(written from the tree with the committed integrity hashes), with a per-run line inserted after FROM so the whole
build really runs (offline) and its image can be removed afterwards. The base image and the download caches are
shared with normal use ($RUNNER_CACHE_DIR, as the edge reads it). A build never writes the lock: it records the image
built here under $RUNNER_CACHE_DIR/builds.
"""

from __future__ import annotations

import contextlib
import dataclasses
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

from runner.engine import EngineUnavailable, connect
from runner.harnesses.profile import load_profile, shipped_profiles
from runner.images import (
    ImageRecord,
    ImageSettings,
    base_image_env,
    base_recipe_hash,
    buildable_harnesses,
    current_keys,
    ensure_base,
    ensure_image,
    load_harness_recipe,
    read_build,
    read_lock,
    stale_findings,
    timings,
    unavailable_images,
    update_lock,
    verify_lock,
)
from runner.images.errors import ImageBuildError, ImageMissing, ImageReferenceError, ImageUnavailable
from runner.images.lock import locked_integrity, write_build
from runner.images.pins import Pin
from runner.images.recipes import HarnessRecipe
from runner.images.tree import bases_dir, image_dir, image_dirs

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

REPO = Path(__file__).resolve().parents[2]
CLIENT = Path("runner/harnesses/reference/client.py")


def _copy_recipes(dest: Path, *, with_client: bool = True) -> Path:
    """The Python base's and the reference image's folders (not their committed locks) in a tree of their own."""
    for name in ("base", "reference"):
        folder = image_dir(name, REPO)
        shutil.copytree(folder, dest / folder.relative_to(REPO), ignore=shutil.ignore_patterns("lock.json"))
    if with_client:
        (dest / CLIENT).parent.mkdir(parents=True, exist_ok=True)
        if (REPO / CLIENT).is_file():
            shutil.copyfile(REPO / CLIENT, dest / CLIENT)
        else:  # the real client is written elsewhere; a placeholder is enough to build the image
            (dest / CLIENT).write_text("print('placeholder reference client')\n")
    return dest


def _locks(root: Path) -> dict[Path, bytes]:
    """Every image folder's lock.json under ``root``, by path."""
    return {d / "lock.json": (d / "lock.json").read_bytes() for d in image_dirs(root).values()
            if (d / "lock.json").exists()}


def _settings(root: Path = REPO, **base_refs: str) -> ImageSettings:
    """What the edge reads from this process's environment (its cache directory, npm's and mmdebstrap's
    environment), for the checkout ``root``, with ``base_refs`` the only pinned bases (none: the offline ones)."""
    return dataclasses.replace(ImageSettings.from_environ(os.environ), repo_root=root, base_refs=base_refs)


@pytest.fixture(scope="module")
def client(engine: docker.DockerClient) -> docker.DockerClient:
    return engine  # tests/conftest.py: the real engine, or a failure saying why


@pytest.fixture(scope="module")
def root(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    dest = _copy_recipes(tmp_path_factory.mktemp("repo"))
    dockerfile = image_dir("reference", dest) / "Dockerfile"
    lines = dockerfile.read_text().splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("FROM ")) + 1
    # Fails the build if the build container can resolve names; the nonce defeats the layer cache.
    lines.insert(at, f"RUN ! getent hosts deb.debian.org && echo offline-build-{uuid.uuid4().hex}")
    dockerfile.write_text("\n".join(lines) + "\n")
    assert update_lock(_committed_integrity, dest)  # this tree's lock, the registry's hashes as committed
    yield dest


def _committed_integrity(recipe: HarnessRecipe, pin: Pin) -> str:
    return locked_integrity(read_lock(REPO))[(pin.kind, pin.package, pin.version)]


@pytest.fixture(scope="module")
def built(client: docker.DockerClient, root: Path) -> Iterator[tuple[ImageRecord, float]]:
    ensure_base(client, _settings(root))
    lock = _locks(root)
    started = time.monotonic()
    record = ensure_image(client, "reference", _settings(root), progress=lambda _line: None)
    elapsed = time.monotonic() - started
    assert _locks(root) == lock  # a cold build leaves the lock as it was
    yield record, elapsed
    with contextlib.suppress(docker.errors.APIError):
        client.images.remove(record.image_id, force=True)
    (_settings(root).cache_dir / "builds" / "reference" / f"{record.build_key}.json").unlink(missing_ok=True)


def test_base_is_imported_and_labelled(client: docker.DockerClient, root: Path) -> None:
    image = client.images.get(ensure_base(client, _settings(root)))
    labels = image.labels
    assert labels["runner.base.recipe"] == base_recipe_hash(root)
    tar_sha = labels["runner.base.sha256"]
    assert len(tar_sha) == 64
    assert image.attrs["RootFS"]["Layers"][0] == f"sha256:{tar_sha}"
    assert "LANG=C.UTF-8" in image.attrs["Config"]["Env"]
    assert f"runner/base:{labels['runner.base.recipe'][:12]}" in image.tags


def test_reference_image_builds_offline_as_non_root(
    client: docker.DockerClient, root: Path, built: tuple[ImageRecord, float]
) -> None:
    record, _ = built
    image = client.images.get(record.image_id)
    assert image.labels["runner.image"] == "reference"
    assert image.labels["runner.recipe"] == record.recipe_hash == read_lock(root)["reference"].recipe_hash
    assert image.labels["runner.build"] == record.build_key
    assert record.tag == f"runner/reference:{record.build_key[:12]}"
    assert image.attrs["Config"]["User"] == "1000:1000"
    assert record.cli_package == "mcp" and record.cli_version == "2.3.0"
    assert record.version_output == "reference-harness 2.3.0"
    out = client.containers.run(
        record.image_id,
        ["sh", "-c", "id -u && /opt/venv/bin/python -c 'import mcp' && test -f /opt/reference/client.py && pwd"],
        network_mode="none",
        remove=True,
    )
    assert out.decode().split() == ["1000", "/home/runner"]


def test_a_cold_build_records_its_own_duration_for_the_bench(built: tuple[ImageRecord, float]) -> None:
    record, elapsed = built
    step = timings.read(_settings().cache_dir)["image.reference"]
    assert step["recipe"] == record.recipe_hash
    assert 0 < step["seconds"] <= elapsed + 0.01


def test_second_ensure_is_a_cache_hit(
    client: docker.DockerClient, root: Path, built: tuple[ImageRecord, float]
) -> None:
    record, _ = built
    # this recipe's images only: another user of the engine may build a reference image of its own meanwhile
    this_recipe = {"label": ["runner.image=reference", f"runner.recipe={record.recipe_hash}"]}
    before = {i.id for i in client.images.list(filters=this_recipe)}
    started = time.monotonic()
    again = ensure_image(client, "reference", _settings(root), progress=lambda _line: None)
    elapsed = time.monotonic() - started
    assert again.image_id == record.image_id
    assert {i.id for i in client.images.list(filters=this_recipe)} == before == {record.image_id}
    print(f"warm ensure_image: {elapsed:.2f} s")  # how fast is make bench's to say, not a test's


def test_verify_tells_a_stale_lock_from_a_local_difference(
    client: docker.DockerClient, root: Path, built: tuple[ImageRecord, float]
) -> None:
    record, _ = built
    lock = image_dir("reference", root) / "lock.json"
    committed = lock.read_text()
    settings = _settings(root)
    assert read_build("reference", settings, record.build_key) == record
    assert read_lock(root)["reference"].recipe_hash == record.recipe_hash
    assert verify_lock(client, settings) == []
    mine = settings.cache_dir / "builds" / "reference" / f"{record.build_key}.json"
    other = mine.with_name("f" * 64 + ".json")
    try:
        write_build(dataclasses.replace(record, image_id="sha256:" + "0" * 64), settings)
        found = verify_lock(client, settings)
        assert [(f.kind, "not in the engine" in f.message) for f in found] == [("local", True)]
        mine.unlink()  # built here only with other certificates
        other_certs = {**record.local_inputs, "certs": "x"}
        write_build(dataclasses.replace(record, build_key="f" * 64, local_inputs=other_certs), settings)
        found = verify_lock(client, settings)
        assert [f.kind for f in found] == ["local"] and "the host's CA certificates" in found[0].message
        other.unlink()
        write_build(record, settings)
        body = json.loads(committed)
        body["pins"][0]["version"] = "2.2.0"
        lock.write_text(json.dumps(body))
        stale = [f for f in verify_lock(client, settings) if f.kind == "stale"]
        assert [f.image for f in stale] == ["reference"] and "pin changed since the lock" in stale[0].message
        lock.write_text('{"image_id": 1}')
        assert [f.kind for f in verify_lock(client, settings)] == ["stale"]
    finally:
        lock.write_text(committed)
        other.unlink(missing_ok=True)
        write_build(record, settings)
    assert verify_lock(client, settings) == []


def test_building_in_the_checkout_leaves_its_lock_as_it_was(client: docker.DockerClient) -> None:
    """What make run, make test and the CI column job do: ensure_image in the real checkout (a lookup once built)."""
    lock = _locks(REPO)
    record = ensure_image(client, "reference", _settings(REPO), progress=lambda _line: None)
    assert _locks(REPO) == lock
    assert stale_findings(REPO) == []
    assert record.recipe_hash == read_lock(REPO)["reference"].recipe_hash
    assert current_keys(client, "reference", _settings(REPO)).build_key == record.build_key


def test_base_image_without_digest_is_refused(client: docker.DockerClient, root: Path) -> None:
    settings = _settings(root, RUNNER_BASE_IMAGE="debian:bookworm-slim")  # as the edge reads RUNNER_BASE_IMAGE
    with pytest.raises(ImageReferenceError, match="not pinned by digest"):
        ensure_base(client, settings)
    with pytest.raises(ImageReferenceError):
        ensure_image(client, "reference", settings, progress=lambda _line: None)


def test_missing_build_input_fails_clearly(client: docker.DockerClient, tmp_path: Path) -> None:
    settings = _settings(_copy_recipes(tmp_path, with_client=False))
    with pytest.raises(ImageBuildError, match=r"runner/harnesses/reference/client\.py is missing"):
        ensure_image(client, "reference", settings, progress=lambda _line: None)


def test_unreachable_engine_is_a_typed_error(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/nothing.sock")
    with pytest.raises(EngineUnavailable, match=r"runner setup engine"):
        connect(os.environ, timeout=5)


def test_node_base_is_imported_and_has_node_20(client: docker.DockerClient) -> None:
    image = client.images.get(ensure_base(client, _settings(REPO), progress=lambda _line: None, name="base-node"))
    labels = image.labels
    assert labels["runner.base.recipe"] == base_recipe_hash(REPO, "base-node") != base_recipe_hash(REPO)
    assert image.attrs["RootFS"]["Layers"] == [f"sha256:{labels['runner.base.sha256']}"]
    assert f"runner/base-node:{labels['runner.base.recipe'][:12]}" in image.tags
    out = client.containers.run(
        image.id,
        [
            "sh",
            "-c",
            "node --version; command -v socat; command -v tini; command -v npm || command -v python3 || echo absent",
        ],
        network_mode="none",
        remove=True,
    )
    node, socat, tini, absent = out.decode().split()
    assert node.startswith("v20.") or int(node[1:].split(".")[0]) > 20
    assert (socat, tini, absent) == ("/usr/bin/socat", "/usr/bin/tini", "absent")


def test_each_base_has_its_own_override_variable(client: docker.DockerClient) -> None:
    assert base_image_env() == "RUNNER_BASE_IMAGE"
    assert base_image_env("base-node") == "RUNNER_BASE_NODE_IMAGE"
    # what the edge reads from the environment: every RUNNER_<BASE>_IMAGE, the node one here
    settings = ImageSettings.from_environ({"RUNNER_REPO_ROOT": str(REPO), "RUNNER_BASE_NODE_IMAGE": "node:20"})
    assert settings.base_refs == {"RUNNER_BASE_NODE_IMAGE": "node:20"}
    with pytest.raises(ImageReferenceError, match="RUNNER_BASE_NODE_IMAGE"):
        ensure_base(client, settings, name="base-node")
    with pytest.raises(ImageMissing, match="no base recipe 'reference'"):
        ensure_base(client, settings, name="reference")


def test_image_directories_are_sorted_into_bases_harnesses_and_unavailable() -> None:
    buildable = buildable_harnesses(REPO)
    unavailable = unavailable_images(REPO)
    profiles = [load_profile(path) for path in shipped_profiles()]
    # every harness image serves a profile, and a recipe says it cannot be built here exactly when its profiles say
    # they cannot run here (the reason is the recipe's and the profile's own)
    assert set(buildable) | set(unavailable) == {p.image for p in profiles}
    assert set(unavailable) == {p.image for p in profiles if p.unavailable}
    bases = {d.name for d in bases_dir(REPO).iterdir()}
    assert bases and not bases & set(buildable)
    for name in buildable:
        recipe = load_harness_recipe(name, REPO)
        assert recipe.base in bases
        assert all("@" in spec[1:] for spec in recipe.npm), f"{name}: npm specs must pin a version"


def test_unavailable_recipe_raises_before_any_work(client: docker.DockerClient, tmp_path: Path) -> None:
    root = _copy_recipes(tmp_path)
    recipe = image_dir("reference", root) / "recipe.json"
    data = json.loads(recipe.read_text())
    recipe.write_text(json.dumps({**data, "unavailable": "needs a licence this machine lacks"}))
    assert buildable_harnesses(root) == []
    assert unavailable_images(root) == {"reference": "needs a licence this machine lacks"}
    with pytest.raises(ImageUnavailable, match="needs a licence this machine lacks") as caught:
        ensure_image(client, "reference", _settings(root), progress=lambda line: pytest.fail(f"tried to build: {line}"))
    assert (caught.value.harness, caught.value.reason) == ("reference", "needs a licence this machine lacks")
    with pytest.raises(ImageUnavailable):
        current_keys(client, "reference", _settings(root))
    assert _locks(root) == {}
