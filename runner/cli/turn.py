"""``runner exec`` (one turn: one case through one CLI in its container) and ``runner gc``. What they share with the
other commands that start containers (help texts, the engine, the signal handling) is :mod:`runner.cli.shared`."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from runner.cli.render import PricesFile, err, escape, fail, out, print_json, print_turn_summary, reported, say
from runner.cli.settings import option
from runner.cli.shared import check_out, connect_sandboxes, interruptible, new_run_id, unraised
from runner.errors import Exit, RunnerError
from runner.matrix.options import (
    BEHAVIOUR,
    DEADLINE,
    KEEP,
    MODEL,
    MODEL_DIALECT,
    MODEL_FAULT,
    PROTOCOL,
    RUNTIME,
    TRANSPORT,
    TRIALS,
)

if TYPE_CHECKING:
    from runner.conformance.jsonmodel import JsonValue
    from runner.conformance.prices import Prices
    from runner.matrix.plan import CellPlan
    from runner.matrix.result import CellResult
    from runner.sandbox.backend import SandboxBackend
    from runner.turn.run_turn import TurnReport

Trial = tuple["CellResult", "TurnReport | None"]


def exec_(
    ctx: typer.Context,
    harness: Annotated[str, typer.Option(help="Harness id (see runner harnesses), e.g. reference.")] = "",
    case: Annotated[str, typer.Option(help="Case id, e.g. escalation or escalation-refused.")] = "escalation",
    condition: Annotated[str | None, typer.Option(help="The row's condition (default: the case's first).")] = None,
    behaviour: Annotated[str, option(BEHAVIOUR)] = BEHAVIOUR.default,
    deadline: Annotated[float | None, option(DEADLINE)] = DEADLINE.default,
    keep: Annotated[bool, option(KEEP)] = KEEP.default,
    trials: Annotated[int, option(TRIALS)] = TRIALS.default,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Directory for this turn's files.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")] = False,
    model: Annotated[str | None, option(MODEL)] = MODEL.default,
    model_fault: Annotated[str | None, option(MODEL_FAULT)] = MODEL_FAULT.default,
    model_dialect: Annotated[str | None, option(MODEL_DIALECT)] = MODEL_DIALECT.default,
    profile_path: Annotated[Path | None, typer.Option("--profile", help="Use this profile file instead of --harness.")]
    = None,
    transport: Annotated[str, option(TRANSPORT)] = TRANSPORT.default,
    runtime: Annotated[str, option(RUNTIME)] = RUNTIME.default,
    protocol: Annotated[str | None, option(PROTOCOL)] = PROTOCOL.default,
    profiles_dir: Annotated[Path | None, typer.Option(help="Look up --harness here first ($RUNNER_PROFILES_DIR too).")]
    = None,
    prices_file: PricesFile = None,
) -> None:
    """Run one turn: one case through one CLI in its container, and print how it settled.

    Example: runner exec --harness reference --case escalation --behaviour persistent --json
    """
    # the cell's settings (behaviour, model, ...) are parsed from ctx.params, each by its row
    from runner.cli.settings import cell_options, profiles_dirs
    from runner.conformance.cases import get_case
    from runner.conformance.prices import load_prices
    from runner.harnesses.profile import find_profile, known_harnesses, load_profile
    from runner.matrix.cells import MatrixCell
    from runner.matrix.plan import plan_cells, with_trials
    from runner.matrix.run_cell import run_cell

    search = profiles_dirs(profiles_dir)
    with reported(as_json):
        prices = load_prices(prices_file) if prices_file is not None else None  # before any turn costs anything
        case_obj = get_case(case)
        if profile_path is not None:
            profile = load_profile(profile_path)
        elif harness:
            profile = find_profile(harness, search)
        else:
            fail(Exit.USAGE, f"give --harness (one of: {', '.join(known_harnesses(search))}) or --profile",
                 as_json)
    if profile.unavailable:
        fail(Exit.INFRASTRUCTURE, f"the {profile.id} harness is unavailable here: {profile.unavailable}", as_json)
    run_id = new_run_id()
    with reported(as_json):
        options = cell_options(ctx.params, run_id=run_id, run_unsupported=True)
        cell = MatrixCell(case_obj, case_obj.condition_for(condition), profile)
        [plan] = plan_cells([cell], options, fault_every_harness=True)
    target = out_dir or Path("runs") / run_id / cell.id
    progress = (lambda _msg: None) if as_json else say
    if plan.model.mode != "none":
        shown = f"; fault {plan.model.fault.spec}" if plan.model.fault else ""
        shown += f"; dialect {plan.dialect}" if plan.chooses_dialect else ""
        err().print(f"[bold]model: {plan.model.mode}[/] ({escape(plan.model.why + shown)})", highlight=False)
    check_out(target, as_json, run_id)
    backend = connect_sandboxes(as_json, options.runtime)
    plans = with_trials([plan], trials)
    if len(plans) == 1:
        one = interruptible(lambda: unraised(run_cell(backend, plan, target, progress)), backend, run_id,
                            options.keep, as_json)
        if isinstance(one, RunnerError):
            fail(one.exit_code, f"the turn's result could not be written to {target} ({one})", as_json)
        result, report = one
        _print_exec(result, report, as_json, prices)
        raise_on_problem([result])
        return
    runs = interruptible(lambda: unraised(_exec_trials(backend, plans, target, progress)), backend, run_id,
                         options.keep, as_json)
    if isinstance(runs, RunnerError):
        fail(runs.exit_code, f"a trial's result could not be written below {target} ({runs})", as_json)
    _print_exec_trials(runs, target, as_json, prices)
    raise_on_problem([result for result, _ in runs])


def _exec_body(result: CellResult, report: TurnReport | None, prices: Prices | None = None) -> dict[str, JsonValue]:
    """``exec --json``: the turn as its report says it, then the cell as its result says it, ending with why the
    cell's attempt failed (its cause, kind and evidence line as ``result.json`` records it; null when it did not)
    and, with ``prices``, what its tokens cost (``cost``: currency, amount, unpriced models)."""
    from runner.matrix import report_figures as figures

    problem, why = result.infrastructure_error, result.why
    cost = {"cost": figures.cost([result], prices).to_json()} if prices is not None else {}
    return {**(report.to_json() if report else {}), "cell": result.cell.to_dict(),
            "grade": result.grade.to_dict() if result.grade else None, "pins": result.pins.to_dict(),
            "repro": result.repro, "transport": result.transport,
            "infrastructureError": problem.to_dict() if problem else None,
            "failure": why.to_dict() if why else None, **cost}


def _print_exec(result: CellResult, report: TurnReport | None, as_json: bool, prices: Prices | None = None) -> None:
    if as_json:
        print_json(json.dumps(_exec_body(result, report, prices), ensure_ascii=False))
    elif report is not None:
        print_turn_summary(report, result, prices)
    else:
        out().print(result.evidence, markup=False, highlight=False)


async def _exec_trials(backend: SandboxBackend, plans: list[CellPlan], target: Path,
                       progress: Callable[[str], None]) -> list[Trial]:
    """``exec --trials N``: the trials one after another, each in its own directory."""
    from runner.matrix.artifact import trial_dir
    from runner.matrix.run_cell import run_cell

    runs: list[Trial] = []
    image = None  # found or built by the first trial that reaches a turn, then handed to the rest
    for plan in plans:
        progress(f"trial {plan.trial} of {len(plans)}")
        result, report = await run_cell(backend, plan, trial_dir(target, plan.trial), progress, image=image)
        runs.append((result, report))
        if report is not None:
            image = report.request.image
    return runs


def _print_exec_trials(runs: list[Trial], target: Path, as_json: bool, prices: Prices | None = None) -> None:
    """One summary per trial, then the series' stability; a scripted series whose trials differ is a finding."""
    from runner.matrix.artifact import trial_dir
    from runner.matrix.series import Group, findings, stability

    results = [result for result, _ in runs]
    group = Group({})
    for result in results:
        group.add(result)
    found = findings([group])
    if as_json:
        print_json(json.dumps({"trials": [_exec_body(result, report, prices) for result, report in runs],
                               "stability": stability(results), "findings": found}, ensure_ascii=False))
    else:
        for result, report in runs:
            out().print(f"\ntrial {result.trial} of {len(runs)}  ({trial_dir(target, result.trial)})", markup=False,
                        highlight=False)
            _print_exec(result, report, False, prices)
        out().print(f"\nstability: {stability(results)}", markup=False, highlight=False)
    for finding in found:
        err().print(f"[bold yellow]finding:[/] {escape(finding)}", highlight=False)


