"""The version pins, written in one place: each image's ``recipe.json`` (``npm``: exact ``name@version`` specs,
``wheels``: exact ``name==version`` requirements). Everything else that names a version is derived from it and
checked against it: the image's ``lock.json`` beside it (the pins with their registry integrity hashes, written by
``runner images lock`` and ``bump``, held to the recipes by ``runner images verify`` and a unit test) and any copy of
a pin in the README (rewritten by :func:`rewrite_pin`, held to the recipes by a unit test).

A recipe may hold a pin back on purpose: ``"hold": "reason"`` holds every pin of the recipe, ``"hold":
{"<package>": "reason"}`` one package. A hold is data, never only prose in the recipe's comment: :func:`outdated`
reports held pins with their reason, and a bump skips them.

"Newest" is the newest release that installs where the image installs it (the recipe's own Python and wheel
platforms, every dependency resolved; :meth:`~runner.images.registry.Registry.installs`), not the newest the
registry lists: a listed release that does not install is reported with why (:attr:`Row.uninstallable`), never
offered as a bump.

:func:`outdated` asks a :class:`~runner.images.registry.Registry` per pinned package (a registry that
cannot answer is that row's error), once per package and target and once per release tried however many recipes pin
it, saying which recipe it is asking as it goes (a dry-run install takes seconds); :func:`plan_bump` says what a bump
would rewrite, :func:`rewrite_pin` does it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

from runner.images.errors import ImageBuildError
from runner.images.registry import (
    DEFAULT_TARGET,
    InstallTarget,
    Registry,
    RegistryError,
    Releases,
    newer_than,
    published,
)
from runner.images.shared import load_json
from runner.images.tree import RECIPE, image_dir, image_dirs

_NPM_SPEC = re.compile(r"^(@?[^@\s]+)@([^@\s]+)$")
_WHEEL_SPEC = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([^=\s;]+)$")


@dataclass(frozen=True)
class Pin:
    image: str  # the image (its folder's name)
    kind: str  # "npm" or "pypi"
    package: str
    version: str
    spec: str  # exactly as the recipe writes it
    hold: str | None = None  # why this pin stays behind on purpose
    unavailable: str | None = None  # the recipe's reason why the image cannot be built here
    target: InstallTarget = DEFAULT_TARGET  # where the image installs it (wheel_python, wheel_platforms)


def parse_spec(kind: str, spec: str) -> tuple[str, str]:
    """``(package, version)`` of an exact npm spec (``@scope/name@1.2.3``) or wheel requirement (``name==1.2``)."""
    m = (_NPM_SPEC if kind == "npm" else _WHEEL_SPEC).match(spec.strip())
    if not m:
        form = "name@version" if kind == "npm" else "name==version"
        raise ImageBuildError(f"{spec!r} is not an exact {kind} pin ({form})")
    return m.group(1), m.group(2)


def _holds(data: dict[str, object], where: Path) -> tuple[str | None, dict[str, str]]:
    hold = data.get("hold")
    if hold is None:
        return None, {}
    if isinstance(hold, str) and hold.strip():
        return hold.strip(), {}
    if isinstance(hold, dict) and all(isinstance(v, str) and v.strip() for v in hold.values()):
        return None, {str(k): v.strip() for k, v in hold.items()}
    raise ImageBuildError(f'{where}: \'hold\' must be a reason string or {{"<package>": "<reason>"}}')


def recipe_pins(image: str, root: Path) -> list[Pin]:
    """The pins image ``image``'s ``recipe.json`` writes, in its order (npm specs, then wheels)."""
    where = image_dir(image, root) / RECIPE
    data = load_json(where)
    every, per = _holds(data, where)
    platforms = data.get("wheel_platforms")
    target = InstallTarget(str(data.get("wheel_python", DEFAULT_TARGET.python)),
                           tuple(map(str, platforms)) if isinstance(platforms, list) else DEFAULT_TARGET.platforms)
    pins: list[Pin] = []
    for kind, field in (("npm", "npm"), ("pypi", "wheels")):
        specs = data.get(field) or []
        if not isinstance(specs, list):
            raise ImageBuildError(f"{where}: {field!r} must be a list of exact pins, not {specs!r}")
        for spec in specs:
            package, version = parse_spec(kind, str(spec))
            pins.append(Pin(image, kind, package, version, str(spec), per.get(package, every),
                            str(data["unavailable"]) if data.get("unavailable") else None, target))
    unknown = set(per) - {p.package for p in pins}
    if unknown:
        raise ImageBuildError(f"{where}: 'hold' names {sorted(unknown)}, which the recipe does not pin")
    return pins


