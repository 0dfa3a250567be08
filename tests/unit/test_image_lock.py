"""The lock holds on another machine: each image folder's ``lock.json`` is computed from the tree and the pins' registry
integrity hashes alone, so a machine with other CA certificates, another cache and another checkout path verifies
it as is, and writes the same bytes; what that machine adds (its certificates, staged trees, base tarballs) goes
into the local build key only, which keeps an image built with other certificates from being reused. A changed pin
or recipe still makes the lock stale. No engine (a stand-in that lists labelled images) and no registry (the
integrity hashes come from the committed lock, or from a stand-in that counts what it is asked).
"""

from __future__ import annotations

import ast
import json
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from runner.cli import app
from runner.images import (
    ImageRecord,
    ImageSettings,
    LockError,
    buildable_harnesses,
    cache_key,
    current_keys,
    expected_lock,
    load_harness_recipe,
    read_lock,
    recipe_hash,
    stale_findings,
    update_lock,
    verify_lock,
)
from runner.images.bootstrap import base_recipe_hash
from runner.images.build import _find_built
from runner.images.lock import local_findings, locked_integrity, write_build
from runner.images.pins import Change, Pin, rewrite_pin
from runner.images.recipes import HarnessRecipe
from runner.images.staging import npm_dir, wheel_dir
from runner.images.tree import bases_dir, image_dir, image_dirs
from tests.support import copy_image_recipes, stage_debs

REPO = Path(__file__).resolve().parents[2]
# the builder's own images: the Debian bases (bootstrapped: no Dockerfile) and the layers built on them
DEBIAN = sorted(d.name for d in bases_dir(REPO).iterdir() if not (d / "Dockerfile").exists())
LAYERS = sorted(d.name for d in bases_dir(REPO).iterdir() if (d / "Dockerfile").exists())


def _locks(root: Path) -> dict[str, bytes]:
    """Every image folder's committed lock.json, by image."""
    return {name: (d / "lock.json").read_bytes() for name, d in image_dirs(root).items() if (d / "lock.json").exists()}


def _stands_on(root: Path, harness: str) -> list[str]:
    """The bases ``harness`` stands on, nearest first."""
    chain, name = [], load_harness_recipe(harness, root).base
    while True:
        chain.append(name)
        if not (image_dir(name, root) / "Dockerfile").exists():
            return chain
        name = load_harness_recipe(name, root).base


def _cert(directory: Path, name: str) -> Path:
    """A self-signed CA certificate, as a machine's administrator would drop into /usr/local/share/ca-certificates."""
    directory.mkdir(parents=True, exist_ok=True)
    out = directory / f"{name}.crt"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
                    "-keyout", str(directory / f".{name}.key"), "-out", str(out), "-days", "2", "-subj",
                    f"/CN={name} test CA"], check=True, capture_output=True)
    (directory / f".{name}.key").unlink()
    return out


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A copy of the image folders, the package files they list and the committed locks at another path; an empty cache,
    this machine's CA directory replaced by one holding one certificate, and no engine."""
    dest = tmp_path / "checkout"
    copy_image_recipes(REPO, dest)
    _cert(tmp_path / "certs", "first")
    monkeypatch.setenv("RUNNER_REPO_ROOT", str(dest))
    monkeypatch.setenv("RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RUNNER_CA_CERTS_DIR", str(tmp_path / "certs"))
    monkeypatch.setenv("DOCKER_HOST", f"unix://{tmp_path}/no-engine.sock")
    for var in ("RUNNER_BASE_IMAGE", "RUNNER_BASE_NODE_IMAGE"):
        monkeypatch.delenv(var, raising=False)
    return dest


def _settings(repo: Path) -> ImageSettings:
    """What the edge reads from the variables the fixture sets (the CLI reads them itself): handed in explicitly."""
    return ImageSettings(repo_root=repo, cache_dir=repo.parent / "cache", ca_certs_dir=repo.parent / "certs")


