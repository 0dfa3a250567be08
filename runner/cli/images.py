"""``runner images build|list|verify|lock|cache-key|save|load|outdated|bump``: the pinned images, built offline (no
registry), their lock (committed: pins and recipe hashes; local: what this machine built), the archive CI caches
them in, and their pins against the package registries."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from runner.cli.render import err, escape, fail, listing, out, print_json, print_table, reported, say, warn
from runner.cli.shared import connect_engine, connect_sandboxes
from runner.errors import Exit

if TYPE_CHECKING:
    from runner.images.pins import Row as Outdated

app = typer.Typer(help="Build, list and verify the pinned images (no registry needed).", no_args_is_help=True)


@app.command("build")
def images_build(
    harness: Annotated[list[str] | None, typer.Option(help="Build this harness's image (repeatable).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Build every harness image that can be built here.")] = False,
) -> None:
    """Build (or reuse from cache) the pinned images, offline; what is built here is recorded under the runner cache
    ($RUNNER_CACHE_DIR/builds), never in an image's lock.json."""
    from runner.cli.settings import image_settings
    from runner.images import buildable_harnesses, source_root, unavailable_images
    settings = image_settings()
    root = source_root(settings)
    wanted = buildable_harnesses(root) if all_ or not harness else harness
    unavailable = unavailable_images(root)
    for name, reason in sorted(unavailable.items()):
        if all_ or not harness or name in wanted:
            err().print(f"[yellow]{name}: unavailable[/] — {escape(reason)}", highlight=False)
    wanted = [name for name in wanted if name not in unavailable]
    backend = connect_sandboxes()
    with reported():
        for name in wanted:
            started = time.monotonic()
            record = backend.prepare_image(name, settings, progress=say)
            out().print(f"{name}: {record.image_id[:19]}  {record.version_output}  ({time.monotonic() - started:.1f}s)",
                        markup=False, highlight=False)