def pinned_images(root: Path) -> list[str]:
    """Every image whose recipe pins a package (harnesses, layers and unavailable ones alike)."""
    return [name for name in image_dirs(root) if recipe_pins(name, root)]


# ----------------------------------------------------------------------------------------------- the report


@dataclass(frozen=True)
class Row:
    image: str
    kind: str
    package: str
    pinned: str
    newest: str | None = None  # the newest installable version on the registry
    behind: int | None = None  # how many releases newer than the pin, up to the newest
    days: int | None = None  # days between the pin's release and the newest's (None: no dates)
    pinned_date: str | None = None
    newest_date: str | None = None
    hold: str | None = None
    unavailable: str | None = None
    error: str | None = None
    uninstallable: tuple[str, ...] = ()  # newer listed releases that do not install here, "<version>: <why>"

    @property
    def outdated(self) -> bool:
        return bool(self.behind)

    @property
    def actionable(self) -> bool:
        """Behind, and a bump would move it: not held, and its image can be built here."""
        return self.outdated and not self.hold and not self.unavailable

    def refusals(self) -> list[tuple[str, str]]:
        """``(version, why)`` per newer listed release a dry-run install refused, newest first, the reason on one
        line (what the client said last, its whitespace runs folded)."""
        pairs = (entry.partition(": ") for entry in self.uninstallable)
        return [(version, " ".join(why.split())) for version, _, why in pairs]

    def to_json(self) -> dict[str, object]:
        body: dict[str, object] = asdict(self)
        body["pinnedDate"], body["newestDate"] = body.pop("pinned_date"), body.pop("newest_date")
        body["uninstallable"] = list(self.uninstallable)
        return {**body, "outdated": self.outdated}


def check(pin: Pin, registry: Registry, progress: Callable[[str], None] | None = None) -> Row:
    """The pin's row: the newest release that installs for the image (newest first, each newer listed release is
    tried until one installs, and nothing older is tried; those that do not install are the row's
    ``uninstallable``), how many releases it is ahead of the pin, and the days between their releases (None when a
    date is missing, or the newest was published before the pin: another line, as Node 26 before Node 22's latest
    patch). ``progress`` hears each dry-run install before it runs."""
    base = Row(pin.image, pin.kind, pin.package, pin.version, hold=pin.hold, unavailable=pin.unavailable)
    try:
        found = registry.releases(pin.kind, pin.package, pin.target)
        ahead, newest = newer_than(pin.version, found)
        refused: list[str] = []
        while ahead:
            if progress:
                progress(f"{pin.image}: dry-run install of {pin.package} {ahead[-1].version}")
            why = registry.installs(pin.kind, pin.package, ahead[-1].version, pin.target)
            if why is None:
                break
            refused.append(f"{ahead.pop().version}: {why}")
    except RegistryError as exc:
        return Row(**{**asdict(base), "error": str(exc)})
    if newest is None:
        return Row(**{**asdict(base), "error": f"the registry lists no installable release of {pin.package}"})
    newest = ahead[-1] if ahead else newest
    base = Row(**{**asdict(base), "uninstallable": tuple(refused)})
    mine, theirs = published(found, pin.version), newest.published
    days = (theirs - mine).days if mine and theirs and ahead else (0 if not ahead else None)
    days = None if days is not None and days < 0 else days
    return Row(**{**asdict(base), "newest": newest.version if ahead else pin.version, "behind": len(ahead),
                  "days": days, "pinned_date": mine.date().isoformat() if mine else None,
                  "newest_date": theirs.date().isoformat() if theirs and ahead else None})


