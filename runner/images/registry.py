"""What a package registry says about a package: its releases, in order, with their dates.

Behind a small interface (:class:`Registry`) so the pin report can be tested on a fake registry. The real ones
ask the ordinary clients: ``npm view <pkg> versions time dist-tags --json`` for npm (release dates from the
registry's ``time`` map; ``dist-tags.latest`` is what ``npm install <pkg>`` installs, so nothing newer counts as
installable), and ``pip index versions <pkg> --json`` for PyPI wheels, asked for the image's own Python and wheel
platforms (an :class:`InstallTarget`, the recipe's ``wheel_python``/``wheel_platforms``: under runner's own Python a
package that needs a newer one lists nothing; pip reports no release dates: those rows say so).

A listed release may still not install here: :meth:`ClientRegistry.installs` says whether one resolves with its
dependencies for the target. For PyPI that is ``pip install --dry-run`` for the image's Python and platforms (a
release may pin a dependency the index lacks). For npm it is an install with no scripts into a scratch prefix, then
every linux-x64 platform package among its optional dependencies present: npm skips an unpublished optional
dependency without a word, so the install "succeeds" and the image's postinstall fails later.

:meth:`ClientRegistry.integrity` is what an image's ``lock.json`` records per pin: npm's ``dist.integrity`` for
that release, and for a wheel the ``sha256:<hex>`` of the file pip downloads for the image's Python and platforms
(the form ``pip install --require-hashes`` takes). A registry that cannot be reached raises :class:`RegistryError`,
which the report turns into one row's error, never a crash.

Versions are ordered by their numeric release parts, then a release after its pre-releases (npm's ``1.2.0-rc.1``,
PyPI's ``1.2.0rc1``/``.dev``); a pre-release is only a candidate when the pin itself is one (``dsh`` publishes
release candidates only), the way ``pip list --outdated`` leaves them out unless asked.
"""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Protocol

_NUM = re.compile(r"^v?(\d+(?:\.\d+)*)(.*)$")
_PEP440_PRE = re.compile(r"(a|b|rc|c|alpha|beta|pre|preview|dev)\d*", re.I)


class RegistryError(Exception):
    """The registry could not be asked, or its answer could not be read (the message says which)."""


@dataclass(frozen=True)
class Release:
    version: str
    published: datetime | None = None


@dataclass(frozen=True)
class Releases:
    """Every published version of one package (any order), and the one its registry installs by default."""

    releases: tuple[Release, ...]
    latest: str | None = None  # npm's dist-tags.latest; None where the registry has no such tag


@dataclass(frozen=True)
class InstallTarget:
    """Where a pin is installed: the image's Python and wheel platforms (PyPI pins; npm ones are linux x64)."""

    python: str = "3.11"
    platforms: tuple[str, ...] = ("manylinux_2_17_x86_64", "manylinux2014_x86_64")

    def pip_args(self) -> list[str]:
        """pip's options that resolve for this target rather than for the interpreter pip runs under."""
        return ["--only-binary=:all:", "--implementation", "cp", "--python-version", self.python,
                *[arg for platform in self.platforms for arg in ("--platform", platform)]]


DEFAULT_TARGET = InstallTarget()


class Registry(Protocol):
    def releases(self, kind: str, package: str, target: InstallTarget = DEFAULT_TARGET) -> Releases:
        """``kind`` is ``npm`` or ``pypi``. Raises :class:`RegistryError` when the registry cannot answer."""
        ...

    def installs(self, kind: str, package: str, version: str, target: InstallTarget = DEFAULT_TARGET) -> str | None:
        """None when ``package`` at ``version`` installs for ``target`` with its dependencies, else why not (the
        client's own words). Raises :class:`RegistryError` when the registry cannot answer."""
        ...


def version_key(version: str) -> tuple[tuple[int, ...], int, tuple[tuple[int, int | str], ...]]:
    """A sort key: numeric parts, then 1 for a release and 0 for a pre-release, then the rest token by token
    (numbers as numbers: ``rc.10`` after ``rc.9``)."""
    m = _NUM.match(version.strip())
    if not m:
        return ((), 0, ((1, version),))
    nums = tuple(int(p) for p in m.group(1).split("."))
    nums = nums + (0,) * (4 - len(nums)) if len(nums) < 4 else nums
    rest = tuple((0, int(t)) if t.isdigit() else (1, t) for t in re.findall(r"\d+|[A-Za-z]+", m.group(2)))
    return (nums, 0 if is_prerelease(version) else 1, rest)


