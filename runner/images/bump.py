"""``runner images bump``: rewrite the pins that are behind in their recipes, rebuild each image, and say what
changed (old → new, the image id, the CLI's own version output). The images' ``lock.json`` are brought to the new pins
(their registry's integrity hashes) before the build, the one writer of the lock besides ``runner images lock``.

A held pin (``"hold"`` in the recipe) and an image whose recipe is ``unavailable`` are skipped with their reason, and
so is a ``--to`` version that does not install for the image (the registry's refusal: the same dry-run install that
makes "newest" the newest that installs).
A build that fails puts the recipe, the README's copy of the pin and the lock back as they were, so the tree never
names a pin that was not built, and the other images are still bumped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from runner.errors import RunnerError
from runner.images.lock import ImageRecord
from runner.images.pins import Change, Row, outdated, plan_bump, rewrite_pin
from runner.images.recipes import load_harness_recipe
from runner.images.registry import Registry, RegistryError
from runner.images.tree import LOCK, RECIPE, image_dirs


@dataclass(frozen=True)
class Bumped:
    image: str
    changes: tuple[Change, ...]
    record: ImageRecord


@dataclass(frozen=True)
class Skipped:
    image: str
    package: str
    version: str
    reason: str


@dataclass(frozen=True)
class BumpPlan:
    changes: dict[str, list[Change]]  # per image, in recipe order
    skipped: list[Skipped]
    errors: list[Row]  # rows whose registry could not be asked


def plan(registry: Registry, images: list[str], to: str | None, root: Path) -> BumpPlan:
    """What a bump of ``images`` rewrites. With ``to``, only each image's CLI package (its ``cli_package``, or its
    only pin) is set to that version."""
    changes: dict[str, list[Change]] = {}
    skipped: list[Skipped] = []
    errors: list[Row] = []
    for image in images:
        recipe = load_harness_recipe(image, root)
        rows = outdated(registry, root, [image]) if to is None else _cli_rows(image, recipe.cli_package, root)
        mine, held = plan_bump(rows, to)
        if to is not None:
            mine, refused = _installable(registry, image, mine, root)
            skipped += refused
        errors += [r for r in rows if r.error and to is None]
        skipped += [Skipped(r.image, r.package, r.pinned, f"held: {r.hold}") for r in held]
        if mine and recipe.unavailable:
            skipped += [Skipped(c.image, c.package, c.old, f"unavailable: {recipe.unavailable}") for c in mine]
        elif mine:
            changes[image] = mine
    return BumpPlan(changes, skipped, errors)


def _installable(registry: Registry, image: str, changes: list[Change], root: Path) -> tuple[list[Change],
                                                                                             list[Skipped]]:
    """The changes to versions that install for the image, and the others skipped with the registry's refusal."""
    from runner.images.pins import recipe_pins

    pins = {p.package: p for p in recipe_pins(image, root)}
    keep: list[Change] = []
    refused: list[Skipped] = []
    for change in changes:
        pin = pins[change.package]
        try:
            why = registry.installs(pin.kind, pin.package, change.new, pin.target)
        except RegistryError as exc:
            why = str(exc)
        if why:
            refused.append(Skipped(image, change.package, change.old, f"{change.new} does not install: {why}"))
        else:
            keep.append(change)
    return keep, refused


def _cli_rows(image: str, cli_package: str | None, root: Path) -> list[Row]:
    from runner.images.pins import recipe_pins

    pins = recipe_pins(image, root)
    chosen = [p for p in pins if p.package == cli_package] or (pins if len(pins) == 1 else [])
    return [Row(p.image, p.kind, p.package, p.version, hold=p.hold) for p in chosen]


@dataclass(frozen=True)
class Failed:
    image: str
    changes: tuple[Change, ...]
    error: str


def apply(
    bump_plan: BumpPlan,
    build: Callable[[str], ImageRecord],
    root: Path,
    relock: Callable[[], object] | None = None,
) -> tuple[list[Bumped], list[Failed]]:
    """Rewrite each image's pins, bring the lock to them with ``relock`` (``update_lock``), and build it with
    ``build`` (``ensure_image``). An image whose lock or build fails is put back as it was and reported; the others
    go on. Anything but a :class:`RunnerError` (an interrupt) undoes the image in hand and propagates."""
    done: list[Bumped] = []
    failed: list[Failed] = []
    for image, changes in bump_plan.changes.items():
        saved: dict[Path, str] = {p: p.read_text() for p in _touched(root)}
        try:
            for change in changes:
                rewrite_pin(change, root)
            if relock is not None:
                relock()
            record = build(image)
        except RunnerError as exc:
            _restore(saved)
            failed.append(Failed(image, tuple(changes), str(exc)))
            continue
        except BaseException:
            _restore(saved)
            raise
        done.append(Bumped(image, tuple(changes), record))
    return done, failed


def _restore(saved: dict[Path, str]) -> None:
    for path, text in saved.items():
        if path.read_text() != text:
            path.write_text(text)


def _touched(root: Path) -> list[Path]:
    """What a bump may rewrite: the README's copy of the pins, and each image folder's recipe and lock."""
    folders = image_dirs(root).values()
    return [p for p in (root / "README.md", *(d / f for d in folders for f in (RECIPE, LOCK))) if p.is_file()]