class _Remembered:
    """A registry asked once per question: two recipes pinning one package (Pi's two images, the reference's and the
    bases' ``mcp``) cost one listing and one dry-run per release. An error is not remembered (asked again, it may
    answer)."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self.listed: dict[tuple[str, str, InstallTarget], Releases] = {}
        self.tried: dict[tuple[str, str, str, InstallTarget], str | None] = {}

    def releases(self, kind: str, package: str, target: InstallTarget = DEFAULT_TARGET) -> Releases:
        key = (kind, package, target)
        if key not in self.listed:
            self.listed[key] = self.registry.releases(kind, package, target)
        return self.listed[key]

    def installs(self, kind: str, package: str, version: str, target: InstallTarget = DEFAULT_TARGET) -> str | None:
        key = (kind, package, version, target)
        if key not in self.tried:
            self.tried[key] = self.registry.installs(kind, package, version, target)
        return self.tried[key]


def outdated(registry: Registry, root: Path, images: list[str] | None = None,
             progress: Callable[[str], None] | None = None) -> list[Row]:
    """One row per pinned package of each image (every pinned image by default); ``progress`` hears each recipe's
    package as it is asked about, and each dry-run install."""
    remembered = _Remembered(registry)
    rows: list[Row] = []
    for image in images or pinned_images(root):
        for pin in recipe_pins(image, root):
            if progress:
                progress(f"{image}: asking {'npm' if pin.kind == 'npm' else 'PyPI'} about {pin.package} "
                         f"(pinned {pin.version})")
            rows.append(check(pin, remembered, progress))
    return rows


# ------------------------------------------------------------------------------------------------- the bump


@dataclass(frozen=True)
class Change:
    image: str
    package: str
    old: str
    new: str


def plan_bump(rows: list[Row], to: str | None = None) -> tuple[list[Change], list[Row]]:
    """What a bump rewrites (every row behind, or every row to ``to``), and the held rows it skips."""
    changes: list[Change] = []
    held: list[Row] = []
    for row in rows:
        target = to or (row.newest if row.outdated else None)
        if target is None or target == row.pinned or (row.error and not to):
            continue
        if row.hold:
            held.append(row)
            continue
        changes.append(Change(row.image, row.package, row.pinned, target))
    return changes, held


def _spec(kind: str, package: str, version: str) -> str:
    return f"{package}@{version}" if kind == "npm" else f"{package}=={version}"


def rewrite_pin(change: Change, root: Path) -> list[Path]:
    """Write ``change`` into the recipe (the one place), keeping its formatting, then into the README's copy of
    it. Returns the files rewritten."""
    recipe = image_dir(change.image, root) / RECIPE
    pin = next((p for p in recipe_pins(change.image, root) if p.package == change.package), None)
    if pin is None:
        raise ImageBuildError(f"{recipe} does not pin {change.package}")
    old, new = json.dumps(pin.spec), json.dumps(_spec(pin.kind, change.package, change.new))
    text = recipe.read_text()
    if text.count(old) != 1:
        raise ImageBuildError(f"{recipe}: cannot find {old} exactly once to rewrite it")
    recipe.write_text(text.replace(old, new))
    load_json(recipe)  # still a recipe
    written = [recipe]
    readme = root / "README.md"
    if readme.is_file():
        before = readme.read_text()
        after = before.replace(f"`{pin.spec}`", f"`{_spec(pin.kind, change.package, change.new)}`")
        if after != before:
            readme.write_text(after)
            written.append(readme)
    return written