@app.command("list")
def images_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Show the lock: per image, its pins, base and recipe hash, and the newest image built here for it (if any)."""
    from dataclasses import asdict

    from runner.cli.settings import image_settings
    from runner.images import read_build, read_lock, source_root

    settings = image_settings()
    with reported(as_json):
        lock = read_lock(source_root(settings))
    built = {name: read_build(name, settings) for name, entry in lock.items() if entry.kind == "harness"}
    if as_json:
        print_json(json.dumps({name: {**entry.to_json(), "built": asdict(rec) if (rec := built.get(name)) else None}
                               for name, entry in sorted(lock.items())}, indent=2))
        return
    # the pins last: the one field of no fixed length (an image may pin several packages)
    table = listing("image", "kind", "recipe", "base", "built here (newest)", "pinned")
    for name, entry in sorted(lock.items()):
        pinned = ", ".join(f"{p.package}@{p.version}" for p in entry.pins) or entry.suite or "-"
        rec = built.get(name)
        here = f"{rec.image_id[:19]} {rec.version_output or ''}".strip() if rec else "-"
        table.add_row(name, entry.kind, entry.recipe_hash[:12], entry.base or "-", escape(here), escape(pinned))
    print_table(table)


@app.command("verify")
def images_verify(
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object: stale and local findings.")] = False,
) -> None:
    """Check each image's lock.json against the tree (a changed pin or recipe: the lock is stale, exit 1), then what
    this machine built (not built yet, or built from other CA certificates: local, said but exit 0)."""
    from runner.cli.settings import engine_environ, image_settings
    from runner.engine import EngineError, connect
    from runner.images import lock_files, source_root, verify_lock

    settings = image_settings()

    note = None
    try:
        client = connect(engine_environ())
    except EngineError as exc:
        client, note = None, f"no engine, so what is built here was not checked: {exc}"
    with reported(as_json):
        root = source_root(settings)
        found = verify_lock(client, settings)
    stale = [f for f in found if f.kind == "stale"]
    local = [f for f in found if f.kind == "local"]
    if as_json:
        print_json(json.dumps({"lock": [str(p) for p in lock_files(root)], "current": not stale,
                               "stale": [{"image": f.image, "message": f.message} for f in stale],
                               "local": [{"image": f.image, "message": f.message} for f in local],
                               "engine": note is None, "note": note}, indent=1))
    else:
        for f in stale:
            err().print(f"[red]✗ stale[/] {escape(str(f))}", highlight=False)
        for f in local:
            err().print(f"[dim]local[/] {escape(str(f))}", highlight=False)
        if note:
            warn(note)
        if not stale:
            out().print("the images' lock.json describe the tree" + (
                f" ({len(local)} local difference(s): this machine only, not a stale lock)" if local else ""),
                highlight=False)
    if stale:
        raise typer.Exit(int(Exit.VERDICT))


@app.command("lock")
def images_lock() -> None:
    """Write each image folder's lock.json from the tree: the image's pins with their registry's integrity hash
    (asked only for a pin the lock does not already hold at that version) and its recipe hash. The same on any
    machine."""
    from runner.cli.settings import image_settings
    from runner.images import source_root, update_lock
    from runner.images.lock import registry_integrity
    from runner.images.tree import shown

    with reported():
        root = source_root(image_settings())
        changed = update_lock(registry_integrity(), root)
    for path in changed:
        out().print(f"{shown(path, root)} written", highlight=False)
    if not changed:
        out().print("every image's lock.json unchanged", highlight=False)


@app.command("cache-key")
def images_cache_key(
    harness: Annotated[str, typer.Option(help="The image whose key to print (e.g. codex).")],
    as_json: Annotated[bool, typer.Option("--json", help="The key and every input it covers.")] = False,
) -> None:
    """Print a cache key for the image's saved archive, from its declared inputs only (no engine, no staging).

    Stable across machines and checkouts; CI caches `runner images save` under it.
    """
    from runner.cli.settings import image_settings
    from runner.images import cache_key, cache_key_inputs

    settings = image_settings()
    with reported(as_json):
        key = cache_key(harness, settings)
        inputs = cache_key_inputs(harness, settings) if as_json else None
    print_json(json.dumps({"harness": harness, "key": key, "inputs": inputs}, indent=1) if as_json else key)


@app.command("save")
def images_save(
    harness: Annotated[list[str], typer.Option(help="Save this image and its bases (repeatable).")],
    to: Annotated[Path | None, typer.Option(help="The archive (one --harness only; default "
                                                 "$RUNNER_CACHE_DIR/saved/<harness>.tar).")] = None,
) -> None:
    """docker save the images and every base they stand on, for a CI cache (building them first if needed)."""
    from runner.cli.settings import image_settings
    from runner.images import save_images

    if to is not None and len(harness) != 1:
        fail(Exit.USAGE, "--to takes exactly one --harness")
    client = connect_engine()
    with reported():
        for name in harness:
            saved = save_images(client, name, image_settings(), to, progress=say)
            out().print(f"{name}: saved {' '.join(saved.refs)} to {saved.path} "
                        f"({saved.bytes / 1e6:.0f} MB, {saved.seconds:.1f}s)", markup=False, highlight=False)


@app.command("load")
def images_load(
    harness: Annotated[list[str], typer.Option(help="Load this image's saved archive (repeatable).")],
    from_: Annotated[Path | None, typer.Option("--from", help="The archive (one --harness only).")] = None,
) -> None:
    """docker load saved archives; a missing or corrupt one only says so (the next build then builds)."""
    from runner.cli.settings import image_settings
    from runner.images import load_images

    if from_ is not None and len(harness) != 1:
        fail(Exit.USAGE, "--from takes exactly one --harness")
    client = connect_engine()
    with reported():
        for name in harness:
            result = load_images(client, name, image_settings(), from_)
            if result.status == "loaded":
                out().print(f"{name}: {result.message} in {result.seconds:.1f}s", markup=False, highlight=False)
            elif result.status == "absent":
                out().print(f"{name}: no saved image ({result.path})", markup=False, highlight=False)
            else:
                warn(f"{name}: ignoring a corrupt archive: {result.message}")


@app.command("outdated")
def images_outdated(
    harness: Annotated[list[str] | None, typer.Option(help="Only this image (repeatable); default every pinned "
                                                           "image.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="One JSON object: {\"images\": [rows]}.")] = False,
) -> None:
    """Like `pip list --outdated`: per image, each pinned package, the newest installable release on its registry,
    and how many releases and days behind the pin is. Each newer listed release a dry-run install refused is shown
    under its pin with why; a held pin shows its reason; a registry that cannot be reached is that row's error.
    Progress (which recipe is being asked) goes to stderr. Always exits 0: it is a report."""
    from runner.cli.settings import image_settings
    from runner.images import source_root
    from runner.images.pins import outdated
    from runner.images.registry import ClientRegistry

    with reported(as_json):
        rows = outdated(ClientRegistry(), source_root(image_settings()), list(harness) if harness else None,
                        progress=say)
    if as_json:
        print_json(json.dumps({"images": [r.to_json() for r in rows],
                               "behind": sum(1 for r in rows if r.actionable)}, indent=1))
        return
    print_outdated(rows)


def print_outdated(rows: list[Outdated]) -> None:
    """One line a pin, its note (the free text) last, then a line per newer release a dry-run install refused (its
    image and package again, so a grep for either finds it; the version under "newest", the client's one-line reason
    as the note), then what a bump would do."""
    table = listing("image", "package", "pinned", "newest", "behind", "days", "note")
    for r in rows:
        note = ((r.error and f"[red]error:[/] {escape(r.error)}") or (r.hold and f"held: {escape(r.hold)}")
                or (r.unavailable and f"unavailable: {escape(r.unavailable[:80])}") or "")
        table.add_row(r.image, escape(r.package), escape(r.pinned), escape(r.newest or "?"),
                      "?" if r.behind is None else str(r.behind), "?" if r.days is None else str(r.days), note)
        for version, why in r.refusals():
            table.add_row(r.image, escape(r.package), "", escape(version), "", "",
                          f"refused: {escape(why)}")
    print_table(table)
    behind = [r for r in rows if r.actionable]
    kept = [r for r in rows if r.outdated and not r.actionable]
    refused = sum(len(r.uninstallable) for r in rows)
    out().print((f"{len(behind)} pin(s) behind" if behind else "no pin a bump would move is behind")
                + (f"; {len(kept)} behind but held or unavailable" if kept else "")
                + (f"; {refused} newer release(s) refused by a dry-run install" if refused else ""), highlight=False)


@app.command("bump")
def images_bump(
    harness: Annotated[list[str] | None, typer.Option(help="Bump this image's pins (repeatable).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Bump every pinned image.")] = False,
    to: Annotated[str | None, typer.Option(help="Set the image's CLI package to this version (one --harness "
                                                "only) instead of its newest release.")] = None,
) -> None:
    """Rewrite each pin that is behind in its recipe (the one place a version is written, plus the README's
    copy and the image's lock.json), rebuild the image, and print what changed. Held pins are skipped with their
    reason."""
    from runner.cli.settings import image_settings
    from runner.images import source_root, update_lock
    from runner.images.bump import apply, plan
    from runner.images.lock import registry_integrity
    from runner.images.pins import pinned_images
    from runner.images.registry import ClientRegistry

    if all_ == bool(harness):
        fail(Exit.USAGE, "give --harness ID (repeatable) or --all")
    if to is not None and (all_ or len(harness or []) != 1):
        fail(Exit.USAGE, "--to takes exactly one --harness")
    settings = image_settings()
    with reported():
        root = source_root(settings)
        images = pinned_images(root) if all_ else list(harness or [])
        todo = plan(ClientRegistry(), images, to, root)
    for row in todo.errors:
        warn(f"{row.image}: {row.package}: not bumped: {row.error}")
    for skip in todo.skipped:
        out().print(f"{skip.image}: {skip.package}@{skip.version} skipped ({skip.reason})", markup=False,
                    highlight=False)
    if not todo.changes:
        out().print("nothing to bump", highlight=False)
        return
    backend = connect_sandboxes()
    with reported():
        resolve = registry_integrity()
        done, failed = apply(todo, lambda image: backend.prepare_image(image, settings, progress=say), root,
                             relock=lambda: update_lock(resolve, root))
    for bumped in done:
        what = ", ".join(f"{c.package} {c.old} → {c.new}" for c in bumped.changes)
        rec = bumped.record
        out().print(f"{bumped.image}: {what}; image {rec.image_id[:19]}; {rec.version_output}", markup=False,
                    highlight=False)
    for broken in failed:
        what = ", ".join(f"{c.package} {c.old} → {c.new}" for c in broken.changes)
        err().print(f"[red]✗[/] {broken.image}: {escape(what)} not bumped (the recipe is as it was): "
                    f"{escape(broken.error)}", highlight=False)
    if failed:
        raise typer.Exit(int(Exit.INFRASTRUCTURE))