def _stage(repo: Path, cache: Path) -> None:
    """A synthetic cache: the base tarballs, one completed npm stage per recipe with npm packages, the wheels."""
    for base in DEBIAN:
        tar = cache / "base" / f"{base_recipe_hash(repo, base)}.tar"
        tar.parent.mkdir(parents=True, exist_ok=True)
        tar.write_bytes(f"not really the {base} root filesystem".encode())
    for harness in [*buildable_harnesses(repo), *LAYERS]:
        recipe = load_harness_recipe(harness, repo)
        if recipe.npm:
            stage = npm_dir(recipe, _settings(repo))
            (stage / "npm-global").mkdir(parents=True, exist_ok=True)
            (stage / ".complete").write_text(f"{abs(hash(harness)):064x}\n")
        if recipe.wheels:
            wheels = wheel_dir(recipe, _settings(repo))
            wheels.mkdir(parents=True, exist_ok=True)
            (wheels / "mcp-2.3.0-py3-none-any.whl").write_bytes(b"a wheel")
            (wheels / ".complete").write_text("\n".join(recipe.wheels) + "\n")
    stage_debs(repo, _Engine(), _settings(repo))


class _Engine:
    """An engine that holds no base and the images given: ``images.list`` (and the low-level ``api.images``, the
    engine's summaries) filter them by label, like the engine."""

    def __init__(self, images: list[Any] | None = None) -> None:
        held = images or []

        def matching(filters: dict[str, Any] | None) -> list[Any]:
            wanted = (filters or {}).get("label", [])
            pairs = [w.split("=", 1) for w in ([wanted] if isinstance(wanted, str) else wanted)]
            return [i for i in held if all(i.labels.get(k) == v for k, v in pairs)]

        class images:  # the docker-py attribute name
            @staticmethod
            def list(filters: dict[str, Any] | None = None, **_: Any) -> list[Any]:
                return matching(filters)

            @staticmethod
            def get(image_id: str) -> Any:
                return next(i for i in held if i.id == image_id)

        class api:
            @staticmethod
            def images(filters: dict[str, Any] | None = None, **_: Any) -> list[dict[str, Any]]:
                return [{"Id": i.id, "RepoTags": i.tags, "Labels": i.labels, "Created": 0}
                        for i in matching(filters)]

        self.images = images
        self.api = api


@dataclass
class _Image:
    id: str
    labels: dict[str, str]
    tags: list[str]
    attrs: dict[str, Any] = field(default_factory=dict)


def _keys(repo: Path, harnesses: list[str]) -> dict[str, tuple[str, str]]:
    found = {h: current_keys(_Engine(), h, _settings(repo)) for h in harnesses}  # type: ignore[arg-type]
    return {h: (k.recipe_hash, k.build_key) for h, k in found.items()}


# ------------------------------------------------------------------------------------------ the committed lock


def test_the_committed_lock_describes_the_tree_and_rewriting_it_changes_nothing(repo: Path) -> None:
    assert stale_findings(REPO) == []
    locked = read_lock(REPO)
    assert set(locked) == {*buildable_harnesses(REPO), *DEBIAN, *LAYERS}
    assert all(p.integrity for e in locked.values() for p in e.pins)
    assert {e.kind for e in locked.values()} == {"harness", "layer", "debian"}
    committed = _locks(REPO)
    for text in committed.values():
        for local in (b"image_id", b"built_at", b"version_output", b'"tag"', b"certs"):  # nothing of one machine
            assert local not in text

    def ask(recipe: HarnessRecipe, pin: Pin) -> str:
        raise AssertionError(f"asked the registry for {pin.spec}, which the lock holds")

    assert update_lock(ask, repo) == []  # another path, another cache, other certificates: nothing to write
    assert _locks(repo) == committed


def test_the_lock_is_the_same_bytes_whoever_writes_it(repo: Path, tmp_path: Path) -> None:
    """Written afresh on a machine with two CA certificates and its own staged trees, from the registry's answers."""
    _cert(tmp_path / "certs", "second")
    _stage(repo, tmp_path / "cache")
    integrity = locked_integrity(read_lock(REPO))
    asked: list[str] = []

    def registry(recipe: HarnessRecipe, pin: Pin) -> str:
        asked.append(pin.spec)
        return integrity[(pin.kind, pin.package, pin.version)]

    for path in image_dirs(repo).values():
        (path / "lock.json").unlink(missing_ok=True)
    assert len(update_lock(registry, repo)) == len(_locks(REPO))
    assert _locks(repo) == _locks(REPO)
    assert len(asked) == len(integrity)  # each pin once (reference and model share mcp==2.3.0)


