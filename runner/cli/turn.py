"""``runner exec`` (one turn: one case through one CLI in its container) and ``runner gc``, with the signal
handling every command that starts containers shares: Ctrl-C or SIGTERM cancels the work, and the run's
containers are removed however it ends."""

from __future__ import annotations

import json
import secrets
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from runner.cli.render import err, escape, fail, out, print_turn_summary, reported, say
from runner.conformance.behaviours import Behaviour
from runner.errors import Exit, InfrastructureError

if TYPE_CHECKING:
    import docker

    from runner.conformance.jsonmodel import JsonValue
    from runner.matrix.plan import CellPlan
    from runner.matrix.result import CellResult
    from runner.sandbox.interface import Runtime
    from runner.turn.runtime import TurnReport

T = TypeVar("T")
Trial = tuple["CellResult", "TurnReport | None"]

BEHAVIOUR_HELP = "How the CLI conducts itself: " + ", ".join(b.value for b in Behaviour)
TRANSPORT_HELP = (
    "How the container reaches the turn's files and sockets: mount (the turn dir bind-mounted; the engine must "
    "share runner's files), stream (the engine API only: archive copies and an exec stream), or auto (mount where "
    "a probe finds it works, else stream). The result records which ran."
)
RUNTIME_ENV = "RUNNER_RUNTIME"  # runner.sandbox.interface.RUNTIME_ENV, spelt here so that --help loads no sandbox
RUNTIME_HELP = (
    "The OCI runtime the CLI's container runs under: runc (the engine's default: the host's kernel behind the "
    "container's hardening) or runsc (gVisor: a kernel of its own between the CLI and the host's; set it up once "
    "with `sudo make engine RUNTIME=runsc`). The result pins it."
)
PROTOCOL_HELP = (
    "The SharedOS protocol epoch the turn's MCP server speaks: 1 (what upstream has released, 1.0.0-preview; the "
    "default) or 2 (ADR 0027, unreleased upstream: _meta[\"sharedos/protocolVersion\"] on initialize, tools/list "
    "and every tool result, and a client's pin of another epoch refused with -32602). The result pins it."
)
TRIALS_HELP = (
    "Run each cell N times, one trial after another: trial 1 in the cell's directory, trial k in its trial-<k>/ "
    "(a cell graded from what is declared is written once). The report shows the runs side by side with their "
    "stability; on the scripted model the trials are expected to be identical."
)
FAULT_HELP = (
    "Make the scripted model fail on purpose, from conversation request STEP (1-based, default 1; "
    "or after-ask: the first request after the ask) on: error (HTTP 500 with the dialect's error "
    "body), stall (never answers; the deadline settles the turn), early-close (the stream starts, "
    "then the connection drops before its terminal event). Scripted model only."
)
DIALECT_HELP = (
    "The model API dialect a column that can choose speaks (the model column): anthropic, openai-chat, "
    "openai-responses or gemini (default: the profile's model.dialect)."
)


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


def check_out(path: Path, as_json: bool) -> None:
    """Refuse to start when the output directory cannot take the artifacts (nothing half-written)."""
    from runner.turn.preflight import check_output_dir

    with reported(as_json):
        check_output_dir(path)


def connect_engine(as_json: bool = False, runtime: Runtime | None = None) -> docker.DockerClient:
    """The engine, once it answers and has ``runtime`` (an infrastructure error naming the fix, before any turn)."""
    from runner.sandbox.engine import connect
    from runner.sandbox.probe import WIRING

    with reported(as_json):
        client = connect()
        if runtime is not None:
            WIRING.check_runtime(client, runtime)
        return client


