"""Inputs staged on the host once and reused: wheels downloaded with pip for the image's Python ABI
(``$RUNNER_CACHE_DIR/wheels/<key>``), npm packages installed with ``npm install --global --prefix
<stage>/npm-global`` once per package list (``$RUNNER_CACHE_DIR/npm/<key>``), and Debian packages downloaded with
apt for the image's base (``$RUNNER_CACHE_DIR/debs/<key>``: what the recipe's ``debian`` names and what it needs that
the base has not installed). A stage's digest (every installed package's path, name and version, plus the symlinks;
every .deb's name and sha256) is computed once and kept in ``<stage>/.complete``, so the warm path reads one small
file instead of hashing hundreds of megabytes. The context gets the trees as ``npm-global/`` and ``debs/``."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Mapping
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path

from runner.images.errors import ImageBuildError
from runner.images.recipes import HarnessRecipe
from runner.images.shared import ImageSettings, Progress, exclusive, hash_json, sha256_file

NPM_STAGE_FORMAT = 1  # bump when the staging procedure changes, so old stages are not reused
_HEX64 = re.compile(r"^[0-9a-f]{64}$")


def wheel_dir(recipe: HarnessRecipe, settings: ImageSettings) -> Path:
    key = hash_json([list(recipe.wheels), recipe.wheel_python, list(recipe.wheel_platforms)])
    return settings.cache_dir / "wheels" / key[:24]


def stage_wheels(recipe: HarnessRecipe, say: Progress, settings: ImageSettings) -> Path:
    """Download the wheels once per requirement set (for the image's Python ABI); later calls reuse them."""
    target = wheel_dir(recipe, settings)
    if (target / ".complete").exists():
        return target
    with exclusive(settings.cache_dir, f"wheels-{target.name}"):
        if not (target / ".complete").exists():
            _download_wheels(recipe, target, say)
    return target


def _download_wheels(recipe: HarnessRecipe, target: Path, say: Progress) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".staging-", dir=target.parent))
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--disable-pip-version-check",
        "--no-input",
        "--only-binary=:all:",
        "--implementation",
        "cp",
        "--python-version",
        recipe.wheel_python,
        *[a for p in recipe.wheel_platforms for a in ("--platform", p)],
        "-d",
        str(tmp),
        *recipe.wheels,
    ]
    say(f"[{recipe.harness}] downloading wheels: {' '.join(recipe.wheels)}")
    proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ImageBuildError(f"pip download for {recipe.harness} failed:\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    (tmp / ".complete").write_text("\n".join(recipe.wheels) + "\n")
    shutil.rmtree(target, ignore_errors=True)
    os.replace(tmp, target)


@dataclass(frozen=True)
class StagedTree:
    """A staged directory that goes into the build context as is (symlinks kept), hashed by its recorded digest."""

    path: Path
    digest: str


def npm_dir(recipe: HarnessRecipe, settings: ImageSettings) -> Path:
    spec: dict[str, object] = {"format": NPM_STAGE_FORMAT, "packages": sorted(recipe.npm)}
    if recipe.npm_before:  # part of the key only when set: every other image keeps its stage
        spec["before"] = recipe.npm_before
    key = hash_json(spec)
    return settings.cache_dir / "npm" / key[:24]


def npm_digest(stage: Path) -> str | None:
    """The digest recorded when ``stage`` was completed, or None if it is not (fully) staged."""
    try:
        digest = (stage / ".complete").read_text().strip()
    except OSError:
        return None
    return digest if _HEX64.match(digest) and (stage / "npm-global").is_dir() else None


def stage_npm(recipe: HarnessRecipe, say: Progress, settings: ImageSettings) -> StagedTree:
    """Install the recipe's npm packages on the host once per package list; later calls only read the digest."""
    stage = npm_dir(recipe, settings)
    digest = npm_digest(stage)
    if digest is None:
        with exclusive(settings.cache_dir, f"npm-{stage.name}"):
            digest = npm_digest(stage) or _install_npm(recipe, stage, say, settings.environ)
    return StagedTree(stage / "npm-global", digest)


def _install_npm(recipe: HarnessRecipe, stage: Path, say: Progress, environ: Mapping[str, str]) -> str:
    """npm runs with ``environ``, the host's environment handed down from the edge, and a ``TMPDIR`` of its own."""
    stage.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".staging-", dir=stage.parent))
    prefix = tmp / "npm-global"
    argv = [
        "npm",
        "install",
        "--global",
        "--prefix",
        str(prefix),
        "--no-audit",
        "--no-fund",
        "--no-update-notifier",
        "--loglevel=warn",
        *([f"--before={recipe.npm_before}"] if recipe.npm_before else []),
        *recipe.npm,
    ]
    say(f"[{recipe.harness}] npm install --global: {' '.join(recipe.npm)} (cached under {stage})")
    # npm and the packages' install scripts get a temporary directory of their own, removed with the staging:
    # @kilocode/cli 7.7.7's postinstall leaves an empty $TMPDIR/kilo behind (measured), in the user's TMPDIR
    scratch = tmp / "tmp"
    scratch.mkdir()
    env = {**environ, "TMPDIR": str(scratch)}
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, env=env)
    except FileNotFoundError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ImageBuildError("npm is not installed on the host; the vendor images stage their CLIs with it") from exc
    if proc.returncode != 0:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ImageBuildError(
            f"npm install for {recipe.harness} failed (exit {proc.returncode}):\n"
            f"{proc.stdout[-2000:]}{proc.stderr[-3000:]}"
        )
    shutil.rmtree(scratch, ignore_errors=True)
    inventory = _npm_inventory(prefix)
    if not inventory["packages"]:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ImageBuildError(f"npm install for {recipe.harness} installed nothing under {prefix}")
    digest = hash_json(inventory)
    (tmp / "npm.log").write_text(proc.stdout + proc.stderr)
    (tmp / "installed.json").write_text(
        json.dumps({"requested": list(recipe.npm), "digest": digest, **inventory}, indent=1) + "\n"
    )
    (tmp / ".complete").write_text(digest + "\n")
    shutil.rmtree(stage, ignore_errors=True)
    os.replace(tmp, stage)
    return digest