def test_the_lock_verifies_on_a_machine_with_one_more_ca_certificate(repo: Path, tmp_path: Path) -> None:
    _stage(repo, tmp_path / "cache")
    harnesses = buildable_harnesses(repo)
    before = _keys(repo, harnesses)
    assert all(rhash == read_lock(repo)[h].recipe_hash for h, (rhash, _) in before.items())

    _cert(tmp_path / "certs", "one-more")
    after = _keys(repo, harnesses)
    assert stale_findings(repo) == []  # the committed lock holds
    assert all(after[h][0] == before[h][0] for h in harnesses)  # the recipe hash did not move
    assert all(after[h][1] != before[h][1] for h in harnesses)  # the local build key did: every image has base-cli's
    result = CliRunner().invoke(app, ["images", "verify", "--json"])  # or reference's certs/ in its context
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert (body["current"], body["stale"], body["engine"]) == (True, [], False)


def test_an_image_built_with_other_certificates_is_not_reused(repo: Path, tmp_path: Path) -> None:
    _stage(repo, tmp_path / "cache")
    old = current_keys(_Engine(), "codex", _settings(repo))  # type: ignore[arg-type]
    tag = f"runner/codex:{old.build_key[:12]}"
    image = _Image("sha256:" + "1" * 64, {"runner.image": "codex", "runner.recipe": old.recipe_hash,
                                          "runner.build": old.build_key}, [tag])
    engine = _Engine([image])
    assert _find_built(engine, "codex", old.build_key, tag) is image  # type: ignore[arg-type]
    write_build(ImageRecord("codex", image.id, tag, old.recipe_hash, old.local_inputs["base"], "@openai/codex",
                            "0.171.0", "codex-cli 0.171.0", "t", old.build_key, old.local_inputs), _settings(repo))
    assert [f for f in local_findings(engine, _settings(repo)) if f.image == "codex"] == []  # type: ignore[arg-type]

    _cert(tmp_path / "certs", "one-more")
    new = current_keys(engine, "codex", _settings(repo))  # type: ignore[arg-type]
    assert new.recipe_hash == old.recipe_hash and new.build_key != old.build_key
    # the certificates, and the base-cli layer they are copied into; the staged npm tree is the same
    assert [k for k in sorted(new.local_inputs) if new.local_inputs[k] != old.local_inputs[k]] == ["base", "certs"]
    assert _find_built(engine, "codex", new.build_key, f"runner/codex:{new.build_key[:12]}") is None  # type: ignore[arg-type]
    found = verify_lock(engine, _settings(repo))  # type: ignore[arg-type]
    assert [f for f in found if f.kind == "stale"] == []
    codex = [f for f in found if f.image == "codex"]
    assert len(codex) == 1 and codex[0].kind == "local"
    assert "other inputs: the host's CA certificates" in codex[0].message
    assert "the next build builds a new one" in codex[0].message


# ------------------------------------------------------------------------------------------- a stale lock


def test_a_changed_pin_makes_the_lock_stale(repo: Path) -> None:
    rewrite_pin(Change("codex", "@openai/codex", "0.171.0", "0.172.0"), repo)
    found = stale_findings(repo)
    assert [(f.image, f.kind) for f in found] == [("codex", "stale")]
    assert "pin changed since the lock: the recipe pins @openai/codex@0.172.0, the lock @openai/codex@0.171.0" in (
        found[0].message)
    assert "runner images lock" in found[0].message
    result = CliRunner().invoke(app, ["images", "verify", "--json"])
    assert result.exit_code == 1, result.output
    body = json.loads(result.stdout)
    assert body["current"] is False and [s["image"] for s in body["stale"]] == ["codex"]
    text = CliRunner().invoke(app, ["images", "verify"])
    assert text.exit_code == 1 and "stale" in text.output and "@openai/codex@0.172.0" in text.output

    asked: list[str] = []

    def registry(recipe: HarnessRecipe, pin: Pin) -> str:
        asked.append(pin.spec)
        return "sha512-bmV3"

    assert update_lock(registry, repo) == [image_dir("codex", repo) / "lock.json"]
    assert asked == ["@openai/codex@0.172.0"]  # only the pin the lock did not hold
    assert stale_findings(repo) == []
    entry = read_lock(repo)["codex"]
    assert entry.cli_version == "0.172.0" and entry.pins[0].integrity == "sha512-bmV3"
    assert entry.recipe_hash == recipe_hash("codex", repo, {("npm", "@openai/codex", "0.172.0"): "sha512-bmV3"})


