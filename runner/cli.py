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
from rich.markup import escape
from rich.table import Table

import runner
from runner.conformance.behaviours import Behaviour, UnknownBehaviour, parse_behaviour
from runner.conformance.cases import CASES, UnknownCase, UnknownCondition, get_case
from runner.harnesses.profile import ProfileError, UnknownHarness, find_profile, known_harnesses, load_profile
from runner.sandbox.engine import EngineError, connect
from runner.turn.model_choice import ModelChoiceError

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
# Text the CLI writes to a pipe or a file is never hard-wrapped: CI logs, grep and anything that parses stderr see
# whole lines. Rich sizes a console from the terminal (80 columns when there is none), so each print asks for a
# console fitted to the stream as it is now (a test runner or a redirect may have replaced it since import).
UNWRAPPED = 1 << 16  # columns for a pipe or file: wide enough that no line or table is ever folded


def _console(stderr: bool) -> Console:
    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    return Console(stderr=stderr, soft_wrap=True, width=UNWRAPPED)


def err() -> Console:
    return _console(stderr=True)


def out() -> Console:
    return _console(stderr=False)


def say(message: str) -> None:
    """One progress line on stderr (``… message``)."""
    err().print(f"[dim]…[/] {escape(message)}", highlight=False)


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
    err().print(f"[bold red]runner:[/] {escape(text)}", highlight=False, markup=True)
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

    from runner.matrix.cell import run_cell
    from runner.matrix.cells import Cell
    from runner.matrix.plan import CellOptions, plan_cells

    run_id = new_run_id()
    options = CellOptions(behaviour_obj, model, deadline, keep, run_id, run_unsupported=True, model_fault=model_fault)
    try:
        cell = Cell(case_obj, case_obj.condition_for(condition), profile)
        [plan] = plan_cells([cell], options, os.environ, fault_every_column=True)
    except UnknownCondition as error:
        fail(Exit.UNKNOWN, str(error), as_json)
    except ModelChoiceError as error:
        fail(Exit.USAGE, str(error), as_json)
    target = out_dir or Path("runs") / run_id / cell.id
    progress = (lambda _msg: None) if as_json else say
    if plan.model.mode != "none":
        shown = f"; fault {plan.model.fault}" if plan.model.fault else ""
        err().print(f"[bold]model: {plan.model.mode}[/] ({escape(plan.model.why + shown)})", highlight=False)
    _check_out(target, as_json)
    try:
        client = connect()
    except EngineError as error:
        fail(Exit.INFRASTRUCTURE, str(error), as_json)
    job = lambda: run_cell(client, plan, target, progress)  # noqa: E731
    result, report = interruptible(job, client, run_id, keep, as_json)
    problem = result.infrastructure_error
    body = {**(report.to_json() if report else {}), "cell": result.cell.to_json(), "grade": result.grade,
            "pins": result.pins, "repro": result.repro,
            "infrastructureError": problem.to_json() if problem else None}
    if as_json:
        print(json.dumps(body, ensure_ascii=False))
    elif report is not None:
        _print_summary(report, result)
    else:
        out().print(result.evidence, markup=False, highlight=False)
    if problem is not None:
        text = f"infrastructure error ({problem.kind}): {problem.detail}"
        err().print(f"[bold red]runner:[/] {escape(text)}", highlight=False)
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
        if not keep and client is not None:
            try:
                remove_labelled(client, f"{RUN_LABEL}={run_id}")
            except EngineError as error:
                err().print(f"[yellow]runner:[/] could not remove the run's containers ({escape(str(error))}); "
                          f"`runner gc` removes them once the engine answers", highlight=False)
    if interrupted or not result:
        fail(Exit.INTERRUPTED, "interrupted; the run's containers and socket directories were removed", as_json)
    return result[0]


