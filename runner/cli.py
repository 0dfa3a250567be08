"""The ``runner`` command line. It parses, resolves and prints; the turn itself lives in ``runner.turn``.

Exit codes (also in ``runner --help``):
  0  the command did its job (for ``exec``: the turn ran and settled, whatever its status)
  2  bad command-line usage
  3  unknown harness, case or behaviour
  4  a harness profile that cannot be used (the message names the file and field)
  5  infrastructure: no Docker Engine, an image that cannot be built, a container that cannot start
  130 interrupted (Ctrl-C); every container the run started has been removed
"""

from __future__ import annotations

import json
import os
import secrets
import signal
import sys
import time
from enum import IntEnum
from pathlib import Path
from typing import Annotated, Any, NoReturn

import anyio
import typer
from rich.console import Console
from rich.table import Table

import runner
from runner.conformance.behaviours import Behaviour, UnknownBehaviour, parse_behaviour
from runner.conformance.cases import CASES, UnknownCase, UnknownCondition, get_case
from runner.harnesses.profile import ProfileError, UnknownHarness, find_profile, known_harnesses, load_profile
from runner.sandbox.engine import EngineError, connect
from runner.turn.model_choice import ModelChoiceError, choose_model

EPILOG = (
    "Exit codes: 0 done; 2 usage; 3 unknown harness, case or behaviour; 4 unusable profile; "
    "5 infrastructure (engine, image, container); 130 interrupted."
)
BEHAVIOUR_HELP = "How the CLI conducts itself: " + ", ".join(b.value for b in Behaviour)
FAULT_HELP = (
    "Make the scripted model fail on purpose, from conversation request STEP (1-based, default 1; "
    "or after-ask: the first request after the ask) on: error (HTTP 500 with the dialect's error "
    "body), stall (never answers; the deadline settles the turn), early-close (the stream starts, "
    "then the connection drops before its terminal event). Scripted model only."
)
app = typer.Typer(
    help="Run coding-agent CLIs in pinned containers against a SharedOS catalogue served over MCP.",
    epilog=EPILOG, no_args_is_help=True, add_completion=False, rich_markup_mode=None,
)
images_app = typer.Typer(help="Build, list and verify the pinned images (no registry needed).", no_args_is_help=True)
app.add_typer(images_app, name="images")
err = Console(stderr=True)
out = Console()


class Exit(IntEnum):
    OK = 0
    USAGE = 2
    UNKNOWN = 3
    PROFILE = 4
    INFRASTRUCTURE = 5
    INTERRUPTED = 130


def fail(code: Exit, text: str, as_json: bool = False) -> NoReturn:
    if as_json:
        print(json.dumps({"error": {"exitCode": int(code), "kind": code.name.lower(), "message": text}}))
    err.print(f"[bold red]runner:[/] {text}", highlight=False, markup=True)
    raise typer.Exit(int(code))


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


