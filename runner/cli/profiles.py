"""``runner profiles calibrate RUN_DIR``: each harness's ``cell_seconds`` set from what its cells took in a finished
run (:mod:`runner.matrix.calibrate`); the only command that writes a profile."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

from runner.cli.render import out, print_json, reported

app = typer.Typer(help="The harness profiles' measured figures.", no_args_is_help=True)


@app.command("calibrate")
def profiles_calibrate(
    run_dirs: Annotated[list[Path], typer.Argument(help=(
        "Directories of finished runs (runner run --out), or cell directories."))],
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Print what would change; write nothing.")] = False,
    profiles_dir: Annotated[Path | None, typer.Option(help="Look up profiles here first ($RUNNER_PROFILES_DIR too); "
                                                           "the profile found is the one rewritten.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")] = False,
) -> None:
    """Set each harness's cell_seconds to the median wall time of its cells that ran a turn in RUN_DIR (rounded up
    to 0.1 s); only the cell_seconds line of a profile whose figure changed is rewritten.

    Example: runner run --harness all --case all -j 2 --out runs/all && runner profiles calibrate runs/all
    """
    from runner.cli.settings import profiles_dirs
    from runner.matrix.calibrate import calibrate

    with reported(as_json):
        found = calibrate(run_dirs, profiles_dirs(profiles_dir), write=not dry_run)
    if as_json:
        print_json(json.dumps({"dryRun": dry_run, "harnesses": [c.to_json() for c in found]}, ensure_ascii=False))
        return
    verb = "would change" if dry_run else "changed"
    for c in found:
        if c.file is None:
            line = f"{c.harness}: {c.after:g} s over {c.cells} cells (no profile of that id here: nothing written)"
        elif c.changed:
            line = f"{c.harness}: cell_seconds {c.before:g} -> {c.after:g} (median of {c.cells} cells) {c.file}"
        else:
            line = f"{c.harness}: cell_seconds {c.after:g} unchanged (median of {c.cells} cells)"
        out().print(line, markup=False, highlight=False)
    changed = sum(1 for c in found if c.changed)
    out().print(f"{changed} profile(s) {verb}", markup=False, highlight=False)