def test_a_changed_recipe_or_layer_makes_the_lock_stale_and_names_the_base(repo: Path) -> None:
    keys = {h: cache_key(h, _settings(repo)) for h in buildable_harnesses(repo)}
    readmes = [p for d in image_dirs(repo).values() for p in d.glob("README.md")]
    assert readmes, "some image folder has its documentation"
    for readme in readmes:  # documentation: never copied into an image
        readme.write_text(readme.read_text() + "\nA sentence more.\n")
    assert stale_findings(repo) == [] and {h: cache_key(h, _settings(repo)) for h in keys} == keys
    dockerfile = image_dir("codex", repo) / "Dockerfile"
    dockerfile.write_text(dockerfile.read_text() + "# changed\n")
    found = stale_findings(repo)
    assert [f.image for f in found] == ["codex"] and "recipe changed since the lock" in found[0].message
    layer = image_dir("base-cli", repo) / "Dockerfile"
    layer.write_text(layer.read_text() + "# changed\n")
    by_image = {f.image: f.message for f in stale_findings(repo)}
    on_layer = {h: _stands_on(repo, h) for h in buildable_harnesses(repo) if "base-cli" in _stands_on(repo, h)}
    above = {n for h in on_layer for n in _stands_on(repo, h)[:_stands_on(repo, h).index("base-cli")]}
    assert on_layer and above, "some harness stands on base-cli, and some on a layer above it"
    assert set(by_image) == {"base-cli", *above, *on_layer}
    for harness, chain in on_layer.items():
        assert by_image[harness].startswith(f"its base {chain[0]} changed since the lock"), harness
    assert {h for h in buildable_harnesses(repo) if h not in on_layer}.isdisjoint(by_image)  # on other bases


def test_a_changed_integrity_hash_or_a_missing_image_makes_the_lock_stale(repo: Path) -> None:
    path = image_dir("codex", repo) / "lock.json"
    body = json.loads(path.read_text())
    body["pins"][0]["integrity"] = "sha512-b3RoZXI="
    path.write_text(json.dumps(body))
    (image_dir("gemini", repo) / "lock.json").unlink()
    by_image = {f.image: f.message for f in stale_findings(repo)}
    assert set(by_image) == {"codex", "gemini"}
    assert by_image["codex"].startswith("recipe changed since the lock")  # the hash covers the integrity
    assert by_image["gemini"].startswith("no lock.json in its folder")


def test_a_malformed_or_old_lock_is_named_with_its_field(repo: Path) -> None:
    path = image_dir("codex", repo) / "lock.json"
    path.write_text(json.dumps({"version": 2, "kind": "harness", "pins": []}))
    with pytest.raises(LockError, match=r"codex/lock\.json: recipe_hash must be a non-empty string"):
        read_lock(repo)
    path.write_text(json.dumps({"version": 1, "images": {}}))
    found = stale_findings(repo)
    assert [f.kind for f in found] == ["stale"] and "'version' is 1, not 2" in found[0].message
    path.write_text("{")
    assert "is not JSON" in stale_findings(repo)[0].message
    assert expected_lock(repo)  # the tree alone still describes what the lock should be


# --------------------------------------------------------------------------------------- who writes the lock


def _calls(tree: ast.AST, names: set[str]) -> set[str]:
    return {n.func.attr if isinstance(n.func, ast.Attribute) else n.func.id  # type: ignore[union-attr]
            for n in ast.walk(tree) if isinstance(n, ast.Call)
            and ((isinstance(n.func, ast.Name) and n.func.id in names)
                 or (isinstance(n.func, ast.Attribute) and n.func.attr in names))}


def test_only_the_lock_and_bump_commands_write_the_lock() -> None:
    """Nothing a build, a turn, a test run or the bench runs writes a lock.json: write_lock is called by
    update_lock alone, and update_lock by `runner images lock` and `runner images bump` alone."""
    writers: dict[str, set[str]] = {}
    for path in sorted((REPO / "runner").rglob("*.py")):
        called = _calls(ast.parse(path.read_text()), {"write_lock", "update_lock"})
        if called:
            writers[path.relative_to(REPO).as_posix()] = called
    assert writers == {"runner/images/lock.py": {"write_lock"}, "runner/cli/images.py": {"update_lock"}}
    commands = ast.parse((REPO / "runner" / "cli" / "images.py").read_text())
    with_update = {f.name for f in ast.walk(commands) if isinstance(f, ast.FunctionDef)
                   and _calls(f, {"update_lock"})}
    assert with_update == {"images_lock", "images_bump"}