@app.command("exec")
def exec_(
    harness: Annotated[str, typer.Option(help="Harness id (a profile in harness_profiles/), e.g. reference.")] = "",
    case: Annotated[str, typer.Option(help="Case id, e.g. escalation or escalation-refused.")] = "escalation",
    condition: Annotated[str | None, typer.Option(help="The row's condition (default: the case's first).")] = None,
    behaviour: Annotated[str, typer.Option(help=BEHAVIOUR_HELP)] = "cooperative",
    deadline: Annotated[float | None, typer.Option(help="Turn deadline in seconds (default: the profile's).")] = None,
    keep: Annotated[bool, typer.Option(help="Keep the container after the turn, for inspection.")] = False,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Directory for this turn's files.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")] = False,
    model: Annotated[str | None, typer.Option(
        "--model", help="scripted or live (default: live when the harness's credentials are set, else scripted)."
    )] = None,
    model_fault: Annotated[str | None, typer.Option("--model-fault", metavar="KIND[@STEP]", help=FAULT_HELP)]
    = None,
    profile_path: Annotated[Path | None, typer.Option("--profile", help="Use this profile file instead of --harness.")]
    = None,
    profiles_dir: Annotated[Path | None, typer.Option(help="Look up --harness here first ($RUNNER_PROFILES_DIR too).")]
    = None,
) -> None:
    """Run one turn: one case through one CLI in its container, and print how it settled.

    Example: runner exec --harness reference --case escalation --behaviour persistent --json
    """
    try:
        case_obj = get_case(case)
        behaviour_obj = parse_behaviour(behaviour)
        if profile_path is not None:
            profile = load_profile(profile_path)
        elif harness:
            profile = find_profile(harness, profiles_dir)
        else:
            known = ", ".join(known_harnesses(profiles_dir))
            fail(Exit.USAGE, f"give --harness (one of: {known}) or --profile", as_json)
    except (UnknownCase, UnknownBehaviour, UnknownHarness) as error:
        fail(Exit.UNKNOWN, str(error), as_json)
    except ProfileError as error:
        fail(Exit.PROFILE, str(error), as_json)
    if deadline is not None and deadline <= 0:
        fail(Exit.USAGE, "--deadline must be a positive number of seconds", as_json)
    if profile.unavailable:
        fail(Exit.INFRASTRUCTURE, f"the {profile.id} column is unavailable here: {profile.unavailable}", as_json)
    try:
        choice = choose_model(model, profile, os.environ, model_fault)
        condition_obj = case_obj.condition_for(condition)
    except UnknownCondition as error:
        fail(Exit.UNKNOWN, str(error), as_json)
    except ModelChoiceError as error:
        fail(Exit.USAGE, str(error), as_json)

    from runner.matrix.cell import CellOptions, run_cell
    from runner.matrix.cells import Cell

    run_id = new_run_id()
    cell = Cell(case_obj, condition_obj, profile)
    target = out_dir or Path("runs") / run_id / cell.id
    progress = (lambda _msg: None) if as_json else (lambda msg: err.print(f"[dim]…[/] {msg}", highlight=False))
    if choice.mode != "none":
        shown = f"; fault {choice.fault}" if choice.fault else ""
        err.print(f"[bold]model: {choice.mode}[/] ({choice.why}{shown})", highlight=False)
    options = CellOptions(behaviour_obj, model, deadline, keep, run_id, run_unsupported=True, model_fault=model_fault)
    _check_out(target, as_json)
    try:
        client = connect()
    except EngineError as error:
        fail(Exit.INFRASTRUCTURE, str(error), as_json)
    job = lambda: run_cell(client, cell, target, options, progress)  # noqa: E731
    result, report = interruptible(job, client, run_id, keep, as_json)
    body = {**(report.to_json() if report else {}), "cell": result["cell"], "grade": result.get("grade"),
            "pins": result["pins"], "repro": result["repro"]}
    body["infrastructureError"] = result.get("infrastructureError")
    if as_json:
        print(json.dumps(body, ensure_ascii=False))
    elif report is not None:
        _print_summary(report, result)
    else:
        out.print(result.get("grade", {}).get("evidence", ""))
    if result.get("infrastructureError"):
        problem = result["infrastructureError"]
        text = f"infrastructure error ({problem['kind']}): {problem['detail']}"
        err.print(f"[bold red]runner:[/] {text}", highlight=False)
        raise typer.Exit(int(Exit.INFRASTRUCTURE))


def _check_out(path: Path, as_json: bool) -> None:
    """Refuse to start when the output directory cannot take the artifacts (nothing half-written)."""
    from runner.turn.preflight import OutputDirError, check_output_dir

    try:
        check_output_dir(path)
    except OutputDirError as error:
        fail(Exit.INFRASTRUCTURE, str(error), as_json)


