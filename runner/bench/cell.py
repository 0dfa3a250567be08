"""Item 2: a whole reference cell against a bare ``containers.run`` of the same image doing the same calls.

``run_cell`` in this already running process (what ``runner run`` pays per cell), and
``runner exec --harness reference --case escalation --json`` as a whole process (wall time), each
against the floor: a bare ``containers.run`` of the same image, same hardening, same client and
script (the same three calls) against an MCP server that is already listening. The three are
alternated, so drift on the machine hits them alike.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from runner.bench.figures import BenchError, Figure
from runner.bench.plan import Plan
from runner.bench.process import escalated_exec, give_socket, run_measured, runner_command, turn_dir
from runner.bench.stats import median, ratio, samples
from runner.bench.world import baseline_authority

if TYPE_CHECKING:
    from runner.engine import EngineClient
    from runner.images import ImageRecord
    from runner.sandbox.backend import SandboxBackend

EXEC_ARGV = ("exec", "--harness", "reference", "--case", "escalation", "--json")


async def floor_cell(client: EngineClient, image_id: str, run_id: str, index: int) -> float:
    """One bare ``containers.run`` of the reference client (same image, hardening, script) against a
    server that is already listening; its wall time. No turn dir machinery, no attach, no record."""
    import shutil

    import anyio
    import anyio.to_thread

    from runner.conformance.behaviours import Behaviour, actions_for
    from runner.conformance.cases import get_case
    from runner.harnesses.profile import find_profile
    from runner.mcp.server import serve_mcp
    from runner.sandbox.container import CELL_LABEL, RUN_LABEL, create_kwargs, remove_labelled
    from runner.sandbox.interface import ContainerSpec
    from runner.sandbox.lease import lease_labels
    from runner.turn.turndir import container_home, placeholder_values

    case = get_case("escalation")
    profile = find_profile("reference")
    catalogue, latch, instructions = baseline_authority(None)
    actions = [a.to_json() for a in actions_for(case, Behaviour.COOPERATIVE, issue_uncatalogued=True)]
    values = placeholder_values(profile, "", None, None)
    turn = turn_dir()
    cell = f"bench.floor-cell.{index}"
    try:
        script = turn / "script.json"
        script.write_text(json.dumps({"harness": profile.id, "server": profile.mcp_server_name, "actions": actions}))
        os.chmod(script, 0o644)
        kwargs = create_kwargs(ContainerSpec(
            image_id=image_id, argv=profile.render_argv(values), turn_dir=turn,
            labels={RUN_LABEL: run_id, CELL_LABEL: cell, **lease_labels(run_id)},
            env={**profile.render_env(values), "HOME": container_home(profile)},
        ))
        kwargs.pop("log_config")  # containers.run reads the output back through the engine's log
        kwargs["stdin_open"] = False

        def run() -> bytes:
            # not detached, so docker-py returns the output as bytes
            return client.containers.run(**kwargs, remove=True, stdout=True, stderr=False)

        async with serve_mcp(turn / "mcp.sock", catalogue, latch, instructions=instructions):
            give_socket(turn / "mcp.sock")
            started = time.perf_counter()
            try:
                with anyio.fail_after(120):
                    output = await anyio.to_thread.run_sync(run, abandon_on_cancel=True)
            except TimeoutError as err:
                raise BenchError("the floor container did not finish within 120 s") from err
            wall = time.perf_counter() - started
    finally:
        await anyio.to_thread.run_sync(remove_labelled, client, f"{CELL_LABEL}={cell}")
        shutil.rmtree(turn, ignore_errors=True)
    if b'"turn.completed"' not in output or not latch.asked:
        raise BenchError(f"the floor cell did not play the script: {output.decode(errors='replace')[-300:]}")
    return wall


async def running_cell(
    backend: SandboxBackend, run_id: str, out: Path, harness: str = "reference", runtime: str = "runc"
) -> float:
    """One whole escalation cell of ``harness`` (the scripted model where it talks to one) under ``runtime``, as
    ``runner run`` pays for it, in this already running process: image check, MCP server, container, turn, judge and
    artifacts (``run_cell``); its wall time. A cell that does not escalate is a :class:`BenchError`."""
    started = time.perf_counter()
    await running_cell_report(backend, run_id, out, harness, runtime)
    return time.perf_counter() - started


async def running_cell_report(
    backend: SandboxBackend, run_id: str, out: Path, harness: str = "reference", runtime: str = "runc",
    image: ImageRecord | None = None,
) -> str:
    """:func:`running_cell`'s cell; the id of the turn's container. ``image``: the column's image, resolved once
    beforehand as ``runner run`` does (None: the cell resolves it, as ``runner exec`` does)."""
    from runner.conformance.cases import get_case
    from runner.harnesses.profile import find_profile
    from runner.matrix.cells import MatrixCell
    from runner.matrix.plan import CellOptions, plan_cells
    from runner.matrix.run_cell import run_cell
    from runner.model.settings import ModelMode
    from runner.sandbox.interface import Runtime
    from runner.turn.settings import Host

    case = get_case("escalation")
    profile = find_profile(harness)
    cell = MatrixCell(case, case.condition, profile)
    model = ModelMode.SCRIPTED if profile.model is not None else None
    # runner run plans every cell up front, with the host's environment (read at its edge, as here)
    options = CellOptions(model=model, run_id=run_id, runtime=Runtime(runtime), host=Host.from_environ(os.environ))
    [plan] = plan_cells([cell], options)
    result, report = await run_cell(backend, plan, out, image=image)
    if result.turn is None or result.turn.status != "escalated" or report is None:
        raise BenchError(f"{harness} under {runtime} did not escalate: {result.dumps()[:300]}")
    return str(report.drive.container_id)


async def measure_cell(
    client: EngineClient, backend: SandboxBackend, image_id: str, plan: Plan, run_id: str, scratch: Path
) -> list[Figure]:
    """The running cell (through ``backend``, as ``runner run``) against ``runner exec`` and the floor, a bare
    container on ``client``."""
    import anyio.to_thread

    await running_cell(backend, run_id, scratch / "cell-warmup")  # first-use imports are not a cell's cost
    walls: dict[str, list[float]] = {"cell": [], "exec": [], "turn": [], "floor": [], "imports": []}
    imports = [sys.executable, "-c", "import runner.cli, runner.matrix.run_cell, runner.turn.run_turn"]
    for index in range(plan.cell_reps):  # alternated, so drift on the machine hits both alike
        walls["imports"].append((await anyio.to_thread.run_sync(run_measured, imports, 60.0)).wall)
        argv = [*runner_command(), *EXEC_ARGV, "--out", str(scratch / f"cell-{index}")]
        measured, body = await anyio.to_thread.run_sync(escalated_exec, argv, 120.0)
        walls["exec"].append(measured.wall)
        elapsed = body.get("elapsedSeconds")
        walls["turn"].append(float(elapsed) if isinstance(elapsed, int | float) else 0.0)
        walls["floor"].append(await floor_cell(client, image_id, run_id, index))
        walls["cell"].append(await running_cell(backend, run_id, scratch / f"cell-running-{index}"))
    return cell_figures(walls, plan.cell_reps)


def cell_figures(walls: dict[str, list[float]], reps: int) -> list[Figure]:
    """The figures of item 2 from its samples (seconds): ``cell``, ``exec``, ``turn``, ``floor``, ``imports``."""
    exec_m, floor_m, turn_m = median(walls["exec"]), median(walls["floor"]), median(walls["turn"])
    cell_m = median(walls["cell"])
    outside = [w - t for w, t in zip(walls["exec"], walls["turn"], strict=True)]
    note = f"median of {reps}"
    return [
        Figure("cell.exec.median", 2, "reference cell: runner exec (wall)", exec_m, "s",
               "runner " + " ".join(EXEC_ARGV) + ", process wall time", note, {"samples": samples(walls["exec"])}),
        Figure("cell.turn.median", 2, "… of which the turn (elapsedSeconds)", turn_m, "s",
               "the turn's own elapsedSeconds, from the --json output", note, {"samples": [*walls["turn"]]}),
        Figure("cell.outside.median", 2, "… of which outside the turn", median(outside), "s",
               "exec wall − elapsedSeconds: interpreter, imports, engine connect, image lookup, cell files", note,
               {"samples": samples(outside)}),
        Figure("cell.imports.median", 2, "… python + runner imports alone", median(walls["imports"]), "s",
               "python -c 'import runner.cli, runner.matrix.run_cell, runner.turn.run_turn', wall", note,
               {"samples": samples(walls["imports"])}),
        Figure("cell.floor.median", 2, "reference cell floor: containers.run", floor_m, "s",
               "docker-py containers.run, same image/hardening/script, server already listening", note,
               {"samples": samples(walls["floor"])}),
        Figure("cell.running.median", 2, "reference cell in a running runner", cell_m, "s",
               "run_cell in this process (what runner run pays per cell): image check, server, container, "
               "turn, judge, artifacts", note, {"samples": samples(walls["cell"])}),
        Figure("cell.ratio.median", 2, "cell / floor (median wall)", ratio(cell_m, floor_m), "×",
               "median in-process cell wall ÷ median floor wall: both in a running process, like for like",
               detail={"turnOverFloor": ratio(turn_m, floor_m)}),
        Figure("cell.exec.ratio", 2, "runner exec process / floor (median wall)", ratio(exec_m, floor_m), "×",
               "median runner exec process wall ÷ median floor wall, alternated in this run: adds the "
               "interpreter, imports and engine connect, paid once per command"),
    ]