def _npm_inventory(prefix: Path) -> dict[str, list[list[str]]]:
    """What a staged prefix holds, cheaply: every installed package (path, name, version) and every symlink.

    Registry tarballs are immutable per name@version, so this identifies the content without reading it.
    """
    packages: list[list[str]] = []
    links: list[list[str]] = []

    def scan(node_modules: Path) -> None:
        for entry in sorted(node_modules.iterdir()):
            if entry.name.startswith("."):
                continue
            scoped = entry.name.startswith("@") and entry.is_dir() and not entry.is_symlink()
            for pkg in sorted(entry.iterdir()) if scoped else [entry]:
                rel = pkg.relative_to(prefix).as_posix()
                if pkg.is_symlink():
                    links.append([rel, os.readlink(pkg)])
                    continue
                with suppress(OSError, ValueError, AttributeError):
                    manifest = json.loads((pkg / "package.json").read_text())
                    packages.append([rel, str(manifest.get("name")), str(manifest.get("version"))])
                if (pkg / "node_modules").is_dir():
                    scan(pkg / "node_modules")

    if (prefix / "lib" / "node_modules").is_dir():
        scan(prefix / "lib" / "node_modules")
    for entry in sorted((prefix / "bin").iterdir()) if (prefix / "bin").is_dir() else []:
        rel = entry.relative_to(prefix).as_posix()
        links.append([rel, os.readlink(entry) if entry.is_symlink() else "sha256:" + sha256_file(entry)])
    return {"packages": packages, "links": links}


def empty_npm(settings: ImageSettings) -> StagedTree:
    """An empty npm prefix: what an image that installs nothing from npm gives the ``ONBUILD COPY npm-global/`` of
    the layer it stands on (base-cli). Only such an image gets it, so no other image's context moves."""
    path = settings.cache_dir / "npm" / "empty" / "npm-global"
    path.mkdir(parents=True, exist_ok=True)
    return StagedTree(path, hash_json({"packages": [], "links": []}))


# ------------------------------------------------------------------------------------------- Debian packages

_DEBS_STAGE_FORMAT = 1  # bump when the staging procedure changes, so old stages are not reused
DEBIAN_KEYRING = Path("/usr/share/keyrings/debian-archive-keyring.gpg")  # mmdebstrap's too (debian-archive-keyring)


def debs_dir(recipe: HarnessRecipe, debian_identity: str, settings: ImageSettings) -> Path:
    """Where the .debs of ``recipe`` are staged, per Debian base: ``debian_identity`` is the local identity of the
    mmdebstrap base at the root of its chain (its tarball's digest; another base, or the same one bootstrapped again,
    is another set of packages to add). The layers between (base-cli, base-node22) install no Debian package, so
    the root's packages are the base's; were one to, ``dpkg --install`` in the image would stop on what is missing,
    never build a wrong image. Not the layer's build key: that moves with the host's CA certificates, which change
    no package."""
    spec = {"format": _DEBS_STAGE_FORMAT, "packages": sorted(recipe.debian), "base": debian_identity}
    return settings.cache_dir / "debs" / hash_json(spec)[:24]


def debs_digest(stage: Path) -> str | None:
    """The digest recorded when ``stage`` was completed, or None if it is not (fully) staged."""
    try:
        digest = (stage / ".complete").read_text().strip()
    except OSError:
        return None
    return digest if _HEX64.match(digest) and (stage / "debs").is_dir() else None