def interruptible(job: Any, client: Any, run_id: str, keep: bool, as_json: bool) -> Any:
    """Run ``job()`` (a coroutine factory); Ctrl-C or SIGTERM cancels it, and its teardown still
    removes every container of the run."""
    from runner.sandbox.container import RUN_LABEL, remove_labelled

    result: list[Any] = []
    interrupted: list[int] = []

    async def main() -> None:
        async with anyio.create_task_group() as tg:

            async def watch_signals() -> None:
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for signum in signals:
                        interrupted.append(signum)
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch_signals)
            result.append(await job())
            tg.cancel_scope.cancel()

    try:
        anyio.run(main)
    except EngineError as error:
        fail(Exit.INFRASTRUCTURE, str(error), as_json)
    finally:
        if not keep:
            try:
                remove_labelled(client, f"{RUN_LABEL}={run_id}")
            except EngineError as error:
                err.print(f"[yellow]runner:[/] could not remove the run's containers ({error}); "
                          f"`runner gc` removes them once the engine answers", highlight=False)
    if interrupted or not result:
        fail(Exit.INTERRUPTED, "interrupted; the run's containers and socket directories were removed", as_json)
    return result[0]


def _print_summary(report: Any, cell: dict[str, Any]) -> None:
    data = report.to_json()
    meta = data["outcome"]["metadata"]
    status = data["status"]
    colour = {"escalated": "magenta", "succeeded": "green", "failed": "red", "cancelled": "yellow"}.get(status, "white")
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_row("status", f"[bold {colour}]{status}[/]" + (f"  ({data['reasonCode']})" if data["reasonCode"] else ""))
    if data.get("escalation"):
        table.add_row("reason", data["escalation"]["reason"])
    if data.get("error"):
        table.add_row("error", f"{data['error']['code']}: {data['error']['message']}")
    table.add_row("harness outcome", str(meta.get("harnessOutcome", "(no ask: the CLI's own outcome is the turn's)"))
                  + (f"  ({meta['harnessErrorCode']})" if meta.get("harnessErrorCode") else ""))
    table.add_row("calls after the ask", str(meta.get("callsAfterEscalation", "-")))
    if cell.get("grade"):
        table.add_row("cell grade", str(cell["grade"].get("evidence")))
    table.add_row("harness", f"{data['harness']} · behaviour {data['behaviour']} · exit {data['exitCode']}"
                  + ("  · stopped at the deadline" if data["deadlineHit"] else ""))
    fault = f"  · fault {data['model']['fault']}" if data["model"].get("fault") else ""
    table.add_row("model", f"{data['model']['mode']}  ({data['model']['why']}){fault}")
    table.add_row("image", f"{meta.get('imageId', '')[:19]}  ({meta.get('cliVersion')})")
    table.add_row("catalogue", f"{meta.get('catalogHash', '')[:19]}…  prompt {str(meta.get('promptHash', ''))[:12]}…")
    mcp = data["mcp"]
    table.add_row("mcp", f"{mcp.get('sessionsInitialized', 0)} session(s), {mcp.get('calls', 0)} call(s)")
    table.add_row("elapsed", f"{data['elapsedSeconds']:.2f}s")
    out.print(table)
    tail = meta.get("transcriptTail") or []
    if tail:
        out.print("[bold]transcript tail[/]")
        for line in tail[-12:]:
            out.print(f"  {line}", highlight=False, markup=False, overflow="ellipsis", no_wrap=True)
    out.print(f"[bold]files[/]  {Path(data['files']['record']).parent}")
    out.print("[bold]repro[/]  ", end="")
    out.print(cell["repro"], highlight=False, markup=False, soft_wrap=True)
    if data["kept"]:
        out.print(f"[bold]kept container[/] {data['containerId'][:12]}  (remove with: docker rm -f …, or runner gc)")


def _matrix_cells(harness: str, case: str, profiles_dir: Path | None, as_json: bool = False) -> list[Any]:
    from runner.matrix.cells import cells

    try:
        return cells(harness, case, profiles_dir)
    except (UnknownCase, UnknownHarness) as error:
        fail(Exit.UNKNOWN, str(error), as_json)
    except ProfileError as error:
        fail(Exit.PROFILE, str(error), as_json)