def is_prerelease(version: str) -> bool:
    m = _NUM.match(version.strip())
    if not m:
        return True
    rest = m.group(2).split("+", 1)[0]
    if not rest:
        return False
    if rest.startswith("-"):  # semver: anything after "-" (npm, including Codex's per-platform "-linux-x64")
        return True
    if rest.startswith(".post") or rest.startswith("post"):
        return False
    return bool(_PEP440_PRE.match(rest.lstrip(".-_")))


def newer_than(pinned: str, found: Releases) -> tuple[list[Release], Release | None]:
    """The candidates newer than ``pinned`` (oldest first), up to the newest installable one, and that one.

    Pre-releases count only when the pin is a pre-release; with npm's ``latest`` tag nothing above it counts.
    """
    pre = is_prerelease(pinned)
    ceiling = version_key(found.latest) if found.latest and not pre else None
    ordered = sorted(
        (r for r in found.releases if pre or not is_prerelease(r.version)), key=lambda r: version_key(r.version)
    )
    if ceiling is not None:
        ordered = [r for r in ordered if version_key(r.version) <= ceiling]
    pin_key = version_key(pinned)
    ahead = [r for r in ordered if version_key(r.version) > pin_key]
    return ahead, (ordered[-1] if ordered else None)


def published(found: Releases, version: str) -> datetime | None:
    return next((r.published for r in found.releases if r.version == version), None)


# --------------------------------------------------------------------------------------------- real clients


def _run(argv: list[str], what: str, timeout: float) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout)
    except FileNotFoundError as exc:
        raise RegistryError(f"{argv[0]} is not installed: cannot ask about {what}") from exc
    except subprocess.TimeoutExpired as exc:
        raise RegistryError(f"no answer about {what} within {timeout:.0f} s") from exc
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()
        raise RegistryError(f"{' '.join(argv[:3])} failed for {what} (exit {proc.returncode}): "
                            + (tail[-1] if tail else "no output"))
    return proc.stdout


def _refusal(argv: list[str], what: str, timeout: float) -> str | None:
    """Run an install the registry may refuse: None when it succeeds, else the client's last error line."""
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=timeout)
    except FileNotFoundError as exc:
        raise RegistryError(f"{argv[0]} is not installed: cannot install {what}") from exc
    except subprocess.TimeoutExpired as exc:
        raise RegistryError(f"no answer installing {what} within {timeout:.0f} s") from exc
    if proc.returncode == 0:
        return None
    said = (proc.stderr or proc.stdout).strip().splitlines()
    pip = [line.strip() for line in said if line.startswith("ERROR")]
    npm = [line.removeprefix("npm error").strip() for line in said if line.startswith("npm error")]
    npm = [line for line in npm if line and not line.startswith("A complete log of this run")]
    if pip:
        return pip[-1]
    if npm:
        return "npm error " + "; ".join(npm[:2])  # its code, then what it says about it (ETARGET, notarget ...)
    return f"the install of {what} exited {proc.returncode}"


def _parse_time(value: object) -> datetime | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def parse_npm_view(text: str, package: str) -> Releases:
    """The JSON of ``npm view <pkg> versions time dist-tags --json``."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RegistryError(f"npm view {package}: not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise RegistryError(f"npm view {package}: expected an object")
    versions = data.get("versions") or []
    versions = [versions] if isinstance(versions, str) else versions
    times = data.get("time") or {}
    tags = data.get("dist-tags") or {}
    return Releases(tuple(Release(str(v), _parse_time(times.get(v))) for v in versions),
                    str(tags["latest"]) if isinstance(tags, dict) and tags.get("latest") else None)


def parse_pip_index(text: str, package: str) -> Releases:
    """The JSON of ``pip index versions <pkg> --json`` (no dates)."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise RegistryError(f"pip index versions {package}: not JSON ({exc})") from exc
    versions = data.get("versions") if isinstance(data, dict) else None
    if not isinstance(versions, list):
        raise RegistryError(f"pip index versions {package}: no versions list")
    return Releases(tuple(Release(str(v)) for v in versions))


def parse_npm_integrity(text: str, spec: str) -> str:
    """The JSON of ``npm view <name>@<version> dist.integrity --json``: one SRI string."""
    try:
        value = json.loads(text) if text.strip() else None
    except ValueError as exc:
        raise RegistryError(f"npm view {spec} dist.integrity: not JSON ({exc})") from exc
    if not isinstance(value, str) or not re.fullmatch(r"sha(256|384|512)-[A-Za-z0-9+/]+=*", value):
        raise RegistryError(f"npm view {spec} dist.integrity: the registry gave no integrity hash ({value!r})")
    return value


