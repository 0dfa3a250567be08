"""``runner run`` (a matrix, resumable, sharded for CI), ``runner report`` (merge and gate), ``runner repro``
(one cell again, with its pins) and ``runner matrix`` (the CI job plan). The matrix logic is in
:mod:`runner.matrix`; these commands parse, plan at the edge and print."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from runner.cli.render import PricesFile, err, escape, fail, line, out, print_json, reported
from runner.cli.settings import option
from runner.cli.shared import check_out, connect_sandboxes, interruptible, new_run_id, unraised
from runner.core.visible import visible
from runner.errors import Exit, RunnerError
from runner.matrix.options import BEHAVIOUR, MODEL, MODEL_DIALECT, MODEL_FAULT, PROTOCOL, RUNTIME, TRANSPORT, TRIALS

if TYPE_CHECKING:
    from runner.matrix.gate import Gate
    from runner.matrix.plan import CellPlan
    from runner.matrix.result import CellResult


def run(
    ctx: typer.Context,
    harness: Annotated[str, typer.Option(help="Columns: harness ids separated by commas, or all.")] = "all",
    case: Annotated[str, typer.Option(help="Rows: case ids separated by commas, or all.")] = "all",
    jobs: Annotated[int, typer.Option("-j", "--jobs", min=1, help="Cells at once.")] = 2,
    per_harness: Annotated[int, typer.Option(min=1, help="Cells of one CLI at once.")] = 1,
    out_dir: Annotated[Path, typer.Option("--out", help="The run directory (one subdirectory per cell).")]
    = Path("runs/matrix"),
    behaviour: Annotated[str, option(BEHAVIOUR)] = BEHAVIOUR.default,
    model: Annotated[str | None, option(MODEL)] = MODEL.default,
    model_fault: Annotated[str | None, option(MODEL_FAULT)] = MODEL_FAULT.default,
    model_dialect: Annotated[str | None, option(MODEL_DIALECT)] = MODEL_DIALECT.default,
    retries: Annotated[int, typer.Option(min=0, help="Retries of a cell that hit an infrastructure error.")] = 2,
    transport: Annotated[str, option(TRANSPORT)] = TRANSPORT.default,
    runtime: Annotated[str, option(RUNTIME)] = RUNTIME.default,
    protocol: Annotated[str | None, option(PROTOCOL)] = PROTOCOL.default,
    trials: Annotated[int, option(TRIALS)] = TRIALS.default,
    shard: Annotated[str | None, typer.Option(metavar="K/N", help=(
        "Run only slice K of N of the selected cells that run a turn (each cell is in exactly one slice, the "
        "same on every machine); the cells that run no turn are left to a run without --shard or with "
        "--declared-only. CI runs one slice per job."))] = None,
    declared_only: Annotated[bool, typer.Option("--declared-only", help=(
        "Write only the cells that run no turn (rows not implemented or not applicable to the harness, "
        "unavailable harnesses): graded from what is declared, with no engine."))] = False,
    profiles_dir: Annotated[Path | None, typer.Option(help="Extra profiles directory.")] = None,
    expected_failures: Annotated[Path | None, typer.Option(help=(
        "Known failures (YAML, as for runner report): the gate at the end passes on them."))] = None,
    prices_file: PricesFile = None,
) -> None:
    """Run a matrix of cells (rows = cases, columns = harnesses), resuming finished cells, then report it and apply
    the expected-failures gate over the cells it selected, as runner report does.

    Exit 0 when every cell ran and the gate passed; 1 when the gate failed (a new failure, or a stale expected one);
    5 when a cell hit an infrastructure error (whatever the gate); 130 interrupted. The cells are written whatever
    the exit.

    Examples: runner run --harness all --case all -j 2 · runner run --harness codex --shard 1/2 ·
    runner run --harness reference,codex --case escalation --trials 3 --expected-failures .github/expected-failures.yml
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    # the cell's settings (behaviour, model, ...) are parsed from ctx.params, each by its row
    from runner.cli.settings import cell_options, profiles_dirs
    from runner.conformance.prices import load_prices
    from runner.matrix import report as rep
    from runner.matrix.artifact import RESULT
    from runner.matrix.cells import cells
    from runner.matrix.plan import plan_cells, with_trials
    from runner.matrix.run import ImagePins, run_matrix
    from runner.matrix.run_cell import run_cell
    from runner.matrix.shards import parse_shard

    with reported():
        # read before any turn: a gate file that cannot be read fails the run before it costs anything
        expected = rep.load_expected(expected_failures) if expected_failures else []
        prices = load_prices(prices_file) if prices_file is not None else None
        slice_ = parse_shard(shard) if shard is not None else None
        if slice_ is not None and declared_only:
            fail(Exit.USAGE, "--shard and --declared-only select different cells: give one of them")
        chosen = cells(harness, case, profiles_dirs(profiles_dir))
    if slice_ is not None:
        chosen = [c for c in chosen if c.runs_a_turn() and slice_.holds(c.id)]
    elif declared_only:
        chosen = [c for c in chosen if not c.runs_a_turn()]
    run_id = new_run_id()
    with reported():
        options = cell_options(ctx.params, run_id=run_id)
    check_out(out_dir, False, run_id)
    with reported():
        plans = with_trials(plan_cells(chosen, options), trials)
    # no turn to run: no engine needed
    backend = connect_sandboxes(runtime=options.runtime) if any(p.runs_a_turn for p in plans) else None
    planned = ImagePins(backend)

    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=err(), transient=False) as bar:
        counted = f"{len(chosen)} cells" + (f", {len(plans)} trials" if len(plans) != len(chosen) else "")
        task = bar.add_task(counted, total=len(plans))
        running: set[str] = set()

        def events(kind: str, cell: CellPlan, result: CellResult | None) -> None:
            if kind == "started":
                running.add(cell.label)
            elif kind in ("finished", "reused"):
                running.discard(cell.label)
                bar.advance(task)
                status = result.status if result is not None else "unknown"
                err().print(f"  {cell.label}: {status}{' (resumed)' if kind == 'reused' else ''}", highlight=False)
            elif kind == "retrying":
                err().print(retrying_line(cell.label, result), highlight=False, markup=False)
            bar.update(task, description=f"running {', '.join(sorted(running)) or '…'}"[:80])

        async def one(plan: CellPlan, directory: Path) -> CellResult:
            # the image ImagePins resolved for this cell's resume check: found once per image, not once per cell
            result, _ = await run_cell(backend, plan, directory, image=planned.images.get(plan.cell.profile.image))
            return result

        summary = interruptible(
            lambda: run_matrix(plans, out_dir, one, planned, jobs=jobs, per_harness=per_harness, retries=retries,
                               events=events),
            backend, run_id, False, False,
        )
    cell_dirs = [out_dir / cell_id for cell_id in dict.fromkeys(p.id for p in plans)]
    try:
        found = rep.write_reports(out_dir, cell_dirs, prices)
        # the gate runner report applies, over this run's cells (every trial of each)
        with reported():
            verdict = rep.gate(rep.load_cells([d for d in cell_dirs if (d / RESULT).exists()]), expected)
    except OSError as error:  # the cells are written; a report that cannot be is said in one line
        fail(Exit.INFRASTRUCTURE, f"{out_dir}: the run's reports could not be written ({error})")
    for finding in found:  # the scripted model plays the same script every time: trials that differ are news
        err().print(f"[bold yellow]finding:[/] {escape(finding)}", highlight=False)
    out().print(f"ran {len(summary.ran)}, resumed {len(summary.reused)}, infrastructure errors "
                f"{len(summary.infrastructure)}; report: {out_dir / 'report.md'}", markup=False, highlight=False)
    print_gate(verdict)
    if summary.infrastructure:
        raise typer.Exit(int(Exit.INFRASTRUCTURE))
    if not verdict.passed:
        raise typer.Exit(int(Exit.VERDICT))