@app.command()
def run(
    harness: Annotated[str, typer.Option(help="Columns: harness ids separated by commas, or all.")] = "all",
    case: Annotated[str, typer.Option(help="Rows: case ids separated by commas, or all.")] = "all",
    jobs: Annotated[int, typer.Option("-j", "--jobs", min=1, help="Cells at once.")] = 2,
    per_harness: Annotated[int, typer.Option(min=1, help="Cells of one CLI at once.")] = 1,
    out_dir: Annotated[Path, typer.Option("--out", help="The run directory (one subdirectory per cell).")]
    = Path("runs/matrix"),
    behaviour: Annotated[str, typer.Option(help=BEHAVIOUR_HELP)] = "cooperative",
    model: Annotated[str | None, typer.Option("--model", help="scripted or live (default: per column).")] = None,
    model_fault: Annotated[str | None, typer.Option("--model-fault", metavar="KIND[@STEP]", help=FAULT_HELP)]
    = None,
    retries: Annotated[int, typer.Option(min=0, help="Retries of a cell that hit an infrastructure error.")] = 2,
    profiles_dir: Annotated[Path | None, typer.Option(help="Extra profiles directory.")] = None,
) -> None:
    """Run a matrix of cells (rows = cases, columns = CLIs), resuming finished cells, then report it.

    Example: runner run --harness all --case all -j 2
    """
    from runner.matrix import report as rep
    from runner.matrix.cell import CellOptions, planned_pins, run_cell
    from runner.matrix.run import run_matrix

    try:
        behaviour_obj = parse_behaviour(behaviour)
    except UnknownBehaviour as error:
        fail(Exit.UNKNOWN, str(error))
    chosen = _matrix_cells(harness, case, profiles_dir)
    run_id = new_run_id()
    options = CellOptions(behaviour_obj, model, None, False, run_id, model_fault=model_fault)
    _check_out(out_dir, False)
    try:
        profiles = list({c.profile.id: c.profile for c in chosen}.values())
        for profile in profiles:
            choose_model(model, profile, os.environ, model_fault if profile.model is not None else None)
        if model_fault and all(profile.model is None for profile in profiles):
            raise ModelChoiceError(f"--model-fault {model_fault}: none of the chosen harnesses talks to a model")
        client = connect()
    except ModelChoiceError as error:
        fail(Exit.USAGE, str(error))
    except EngineError as error:
        fail(Exit.INFRASTRUCTURE, str(error))
    from runner.sandbox.images import ensure_image

    images: dict[str, Any] = {}

    from runner.conformance.columns import limits_for

    def planned(cell: Any) -> dict[str, Any]:
        limits = limits_for(cell.case, cell.condition, cell.profile.issues_uncatalogued)
        if cell.profile.unavailable or cell.case.not_implemented or limits.unsupported:
            return planned_pins(cell, options)  # never runs a turn: no image is part of it
        if cell.profile.image not in images:
            images[cell.profile.image] = ensure_image(client, cell.profile.image)
        return planned_pins(cell, options, images[cell.profile.image])

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err, transient=False) as bar:
        task = bar.add_task(f"{len(chosen)} cells", total=len(chosen))
        running: set[str] = set()

        def events(kind: str, cell: Any, result: dict[str, Any] | None) -> None:
            if kind == "started":
                running.add(cell.id)
            elif kind in ("finished", "reused"):
                running.discard(cell.id)
                bar.advance(task)
                status = rep.status(result or {})
                err.print(f"  {cell.id}: {status}{' (resumed)' if kind == 'reused' else ''}", highlight=False)
            elif kind == "retrying":
                err.print(f"  {cell.id}: infrastructure error, retrying", highlight=False)
            bar.update(task, description=f"running {', '.join(sorted(running)) or '…'}"[:80])

        summary = interruptible(
            lambda: run_matrix(chosen, out_dir, lambda cell, d: _cell_only(run_cell(client, cell, d, options)),
                               planned, jobs=jobs, per_harness=per_harness, retries=retries, events=events),
            client, run_id, False, False,
        )
    loaded = rep.load_cells([out_dir / c.id for c in chosen if (out_dir / c.id / "result.json").exists()])
    (out_dir / "manifest.json").write_text(json.dumps(rep.manifest(loaded), indent=2) + "\n")
    (out_dir / "report.md").write_text(rep.markdown(loaded))
    (out_dir / "junit.xml").write_text(rep.junit(loaded))
    out.print(f"ran {len(summary.ran)}, resumed {len(summary.reused)}, infrastructure errors "
              f"{len(summary.infrastructure)}; report: {out_dir / 'report.md'}")
    if summary.infrastructure:
        raise typer.Exit(int(Exit.INFRASTRUCTURE))