def stage_debs(
    recipe: HarnessRecipe, debian_identity: str, debian: dict[str, object], status: Callable[[], bytes],
    say: Progress, settings: ImageSettings,
) -> StagedTree:
    """Download the recipe's Debian packages once per Debian base: ``debian`` is the recipe of the mmdebstrap base
    at the root of the image's chain (its suite, sources and architecture) and ``debian_identity`` its local
    identity, ``status`` reads the image's base's ``/var/lib/dpkg/status`` (only when they are not staged yet)."""
    stage = debs_dir(recipe, debian_identity, settings)
    digest = debs_digest(stage)
    if digest is None:
        with exclusive(settings.cache_dir, f"debs-{stage.name}"):
            digest = debs_digest(stage) or _download_debs(recipe, stage, debian, status(), say)
    return StagedTree(stage / "debs", digest)


def _download_debs(
    recipe: HarnessRecipe, stage: Path, debian: dict[str, object], status: bytes, say: Progress
) -> str:
    """``apt-get install --download-only`` in a private apt tree whose dpkg status is the base's: apt resolves the
    packages against what the base has installed, fetches exactly what is missing, and checks every file against
    the suite's signed Release (Debian's archive keyring)."""
    stage.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".staging-", dir=stage.parent))
    apt = tmp / "apt"
    for sub in ("etc/apt/sources.list.d", "etc/apt/preferences.d", "etc/apt/trusted.gpg.d", "lists/partial",
                "archives/partial", "log"):
        (apt / sub).mkdir(parents=True)
    (apt / "status").write_bytes(status)
    suite = str(debian.get("suite"))
    raw_sources = debian.get("sources")
    sources = [str(s) for s in raw_sources] if isinstance(raw_sources, list) else []
    (apt / "etc/apt/sources.list").write_text("\n".join(sources or [f"deb http://deb.debian.org/debian {suite} main"])
                                              + "\n")
    arch = str(debian.get("architecture") or "amd64")
    options = {
        "Dir": str(apt), "Dir::Etc": str(apt / "etc/apt"), "Dir::State::Lists": str(apt / "lists"),
        "Dir::State::status": str(apt / "status"), "Dir::Cache::Archives": str(apt / "archives"),
        "Dir::Log": str(apt / "log"), "Dir::Etc::trusted": str(DEBIAN_KEYRING),
        "Dir::Etc::trustedparts": str(apt / "etc/apt/trusted.gpg.d"), "Debug::NoLocking": "1",
        "APT::Architecture": arch, "APT::Architectures": arch, "APT::Install-Recommends": "false",
        "APT::Install-Suggests": "false",
    }
    if os.geteuid() == 0:  # apt would hand the downloads to _apt, which cannot write in root's cache
        options["APT::Sandbox::User"] = "root"
    apt_get = ["apt-get", *[a for k, v in options.items() for a in ("-o", f"{k}={v}")]]
    say(f"[{recipe.harness}] apt-get install --download-only ({suite}): {' '.join(recipe.debian)}")
    log: list[str] = []
    for argv in ([*apt_get, "update"], [*apt_get, "install", "--download-only", "--yes", *recipe.debian]):
        try:
            proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL)  # --yes: no prompt
        except FileNotFoundError as exc:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ImageBuildError(f"apt-get is not installed on the host; image {recipe.harness} stages its Debian "
                                  "packages with it (and Debian's archive keyring: debian-archive-keyring)") from exc
        log.append(f"$ {' '.join(argv)}\n{proc.stdout}{proc.stderr}")
        if proc.returncode != 0:
            shutil.rmtree(tmp, ignore_errors=True)
            raise ImageBuildError(f"apt-get {argv[-1] if argv[-1] == 'update' else 'install'} for {recipe.harness} "
                                  f"failed (exit {proc.returncode}):\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    debs = tmp / "debs"
    debs.mkdir()
    for deb in sorted((apt / "archives").glob("*.deb")):
        os.replace(deb, debs / deb.name)
    inventory = [[deb.name, sha256_file(deb)] for deb in sorted(debs.iterdir())]
    if not inventory:
        shutil.rmtree(tmp, ignore_errors=True)
        raise ImageBuildError(f"apt-get downloaded nothing for {recipe.harness}: the base already has "
                              f"{' '.join(recipe.debian)}; drop 'debian' from {recipe.directory / 'recipe.json'}")
    digest = hash_json({"format": _DEBS_STAGE_FORMAT, "debs": inventory})
    (tmp / "apt.log").write_text("\n".join(log))
    (tmp / "installed.json").write_text(
        json.dumps({"requested": list(recipe.debian), "suite": suite, "digest": digest, "debs": inventory}, indent=1)
        + "\n"
    )
    shutil.rmtree(apt, ignore_errors=True)
    (tmp / ".complete").write_text(digest + "\n")
    shutil.rmtree(stage, ignore_errors=True)
    os.replace(tmp, stage)
    return digest