def interruptible(
    job: Callable[[], Awaitable[T]], client: docker.DockerClient | None, run_id: str, keep: bool, as_json: bool
) -> T:
    """Run ``job()`` (a coroutine factory); Ctrl-C or SIGTERM cancels it, and its teardown still
    removes every container of the run (``client`` None: the job started none)."""
    import anyio

    from runner.cli.settings import reaper_enabled
    from runner.sandbox.container import RUN_LABEL, remove_labelled
    from runner.sandbox.reaper import Reaper

    # the lease: if this process dies where no finally runs (SIGKILL), the reaper removes the run's containers
    reaper = Reaper(run_id, enabled=reaper_enabled()).start() if client is not None and not keep else None
    result: list[T] = []
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
        with reported(as_json):
            anyio.run(main)
    finally:
        if not keep and client is not None:
            try:
                remove_labelled(client, f"{RUN_LABEL}={run_id}")
                if reaper is not None:
                    reaper.release()
            except InfrastructureError as error:
                if reaper is not None:
                    reaper.abandon()
                err().print(f"[yellow]runner:[/] could not remove the run's containers ({escape(str(error))}); "
                            f"`runner gc` removes them once the engine answers", highlight=False)
    if interrupted or not result:
        fail(Exit.INTERRUPTED, "interrupted; the run's containers and socket directories were removed", as_json)
    return result[0]


def exec_(
    harness: Annotated[str, typer.Option(help="Harness id (a profile in harness_profiles/), e.g. reference.")] = "",
    case: Annotated[str, typer.Option(help="Case id, e.g. escalation or escalation-refused.")] = "escalation",
    condition: Annotated[str | None, typer.Option(help="The row's condition (default: the case's first).")] = None,
    behaviour: Annotated[str, typer.Option(help=BEHAVIOUR_HELP)] = "cooperative",
    deadline: Annotated[float | None, typer.Option(help="Turn deadline in seconds (default: the profile's).")] = None,
    keep: Annotated[bool, typer.Option(help="Keep the container after the turn, for inspection.")] = False,
    trials: Annotated[int, typer.Option("--trials", min=1, metavar="N", help=TRIALS_HELP)] = 1,
    out_dir: Annotated[Path | None, typer.Option("--out", help="Directory for this turn's files.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")] = False,
    model: Annotated[str | None, typer.Option(
        "--model", help="scripted or live (default: live when the harness's credentials are set, else scripted)."
    )] = None,
    model_fault: Annotated[str | None, typer.Option("--model-fault", metavar="KIND[@STEP]", help=FAULT_HELP)]
    = None,
    model_dialect: Annotated[str | None, typer.Option("--model-dialect", metavar="DIALECT", help=DIALECT_HELP)]
    = None,
    profile_path: Annotated[Path | None, typer.Option("--profile", help="Use this profile file instead of --harness.")]
    = None,
    transport: Annotated[str, typer.Option(help=TRANSPORT_HELP)] = "auto",
    runtime: Annotated[str, typer.Option(envvar=RUNTIME_ENV, help=RUNTIME_HELP)] = "runc",
    protocol: Annotated[str | None, typer.Option(metavar="1|2", help=PROTOCOL_HELP)] = None,
    profiles_dir: Annotated[Path | None, typer.Option(help="Look up --harness here first ($RUNNER_PROFILES_DIR too).")]
    = None,
) -> None:
    """Run one turn: one case through one CLI in its container, and print how it settled.

    Example: runner exec --harness reference --case escalation --behaviour persistent --json
    """
    from runner.cli.settings import cell_options, profiles_dirs
    from runner.conformance.behaviours import parse_behaviour
    from runner.conformance.cases import get_case
    from runner.harnesses.profile import find_profile, known_harnesses, load_profile
    from runner.matrix.cell import run_cell
    from runner.matrix.cells import Cell
    from runner.matrix.plan import plan_cells, with_trials

    search = profiles_dirs(profiles_dir)
    with reported(as_json):
        case_obj = get_case(case)
        behaviour_obj = parse_behaviour(behaviour)
        if profile_path is not None:
            profile = load_profile(profile_path)
        elif harness:
            profile = find_profile(harness, search)
        else:
            fail(Exit.USAGE, f"give --harness (one of: {', '.join(known_harnesses(search))}) or --profile",
                 as_json)
    if deadline is not None and deadline <= 0:
        fail(Exit.USAGE, "--deadline must be a positive number of seconds", as_json)
    if profile.unavailable:
        fail(Exit.INFRASTRUCTURE, f"the {profile.id} column is unavailable here: {profile.unavailable}", as_json)
    run_id = new_run_id()
    with reported(as_json):
        options = cell_options(behaviour=behaviour_obj, run_id=run_id, model=model, model_fault=model_fault,
                               model_dialect=model_dialect, transport=transport, deadline=deadline, keep=keep,
                               run_unsupported=True, runtime=runtime, protocol=protocol)
        cell = Cell(case_obj, case_obj.condition_for(condition), profile)
        [plan] = plan_cells([cell], options, fault_every_column=True)
    target = out_dir or Path("runs") / run_id / cell.id
    progress = (lambda _msg: None) if as_json else say
    if plan.model.mode != "none":
        shown = f"; fault {plan.model.fault.spec}" if plan.model.fault else ""
        shown += f"; dialect {plan.dialect}" if plan.chooses_dialect else ""
        err().print(f"[bold]model: {plan.model.mode}[/] ({escape(plan.model.why + shown)})", highlight=False)
    check_out(target, as_json)
    client = connect_engine(as_json, options.runtime)
    plans = with_trials([plan], trials)
    if len(plans) == 1:
        result, report = interruptible(lambda: run_cell(client, plan, target, progress), client, run_id, keep,
                                       as_json)
        _print_exec(result, report, as_json)
        raise_on_problem([result])
        return
    runs = interruptible(lambda: _exec_trials(client, plans, target, progress), client, run_id, keep, as_json)
    _print_exec_trials(runs, target, as_json)
    raise_on_problem([result for result, _ in runs])