async def _cell_only(job: Any) -> dict[str, Any]:
    result, _ = await job
    return dict(result)


@app.command()
def report(
    dirs: Annotated[list[Path], typer.Argument(help="Cell directories, or directories holding them.")],
    markdown: Annotated[Path | None, typer.Option(help="Write the Markdown report here (else to stdout).")] = None,
    junit: Annotated[Path | None, typer.Option(help="Write JUnit XML here.")] = None,
    manifest: Annotated[Path | None, typer.Option(help="Write the manifest (JSON) here.")] = None,
    expected_failures: Annotated[Path | None, typer.Option(help="Known failures (YAML): the gate passes on them.")]
    = None,
) -> None:
    """Merge cells into one report and apply the gate: exit 1 on a new failure or a stale expected one."""
    from runner.matrix import report as rep

    try:
        existing = [d for d in dirs if d.exists()]
        loaded = rep.load_cells(existing) if existing else []
        expected = rep.load_expected(expected_failures) if expected_failures else []
    except rep.ReportError as error:
        fail(Exit.USAGE, str(error))
    verdict = rep.gate(loaded, expected)
    text = rep.markdown(loaded, verdict)
    if markdown:
        markdown.write_text(text)
    else:
        print(text)
    if junit:
        junit.write_text(rep.junit(loaded))
    if manifest:
        manifest.write_text(json.dumps(rep.manifest(loaded, verdict), indent=2) + "\n")
    err.print(f"gate {'passed' if verdict.passed else 'FAILED'}: {len(verdict.new)} new, "
              f"{len(verdict.known)} known, {len(verdict.stale)} stale", highlight=False)
    if not verdict.passed:
        raise typer.Exit(1)