def retrying_line(label: str, result: CellResult | None) -> str:
    """The progress line of an attempt about to be retried: why it ended, by its cause, kind and evidence (a graded
    attempt is retried too when its cause's rule says so: it is not always an infrastructure error)."""
    why = result.why if result is not None else None  # its evidence may quote the CLI: shown, never obeyed
    return visible(f"  {label}: {why.line if why is not None else 'the attempt ended without a record'}, retrying")


def print_gate(verdict: Gate) -> None:
    """The gate's verdict in one line on stderr, as run and report both say it."""
    err().print(f"gate {'passed' if verdict.passed else 'FAILED'}: {len(verdict.new)} new, "
                f"{len(verdict.known)} known, {len(verdict.stale)} stale", highlight=False)


def report(
    dirs: Annotated[list[Path], typer.Argument(help="Cell directories, or directories holding them.")],
    markdown: Annotated[Path | None, typer.Option(help="Write the Markdown report here (else to stdout).")] = None,
    junit: Annotated[Path | None, typer.Option(help="Write JUnit XML here.")] = None,
    manifest: Annotated[Path | None, typer.Option(help="Write the manifest (JSON) here.")] = None,
    html: Annotated[Path | None, typer.Option("--html", metavar="FILE", help=(
        "Write the report as one self-contained HTML page here: the grid, filters, and each cell's runs with "
        "their timelines, log tails and repro commands. It links to the cells' files relative to itself: keep it "
        "beside the cell directories (publish them together)."))] = None,
    expected_failures: Annotated[Path | None, typer.Option(help="Known failures (YAML): the gate passes on them.")]
    = None,
    compare: Annotated[Path | None, typer.Option(metavar="PATH", help=(
        "An earlier report's manifest.json: print the grade diff against it (Markdown) instead of the report; a "
        "missing file is said so in the diff. Or an earlier run's directory (A; the DIRS are B): print, per "
        "harness, whether B's pass rate differs from A's beyond noise (Fisher's exact test) and what changed in its "
        "tool policy, then the cells with trials whose rate moved; exit 1 also when a harness's or a cell's rate "
        "is lower beyond noise."))] = None,
    diff: Annotated[Path | None, typer.Option(help="With --compare: write the diff here (else to stdout).")] = None,
    compare_label: Annotated[str | None, typer.Option(help="With --compare: what the earlier report is, in the "
                                                           "diff's words (default: its path).")] = None,
    as_json: Annotated[bool, typer.Option("--json", help=(
        "With --compare RUN_DIR: print the comparison as one JSON object on stdout instead of Markdown."))] = False,
    prices_file: PricesFile = None,
) -> None:
    """Merge cells into one report and apply the gate: exit 1 on a new failure or a stale expected one.

    With --compare RUN_DIR, also exit 1 when a harness's (or a cell's) pass rate dropped beyond noise against that
    earlier run; a rise, a move within noise and a tool policy change are said, not failed.

    Examples: runner report runs/matrix --expected-failures .github/expected-failures.yml ·
    runner report runs/bump --compare runs/main --json
    """
    from runner.conformance.prices import load_prices
    from runner.matrix import report as rep

    if (diff is not None or compare_label is not None) and compare is None:
        fail(Exit.USAGE, "--diff and --compare-label need --compare OLD_MANIFEST or --compare OLD_RUN_DIR")
    if as_json and (compare is None or not compare.is_dir()):
        fail(Exit.USAGE, "--json needs --compare OLD_RUN_DIR (a run's directory)")
    earlier_run = compare is not None and compare.is_dir()
    with reported():
        # a path that does not exist is an error: a gate never passes on nothing
        located = rep.locate_cells(dirs)
        loaded = [run for run, _ in located]
        expected = rep.load_expected(expected_failures) if expected_failures else []
        prices = load_prices(prices_file) if prices_file is not None else None
        if compare is not None and earlier_run:
            earlier = rep.load_cells([compare])
        elif compare is not None:
            from runner.matrix.compare import diff_markdown, load_manifest

            old = load_manifest(compare)
    verdict = rep.gate(loaded, expected)
    if markdown or (compare is None and not as_json):
        page = f"`{html.name}` (the HTML report beside this one)" if html else None
        text = rep.markdown(loaded, verdict, full_detail=page, prices=prices)
        if markdown:
            markdown.write_text(text, encoding="utf-8", errors="backslashreplace")
        else:
            line(text)
    data = rep.manifest(loaded, verdict, prices=prices)
    dropped: list[str] = []
    if compare is not None:
        if earlier_run:
            from runner.matrix.report_compare import compare_runs, comparison_markdown

            found = compare_runs(earlier, loaded)
            dropped = found.dropped
            body = (json.dumps(found.to_json(), ensure_ascii=False) if as_json else comparison_markdown(
                found, compare_label or f"`{compare}`", ", ".join(f"`{d}`" for d in dirs)))
        else:
            body = diff_markdown(old, data, old_name=compare_label or f"`{compare}`")
        if as_json and not diff:
            print_json(body)
        elif as_json and diff:
            diff.write_text(body + "\n", encoding="utf-8")
        elif diff:
            diff.write_text(visible(body), encoding="utf-8", errors="backslashreplace")
        else:
            line(body, end="")
    if junit:
        junit.write_text(rep.junit(loaded), encoding="utf-8", errors="backslashreplace")
    if manifest:
        manifest.write_text(json.dumps(data.to_dict(), indent=2) + "\n", encoding="utf-8")
    if html:
        from runner.matrix.html import html_report

        html.write_text(html_report(located, html, verdict, list(data.comparability), list(data.findings), prices),
                        encoding="utf-8", errors="backslashreplace")
    print_gate(verdict)
    if dropped:
        err().print(escape(f"lower beyond noise than {compare}: {', '.join(dropped)}"), highlight=False)
    if not verdict.passed or dropped:
        raise typer.Exit(int(Exit.VERDICT))


