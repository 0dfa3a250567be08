"""``runner images build|list|verify``: the pinned images, built offline (no registry), and their lock."""

from __future__ import annotations

import json
import time
from typing import Annotated

import typer

from runner.cli.render import err, escape, out, reported, say
from runner.cli.turn import connect_engine
from runner.errors import Exit

app = typer.Typer(help="Build, list and verify the pinned images (no registry needed).", no_args_is_help=True)


@app.command("build")
def images_build(
    harness: Annotated[list[str] | None, typer.Option(help="Build this harness's image (repeatable).")] = None,
    all_: Annotated[bool, typer.Option("--all", help="Build every image under images/.")] = False,
) -> None:
    """Build (or reuse from cache) the pinned images, offline, and record them in images/lock.json."""
    from runner.sandbox.images import buildable_harnesses, ensure_image, unavailable_images

    wanted = buildable_harnesses() if all_ or not harness else harness
    unavailable = unavailable_images()
    for name, reason in sorted(unavailable.items()):
        if all_ or not harness or name in wanted:
            err().print(f"[yellow]{name}: unavailable[/] — {escape(reason)}", highlight=False)
    wanted = [name for name in wanted if name not in unavailable]
    client = connect_engine()
    with reported():
        for name in wanted:
            started = time.monotonic()
            record = ensure_image(client, name, progress=say)
            out().print(f"{name}: {record.image_id[:19]}  {record.version_output}  ({time.monotonic() - started:.1f}s)",
                        markup=False, highlight=False)


@app.command("list")
def images_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Show the lock: per image, its CLI version, base, recipe hash and image id."""
    from runner.sandbox.images import read_lock

    lock = read_lock()
    if as_json:
        print(json.dumps({k: v.__dict__ for k, v in lock.items()}, indent=2))
        return
    from rich.table import Table

    table = Table("harness", "image id", "version", "recipe", "base")
    for name, rec in sorted(lock.items()):
        table.add_row(name, rec.image_id[:19], escape(rec.version_output or "-"), rec.recipe_hash[:12], rec.base[:19])
    out().print(table)


@app.command("verify")
def images_verify() -> None:
    """Check that images/lock.json matches what the engine holds and the recipes on disk."""
    from runner.sandbox.images import verify_lock

    client = connect_engine()
    with reported():
        problems = verify_lock(client)
    for problem in problems:
        err().print(f"[red]✗[/] {escape(problem)}", highlight=False)
    if problems:
        raise typer.Exit(int(Exit.VERDICT))
    out().print("images/lock.json matches the engine")