@app.command()
def repro(
    path: Annotated[Path, typer.Argument(help="A cell directory (or its result.json).")],
    out_dir: Annotated[Path | None, typer.Option("--out", help="Where the rerun goes (default: PATH/repro-<id>).")]
    = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Rerun the cell an artifact describes with the same pins, and say which pins differ.

    A live cell is replayed from its recorded model exchanges, offline. Exit 0 when the grade is
    reproduced, 1 when it differs.
    """
    from runner.conformance.hashing import comparable
    from runner.matrix.artifact import read_cell
    from runner.matrix.cell import CellOptions, run_cell
    from runner.matrix.cells import Cell

    directory = path.parent if path.is_file() else path
    recorded = read_cell(directory)
    if recorded is None:
        fail(Exit.USAGE, f"{directory}: no readable result.json", as_json)
    pins = recorded.get("pins", {})
    try:
        case_obj = get_case(recorded["cell"]["case"])
        profile = find_profile(recorded["cell"]["column"])
        condition_obj = case_obj.condition_for(recorded["cell"]["condition"])
        behaviour_obj = parse_behaviour(pins.get("behaviour", "cooperative"))
    except (UnknownCase, UnknownHarness, UnknownBehaviour, ValueError) as error:
        fail(Exit.UNKNOWN, str(error), as_json)
    mode = pins.get("modelMode")
    model = f"replay:{directory / 'model-exchanges.jsonl'}" if mode == "live" else (mode if mode != "none" else None)
    run_id = new_run_id()
    fault = pins.get("modelFault")  # a faulted cell reruns with the same fault
    deadline = recorded.get("deadlineSeconds")
    options = CellOptions(behaviour_obj, model, deadline, False, run_id, run_unsupported=True, model_fault=fault)
    target = out_dir or directory / f"repro-{run_id}"
    _check_out(target, as_json)
    client = connect()
    cell = Cell(case_obj, condition_obj, profile)
    result, _ = interruptible(lambda: run_cell(client, cell, target, options), client, run_id, False, as_json)
    if result.get("infrastructureError"):
        problem = result["infrastructureError"]
        fail(Exit.INFRASTRUCTURE, f"the rerun did not complete ({problem['kind']}): {problem['detail']}", as_json)
    differing = [k for k in comparable(pins, result["pins"]) if k != "modelMode" or mode != "live"]
    was, now = recorded.get("grade", {}).get("status"), result.get("grade", {}).get("status")
    if as_json:
        print(json.dumps({"recorded": was, "reproduced": now, "unmatchedPins": differing, "out": str(target)}))
    else:
        out.print(f"recorded grade: {was}; rerun: {now}  ({target})")
        for key in differing:
            out.print(f"  pin not matched: {key}: {pins.get(key)!r} → {result['pins'].get(key)!r}", highlight=False)
    if was != now:
        raise typer.Exit(1)


@app.command()
def matrix(
    output_format: Annotated[str, typer.Option("--format", help="github: JSON for strategy.matrix.")] = "github",
    harness: Annotated[str, typer.Option(help="Columns, as for runner run.")] = "all",
    case: Annotated[str, typer.Option(help="Rows, as for runner run.")] = "all",
    profiles_dir: Annotated[Path | None, typer.Option(help="Extra profiles directory.")] = None,
) -> None:
    """Print the cell list for a CI matrix (the same cells and filters as runner run)."""
    from runner.matrix.github import MatrixTooLarge, dumps, github_matrix

    if output_format != "github":
        fail(Exit.USAGE, f"unknown --format {output_format!r}: expected github")
    try:
        print(dumps(github_matrix(_matrix_cells(harness, case, profiles_dir))))
    except MatrixTooLarge as error:
        fail(Exit.USAGE, str(error))


@app.command()
def cases() -> None:
    """List the cases (matrix rows) this runner can run."""
    table = Table("case", "condition", "expected turn", "invariant")
    for case in CASES.values():
        expect = case.condition.expect_turn
        table.add_row(case.id, case.condition.id, "/".join(expect) if expect else "-", case.invariant)
    out.print(table)


@app.command()
def harnesses(profiles_dir: Annotated[Path | None, typer.Option(help="Extra profiles directory.")] = None) -> None:
    """List the harness profiles found, and whether each loads."""
    table = Table("harness", "label", "image", "interpreter", "status")
    for harness_id in known_harnesses(profiles_dir):
        try:
            p = find_profile(harness_id, profiles_dir)
            table.add_row(p.id, p.label, p.image, p.interpreter, "ok")
        except ProfileError as error:
            table.add_row(harness_id, "", "", "", f"[red]{error}[/]")
    out.print(table)


@app.command()
def gc(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Remove every container a runner run left behind (found by label), e.g. after a SIGKILL."""
    from runner.sandbox.container import OWNER_LABEL, remove_labelled

    try:
        removed = remove_labelled(connect(), f"{OWNER_LABEL}=runner")
    except EngineError as error:
        fail(Exit.INFRASTRUCTURE, str(error), as_json)
    if as_json:
        print(json.dumps({"removed": removed}))
    else:
        out.print(f"removed {len(removed)} container(s)")


@images_app.command("build")
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
            err.print(f"[yellow]{name}: unavailable[/] — {reason}", highlight=False)
    wanted = [name for name in wanted if name not in unavailable]
    try:
        client = connect()
        for name in wanted:
            started = time.monotonic()
            record = ensure_image(client, name, progress=lambda m: err.print(f"[dim]…[/] {m}", highlight=False))
            out.print(f"{name}: {record.image_id[:19]}  {record.version_output}  ({time.monotonic() - started:.1f}s)")
    except EngineError as error:
        fail(Exit.INFRASTRUCTURE, str(error))


@images_app.command("list")
def images_list(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Show the lock: per image, its CLI version, base, recipe hash and image id."""
    from runner.sandbox.images import read_lock

    lock = read_lock()
    if as_json:
        print(json.dumps({k: v.__dict__ for k, v in lock.items()}, indent=2))
        return
    table = Table("harness", "image id", "version", "recipe", "base")
    for name, rec in sorted(lock.items()):
        table.add_row(name, rec.image_id[:19], rec.version_output or "-", rec.recipe_hash[:12], rec.base[:19])
    out.print(table)


@images_app.command("verify")
def images_verify() -> None:
    """Check that images/lock.json matches what the engine holds and the recipes on disk."""
    from runner.sandbox.images import verify_lock

    try:
        problems = verify_lock(connect())
    except EngineError as error:
        fail(Exit.INFRASTRUCTURE, str(error))
    for problem in problems:
        err.print(f"[red]✗[/] {problem}", highlight=False)
    if problems:
        raise typer.Exit(1)
    out.print("images/lock.json matches the engine")


@images_app.command("cache-key")
def images_cache_key(
    harness: Annotated[str, typer.Option(help="The harness whose image the key names.")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Print a cache key for the harness's saved image, from its declared inputs only (no engine, no staging)."""
    from runner.sandbox.images import cache_key, cache_key_inputs

    try:
        key = cache_key(harness)
        inputs = cache_key_inputs(harness) if as_json else None
    except EngineError as error:
        fail(Exit.INFRASTRUCTURE, str(error), as_json)
    print(json.dumps({"harness": harness, "key": key, "inputs": inputs}, indent=1) if as_json else key)


@images_app.command("save")
def images_save(
    harness: Annotated[list[str], typer.Option(help="Save this harness's image and its bases (repeatable).")],
    to: Annotated[Path | None, typer.Option(help="The archive (one --harness only; default "
                                                 "$RUNNER_CACHE_DIR/saved/<harness>.tar).")] = None,
) -> None:
    """docker save the harness images and every base they stand on, for a CI cache (building them if needed)."""
    from runner.sandbox.images import save_images

    if to is not None and len(harness) != 1:
        fail(Exit.USAGE, "--to takes exactly one --harness")
    try:
        client = connect()
        for name in harness:
            saved = save_images(client, name, to, progress=lambda m: err.print(f"[dim]…[/] {m}", highlight=False))
            out.print(f"{name}: saved {' '.join(saved.refs)} to {saved.path} "
                      f"({saved.bytes / 1e6:.0f} MB, {saved.seconds:.1f}s)", highlight=False)
    except EngineError as error:
        fail(Exit.INFRASTRUCTURE, str(error))


@images_app.command("load")
def images_load(
    harness: Annotated[list[str], typer.Option(help="Load this harness's saved archive (repeatable).")],
    from_: Annotated[Path | None, typer.Option("--from", help="The archive (one --harness only).")] = None,
) -> None:
    """docker load saved archives; a missing or corrupt one only says so (the next build then builds)."""
    from runner.sandbox.images import load_images

    if from_ is not None and len(harness) != 1:
        fail(Exit.USAGE, "--from takes exactly one --harness")
    try:
        client = connect()
        for name in harness:
            result = load_images(client, name, from_)
            if result.status == "loaded":
                out.print(f"{name}: {result.message} in {result.seconds:.1f}s", highlight=False)
            elif result.status == "absent":
                out.print(f"{name}: no saved image ({result.path})", highlight=False)
            else:
                err.print(f"[yellow]warning:[/] {name}: ignoring a corrupt archive: {result.message}", highlight=False)
    except EngineError as error:
        fail(Exit.INFRASTRUCTURE, str(error))


@app.callback(invoke_without_command=True)
def main(
    version: Annotated[bool, typer.Option("--version", help="Print the runner version and exit.")] = False,
) -> None:
    if version:
        print(f"runner {runner.__version__}")
        raise typer.Exit()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