def _print_summary(report: Any, cell: Any) -> None:
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
    if cell.grade:
        table.add_row("cell grade", cell.evidence)
    table.add_row("harness", f"{data['harness']} · behaviour {data['behaviour']} · exit {data['exitCode']}"
                  + ("  · stopped at the deadline" if data["deadlineHit"] else ""))
    fault = f"  · fault {data['model']['fault']}" if data["model"].get("fault") else ""
    table.add_row("model", f"{data['model']['mode']}  ({data['model']['why']}){fault}")
    table.add_row("image", f"{meta.get('imageId', '')[:19]}  ({meta.get('cliVersion')})")
    table.add_row("catalogue", f"{meta.get('catalogHash', '')[:19]}…  prompt {str(meta.get('promptHash', ''))[:12]}…")
    mcp = data["mcp"]
    table.add_row("mcp", f"{mcp.get('sessionsInitialized', 0)} session(s), {mcp.get('calls', 0)} call(s)")
    table.add_row("elapsed", f"{data['elapsedSeconds']:.2f}s")
    out().print(table)
    tail = meta.get("transcriptTail") or []
    if tail:
        out().print("[bold]transcript tail[/]")
        for line in tail[-12:]:
            out().print(f"  {line}", highlight=False, markup=False, overflow="ellipsis", no_wrap=True)
    out().print(f"[bold]files[/]  {escape(str(Path(data['files']['record']).parent))}", highlight=False)
    out().print("[bold]repro[/]  ", end="")
    out().print(cell.repro, highlight=False, markup=False, soft_wrap=True)
    if data["kept"]:
        out().print(f"[bold]kept container[/] {data['containerId'][:12]}  (remove with: docker rm -f …, or runner gc)")


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
    shard: Annotated[str | None, typer.Option(metavar="K/N", help=(
        "Run only slice K of N of the selected cells that run a turn (each cell is in exactly one slice, the "
        "same on every machine); the cells that run no turn are left to a run without --shard or with "
        "--declared-only. CI runs one slice per job."))] = None,
    declared_only: Annotated[bool, typer.Option("--declared-only", help=(
        "Write only the cells that run no turn (rows not implemented or not applicable to the column, "
        "unavailable columns): graded from what is declared, with no engine."))] = False,
    profiles_dir: Annotated[Path | None, typer.Option(help="Extra profiles directory.")] = None,
) -> None:
    """Run a matrix of cells (rows = cases, columns = CLIs), resuming finished cells, then report it.

    Examples: runner run --harness all --case all -j 2 · runner run --harness codex --shard 1/2
    """
    from runner.matrix import report as rep
    from runner.matrix.cell import run_cell
    from runner.matrix.cells import runs_a_turn
    from runner.matrix.plan import CellOptions, plan_cells
    from runner.matrix.run import ImagePins, run_matrix
    from runner.matrix.shards import ShardError, parse_shard

    try:
        behaviour_obj = parse_behaviour(behaviour)
    except UnknownBehaviour as error:
        fail(Exit.UNKNOWN, str(error))
    try:
        slice_ = parse_shard(shard) if shard is not None else None
    except ShardError as error:
        fail(Exit.USAGE, str(error))
    if slice_ is not None and declared_only:
        fail(Exit.USAGE, "--shard and --declared-only select different cells: give one of them")
    chosen = _matrix_cells(harness, case, profiles_dir)
    if slice_ is not None:
        chosen = [c for c in chosen if runs_a_turn(c) and slice_.holds(c.id)]
    elif declared_only:
        chosen = [c for c in chosen if not runs_a_turn(c)]
    run_id = new_run_id()
    options = CellOptions(behaviour_obj, model, None, False, run_id, model_fault=model_fault)
    _check_out(out_dir, False)
    client: Any = None
    try:
        plans = plan_cells(chosen, options, os.environ)
        if any(runs_a_turn(c) for c in chosen):  # a selection with no turn to run needs no engine
            client = connect()
    except ModelChoiceError as error:
        fail(Exit.USAGE, str(error))
    except EngineError as error:
        fail(Exit.INFRASTRUCTURE, str(error))
    planned = ImagePins(client)

    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err(), transient=False) as bar:
        task = bar.add_task(f"{len(chosen)} cells", total=len(chosen))
        running: set[str] = set()

        def events(kind: str, cell: Any, result: Any) -> None:
            if kind == "started":
                running.add(cell.id)
            elif kind in ("finished", "reused"):
                running.discard(cell.id)
                bar.advance(task)
                status = result.status if result is not None else "unknown"
                err().print(f"  {cell.id}: {status}{' (resumed)' if kind == 'reused' else ''}", highlight=False)
            elif kind == "retrying":
                err().print(f"  {cell.id}: infrastructure error, retrying", highlight=False)
            bar.update(task, description=f"running {', '.join(sorted(running)) or '…'}"[:80])

        summary = interruptible(
            lambda: run_matrix(plans, out_dir, lambda plan, d: _cell_only(run_cell(client, plan, d)),
                               planned, jobs=jobs, per_harness=per_harness, retries=retries, events=events),
            client, run_id, False, False,
        )
    rep.write_reports(out_dir, [out_dir / p.id for p in plans])
    out().print(f"ran {len(summary.ran)}, resumed {len(summary.reused)}, infrastructure errors "
              f"{len(summary.infrastructure)}; report: {out_dir / 'report.md'}")
    if summary.infrastructure:
        raise typer.Exit(int(Exit.INFRASTRUCTURE))