@dataclass(frozen=True)
class ClientRegistry:
    """npm and PyPI through their ordinary clients (``npm``, and this interpreter's ``pip``)."""

    timeout: float = 60.0

    def releases(self, kind: str, package: str, target: InstallTarget = DEFAULT_TARGET) -> Releases:
        if kind == "npm":
            argv = ["npm", "view", package, "versions", "time", "dist-tags", "--json", "--no-update-notifier"]
            return parse_npm_view(_run(argv, f"npm package {package}", self.timeout), package)
        if kind == "pypi":
            argv = [sys.executable, "-m", "pip", "index", "versions", package, "--json", *target.pip_args(),
                    "--disable-pip-version-check", "--no-input"]
            return parse_pip_index(_run(argv, f"PyPI package {package}", self.timeout), package)
        raise RegistryError(f"no registry client for {kind!r} packages")

    def installs(self, kind: str, package: str, version: str, target: InstallTarget = DEFAULT_TARGET) -> str | None:
        with tempfile.TemporaryDirectory(prefix="runner-installs-") as tmp:
            if kind == "pypi":
                spec = f"{package}=={version}"
                argv = [sys.executable, "-m", "pip", "install", "--dry-run", "--ignore-installed", "--target", tmp,
                        *target.pip_args(), "--disable-pip-version-check", "--no-input", "--quiet", spec]
                return _refusal(argv, f"PyPI package {spec}", self.timeout)
            if kind == "npm":
                spec = f"{package}@{version}"
                argv = ["npm", "install", "--ignore-scripts", "--no-save", "--no-audit", "--no-fund",
                        "--no-update-notifier", "--prefix", tmp, spec]
                refused = _refusal(argv, f"npm package {spec}", self.timeout)
                return refused or self._platform_package_missing(Path(tmp) / "node_modules", package)
        raise RegistryError(f"no registry client for {kind!r} packages")

    def _platform_package_missing(self, modules: Path, package: str) -> str | None:
        """Why an npm install that "succeeded" is no install here: an optional dependency built for linux x64
        (glibc) that npm skipped because the registry does not publish it (Kilo 7.8.1's ``@kilocode/cli-linux-x64``).
        An optional dependency the registry does not know at all is not a platform package of ours to miss."""
        try:
            manifest = json.loads((modules / package / "package.json").read_text())
        except (OSError, ValueError) as exc:
            raise RegistryError(f"npm installed {package} without a readable package.json ({exc})") from exc
        optional = manifest.get("optionalDependencies") if isinstance(manifest, dict) else None
        for name, wanted in sorted(optional.items() if isinstance(optional, dict) else []):
            if (modules / name).is_dir():
                continue
            argv = ["npm", "view", name, "os", "cpu", "libc", "--json", "--no-update-notifier"]
            try:
                meta = json.loads(_run(argv, f"npm package {name}", self.timeout) or "{}")
            except (RegistryError, ValueError):
                continue
            if not isinstance(meta, dict):
                continue
            oses, cpus, libcs = (meta.get(key) or [] for key in ("os", "cpu", "libc"))
            if "linux" in oses and "x64" in cpus and "musl" not in libcs:
                return f"its linux-x64 platform package {name}@{wanted} is not published"
        return None

    def integrity(self, kind: str, package: str, version: str, python: str = "3.11",
                  platforms: tuple[str, ...] = ()) -> str:
        """The registry's hash of ``package`` at ``version`` (see the module's docstring)."""
        if kind == "npm":
            spec = f"{package}@{version}"
            argv = ["npm", "view", spec, "dist.integrity", "--json", "--no-update-notifier"]
            return parse_npm_integrity(_run(argv, f"npm package {spec}", self.timeout), spec)
        if kind == "pypi":
            spec = f"{package}=={version}"
            with tempfile.TemporaryDirectory(prefix="runner-integrity-") as tmp:
                argv = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
                        "--disable-pip-version-check", "--no-input", "--implementation", "cp", "--python-version",
                        python, *[a for p in platforms for a in ("--platform", p)], "-d", tmp, spec]
                _run(argv, f"PyPI package {spec}", self.timeout)
                files = sorted(Path(tmp).glob("*.whl"))
                if len(files) != 1:
                    raise RegistryError(f"pip download {spec} gave {len(files)} wheels, expected one")
                return "sha256:" + hashlib.sha256(files[0].read_bytes()).hexdigest()
        raise RegistryError(f"no registry client for {kind!r} packages")