def _exec_body(result: CellResult, report: TurnReport | None) -> dict[str, JsonValue]:
    """``exec --json``: the turn as its report says it, then the cell as its result says it."""
    problem = result.infrastructure_error
    return {**(report.to_json() if report else {}), "cell": result.cell.to_dict(),
            "grade": result.grade.to_dict() if result.grade else None, "pins": result.pins.to_dict(),
            "repro": result.repro, "transport": result.transport,
            "infrastructureError": problem.to_dict() if problem else None}


def _print_exec(result: CellResult, report: TurnReport | None, as_json: bool) -> None:
    if as_json:
        print(json.dumps(_exec_body(result, report), ensure_ascii=False))
    elif report is not None:
        print_turn_summary(report, result)
    else:
        out().print(result.evidence, markup=False, highlight=False)


async def _exec_trials(client: docker.DockerClient, plans: list[CellPlan], target: Path,
                       progress: Callable[[str], None]) -> list[Trial]:
    """``exec --trials N``: the trials one after another, each in its own directory."""
    from runner.matrix.artifact import trial_dir
    from runner.matrix.cell import run_cell

    runs: list[Trial] = []
    image = None  # found or built by the first trial that reaches a turn, then handed to the rest
    for plan in plans:
        progress(f"trial {plan.trial} of {len(plans)}")
        result, report = await run_cell(client, plan, trial_dir(target, plan.trial), progress, image=image)
        runs.append((result, report))
        if report is not None:
            image = report.request.image
    return runs


def _print_exec_trials(runs: list[Trial], target: Path, as_json: bool) -> None:
    """One summary per trial, then the series' stability; a scripted series whose trials differ is a finding."""
    from runner.matrix.artifact import trial_dir
    from runner.matrix.series import Group, findings, stability

    results = [result for result, _ in runs]
    group = Group({})
    for result in results:
        group.add(result)
    found = findings([group])
    if as_json:
        print(json.dumps({"trials": [_exec_body(result, report) for result, report in runs],
                          "stability": stability(results), "findings": found}, ensure_ascii=False))
    else:
        for result, report in runs:
            out().print(f"\ntrial {result.trial} of {len(runs)}  ({trial_dir(target, result.trial)})", markup=False,
                        highlight=False)
            _print_exec(result, report, False)
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


def gc(as_json: Annotated[bool, typer.Option("--json")] = False) -> None:
    """Remove every container a runner run left behind (found by label), e.g. after a SIGKILL."""
    from runner.sandbox.container import OWNER_LABEL, remove_labelled

    client = connect_engine(as_json)
    with reported(as_json):
        removed = remove_labelled(client, f"{OWNER_LABEL}=runner")
    if as_json:
        print(json.dumps({"removed": removed}))
    else:
        out().print(f"removed {len(removed)} container(s)")