async def _cell_only(job: Any) -> Any:
    result, _ = await job
    return result


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
        loaded = rep.load_cells(dirs)  # a path that does not exist is an error: a gate never passes on nothing
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
    err().print(f"gate {'passed' if verdict.passed else 'FAILED'}: {len(verdict.new)} new, "
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
    from runner.matrix.artifact import read_cell
    from runner.matrix.cell import run_cell
    from runner.matrix.repro import repro_plan, unmatched_pins

    directory = path.parent if path.is_file() else path
    recorded = read_cell(directory)
    if recorded is None:
        fail(Exit.USAGE, f"{directory}: no readable result.json", as_json)
    run_id = new_run_id()
    try:
        plan = repro_plan(recorded, directory, run_id, os.environ)
    except (UnknownCase, UnknownHarness, UnknownBehaviour, ValueError) as error:
        fail(Exit.UNKNOWN, str(error), as_json)
    except ModelChoiceError as error:
        fail(Exit.USAGE, str(error), as_json)
    target = out_dir or directory / f"repro-{run_id}"
    _check_out(target, as_json)
    try:
        client = connect()
    except EngineError as error:
        fail(Exit.INFRASTRUCTURE, str(error), as_json)
    result, _ = interruptible(lambda: run_cell(client, plan, target), client, run_id, False, as_json)
    if result.infrastructure_error is not None:
        problem = result.infrastructure_error
        fail(Exit.INFRASTRUCTURE, f"the rerun did not complete ({problem.kind}): {problem.detail}", as_json)
    pins = recorded.pins
    differing = unmatched_pins(pins, result.pins)
    was, now = (recorded.grade or {}).get("status"), (result.grade or {}).get("status")
    if as_json:
        print(json.dumps({"recorded": was, "reproduced": now, "unmatchedPins": differing, "out": str(target)}))
    else:
        out().print(f"recorded grade: {was}; rerun: {now}  ({target})", markup=False, highlight=False)
        for key in differing:
            out().print(f"  pin not matched: {key}: {pins.get(key)!r} → {result.pins.get(key)!r}",
                        markup=False, highlight=False)
    if was != now:
        raise typer.Exit(1)


@app.command()
def matrix(
    output_format: Annotated[str, typer.Option("--format", help="github: JSON for strategy.matrix.")] = "github",
    harness: Annotated[str, typer.Option(help="Columns, as for runner run.")] = "all",
    case: Annotated[str, typer.Option(help="Rows, as for runner run.")] = "all",
    shard_minutes: Annotated[float, typer.Option(min=0.1, help=(
        "The most turn time one job may hold, in minutes: a column whose cells take longer is split into "
        "shards (each profile's cell_seconds, cells run one at a time)."))] = 20.0,
    profiles_dir: Annotated[Path | None, typer.Option(help="Extra profiles directory.")] = None,
) -> None:
    """Print the CI job matrix: one job per column, or per shard of a slow column, whatever the number of rows.

    Each job runs `runner run --harness <harness> --case <the same cases> --shard <shard>`; cells that run no
    turn start no job (`runner run --declared-only` writes them where the report is made).
    Example: runner matrix --format github --harness all --case all --shard-minutes 10
    """
    from runner.matrix.github import MatrixTooLarge, dumps, github_matrix

    if output_format != "github":
        fail(Exit.USAGE, f"unknown --format {output_format!r}: expected github")
    try:
        print(dumps(github_matrix(_matrix_cells(harness, case, profiles_dir), shard_minutes)))
    except MatrixTooLarge as error:
        fail(Exit.USAGE, str(error))


@app.command()
def cases() -> None:
    """List the cases (matrix rows) this runner can run."""
    table = Table("case", "condition", "expected turn", "invariant")
    for case in CASES.values():
        expect = case.condition.expect_turn
        table.add_row(case.id, case.condition.id, "/".join(expect) if expect else "-", case.invariant)
    out().print(table)


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
    out().print(table)


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
        out().print(f"removed {len(removed)} container(s)")


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
            err().print(f"[yellow]{name}: unavailable[/] — {escape(reason)}", highlight=False)
    wanted = [name for name in wanted if name not in unavailable]
    try:
        client = connect()
        for name in wanted:
            started = time.monotonic()
            record = ensure_image(client, name, progress=say)
            out().print(f"{name}: {record.image_id[:19]}  {record.version_output}  ({time.monotonic() - started:.1f}s)")
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
    out().print(table)


@images_app.command("verify")
def images_verify() -> None:
    """Check that images/lock.json matches what the engine holds and the recipes on disk."""
    from runner.sandbox.images import verify_lock

    try:
        problems = verify_lock(connect())
    except EngineError as error:
        fail(Exit.INFRASTRUCTURE, str(error))
    for problem in problems:
        err().print(f"[red]✗[/] {escape(problem)}", highlight=False)
    if problems:
        raise typer.Exit(1)
    out().print("images/lock.json matches the engine")


@app.callback(invoke_without_command=True)
def main(
    version: Annotated[bool, typer.Option("--version", help="Print the runner version and exit.")] = False,
) -> None:
    if version:
        print(f"runner {runner.__version__}")
        raise typer.Exit()


if __name__ == "__main__":  # pragma: no cover
    sys.exit(app())