def repro(
    path: Annotated[Path, typer.Argument(help="A cell or trial directory (or its result.json).")],
    out_dir: Annotated[Path | None, typer.Option("--out", help="Where the rerun goes (default: PATH/repro-<id>).")]
    = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Rerun the cell (or the trial) an artifact describes with the same pins, and say which pins differ.

    Give a trial's directory (<cell>/trial-<k>/) to rerun that trial. A live cell is replayed from its recorded
    model exchanges, offline. Exit 0 when the grade is
    reproduced, 1 when it differs.
    """
    from runner.cli.settings import host, profiles_dirs
    from runner.matrix.artifact import RESULT, load_result
    from runner.matrix.repro import repro_plan, unmatched_pins
    from runner.matrix.run_cell import run_cell

    directory = path.parent if path.is_file() else path
    if not (directory / RESULT).exists():
        fail(Exit.USAGE, f"{directory}: no {RESULT} (give a cell or trial directory)", as_json)
    run_id = new_run_id()
    with reported(as_json):
        # every id in it is checked before it names a path (the harness names the profile loaded)
        recorded = load_result(directory / RESULT)
        plan = repro_plan(recorded, directory, run_id, host(), profiles_dirs())
    target = out_dir or directory / f"repro-{run_id}"
    check_out(target, as_json, run_id)
    backend = connect_sandboxes(as_json, plan.options.runtime)  # the runtime the cell was pinned with, checked
    ended = interruptible(lambda: unraised(run_cell(backend, plan, target)), backend, run_id, False, as_json)
    if isinstance(ended, RunnerError):
        fail(ended.exit_code, f"the rerun's result could not be written to {target} ({ended})", as_json)
    result, _ = ended
    if result.infrastructure_error is not None:
        problem = result.infrastructure_error
        fail(Exit.INFRASTRUCTURE, f"the rerun did not complete ({problem.kind}): {problem.detail}", as_json)
    differing = unmatched_pins(recorded.pins, result.pins)
    was, now = (str(r.grade.status) if r.grade else None for r in (recorded, result))
    pins, rerun = recorded.pins.to_dict(), result.pins.to_dict()
    if as_json:
        print_json(json.dumps({"recorded": was, "reproduced": now, "unmatchedPins": differing, "out": str(target)}))
    else:
        out().print(f"recorded grade: {was}; rerun: {now}  ({target})", markup=False, highlight=False)
        for key in differing:
            out().print(f"  pin not matched: {key}: {pins.get(key)!r} → {rerun.get(key)!r}",
                        markup=False, highlight=False)
    if was != now:
        raise typer.Exit(int(Exit.VERDICT))


def matrix(
    output_format: Annotated[str, typer.Option("--format", help="github: JSON for strategy.matrix.")] = "github",
    harness: Annotated[str, typer.Option(help="Columns, as for runner run.")] = "all",
    case: Annotated[str, typer.Option(help="Rows, as for runner run.")] = "all",
    shard_minutes: Annotated[float, typer.Option(min=0.1, help=(
        "The most turn time one job may hold, in minutes: a harness whose cells take longer is split into "
        "shards (each profile's cell_seconds, cells run one at a time)."))] = 20.0,
    trials: Annotated[int, typer.Option("--trials", min=1, metavar="N", help=(
        "The trials each job's runner run will make (its --trials): each cell's turn time counts N times."))] = 1,
    profiles_dir: Annotated[Path | None, typer.Option(help="Extra profiles directory.")] = None,
) -> None:
    """Print the CI job matrix: one job per harness, or per shard of a slow one, whatever the number of rows.

    Each job runs `runner run --harness <harness> --case <the same cases> --shard <shard>`; cells that run no
    turn start no job (`runner run --declared-only` writes them where the report is made).
    Example: runner matrix --format github --harness all --case all --shard-minutes 10
    """
    from runner.cli.settings import profiles_dirs
    from runner.matrix.cells import cells
    from runner.matrix.github import dumps, github_matrix

    if output_format != "github":
        fail(Exit.USAGE, f"unknown --format {output_format!r}: expected github")
    with reported():
        print_json(dumps(github_matrix(cells(harness, case, profiles_dirs(profiles_dir)), shard_minutes, trials)))