def raise_on_problem(results: list[CellResult]) -> None:
    """Exit 5 when any turn hit an infrastructure error, naming it."""
    problems = [r.infrastructure_error for r in results if r.infrastructure_error is not None]
    for problem in problems:
        err().print(f"[bold red]runner:[/] {escape(f'infrastructure error ({problem.kind}): {problem.detail}')}",
                    highlight=False)
    if problems:
        raise typer.Exit(int(Exit.INFRASTRUCTURE))


def gc(
    runs: Annotated[list[str] | None, typer.Option("--run", metavar="ID", help=(
        "Remove this run's containers and turn dirs (repeatable) whatever gc can tell of it, unless its runner is "
        "live on this host: for a run of another machine sharing the engine, or of an older runner."))] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")] = False,
) -> None:
    """Remove what runs that are gone left behind (after a SIGKILL, a crash): their containers, and their turn dirs in
    the temporary directory ($TMPDIR). A run is gone when its runner no longer holds its lease on this host; a live
    run's, another host's and an unmarked container are left alone, and said so.

    Example: runner gc --json · runner gc --run 20261206T050500Z-1a2b3c
    """
    from collections import Counter

    from runner.turn.turndir import sweep_turn_dirs

    named = set(runs) if runs else None
    backend = connect_sandboxes(as_json)
    with reported(as_json):
        engine = backend.gc(named)
    swept = sweep_turn_dirs(runs=named)  # after the containers: nothing of a dead run writes there any more
    if as_json:
        print_json(json.dumps({
            "removed": [c.id for c in engine.removed], "containers": [c.to_json() for c in engine.removed],
            "kept": [c.to_json() for c in engine.kept], "turnDirs": {"removed": swept.removed, "left": swept.left},
            "leases": swept.leases,
        }, ensure_ascii=False))
        return
    kept = Counter(c.verdict.value for c in engine.kept)
    left = f"; left {len(engine.kept)} alone ({', '.join(f'{n} {why}' for why, n in sorted(kept.items()))})"
    out().print(f"removed {len(engine.removed)} container(s) of runs that are gone{left if engine.kept else ''}; "
                f"removed {len(swept.removed)} turn dir(s) from the temporary directory", markup=False,
                highlight=False)
    for path, why in swept.left.items():
        if why != "live":
            err().print(f"[yellow]runner:[/] {escape(f'left {path}: {why}')}", highlight=False)


