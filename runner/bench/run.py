"""The command: parse the flags, check the engine and the lock, run each section, write and print the report."""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from runner.bench.figures import BenchError, Figure, not_measured
from runner.bench.machine import load_average, machine_info, versions_info
from runner.bench.plan import SECTIONS, Plan, plan_for
from runner.bench.report import document, table

if TYPE_CHECKING:
    from runner.engine import EngineClient
    from runner.images.settings import ImageSettings

# the headline figures of each section, reported as not measured when the section fails
SECTION_FIGURES: dict[str, list[tuple[str, int, str, str]]] = {
    "mcp": [("mcp.real.p50", 1, "tools/call real p50", "ms"), ("mcp.ratio.p50", 1, "tools/call real / floor", "×")],
    "cell": [("cell.ratio.median", 2, "cell / floor (median wall)", "×"),
             ("cell.exec.ratio", 2, "runner exec process / floor (median wall)", "×")],
    "matrix": [("matrix.speedup", 3, "matrix speedup -j 2 / -j 1", "×"),
               ("rss.matrix.j2", 4, "peak RSS, runner run -j 2", "MiB")],
    "flood": [("rss.flood", 4, "peak RSS, flood turn", "MiB")],
    "images": [("images.warm", 5, "warm images build --all", "s")],
    "startup": [("startup.help.ratio", 6, "runner --help / python -c pass", "×"),
                ("startup.cases.ratio", 6, "runner cases / python -c pass", "×")],
    "runtime": [("runtime.ratio.median", 7, "runsc / runc, median over the columns", "×")],
    "phases": [("phases.runnerExec.worst", 8, "runner's share in runner exec, worst column", "s"),
               ("phases.runnerRun.worst", 8, "runner's share per cell in runner run, worst column", "s")],
}


def failed(section: str, why: str) -> list[Figure]:
    return [not_measured(key, item, label, unit, why) for key, item, label, unit in SECTION_FIGURES[section]]


async def measure(
    client: EngineClient, plan: Plan, image_id: str, run_id: str, scratch: Path, say: Callable[[str], None],
    images: ImageSettings,
) -> list[Figure]:
    import anyio.to_thread

    from runner.bench.cell import measure_cell
    from runner.bench.gvisor import measure_runtime
    from runner.bench.images import measure_images
    from runner.bench.matrix import measure_flood, measure_matrix
    from runner.bench.phases import measure_phases
    from runner.bench.roundtrip import measure_mcp
    from runner.bench.startup import measure_startup
    from runner.sandbox.docker_backend import DockerBackend

    backend = DockerBackend(client)  # the cells' sandboxes, as runner run has them; the floor is measured on client
    figures: list[Figure] = []
    steps: dict[str, Callable[[], Awaitable[list[Figure]]]] = {
        "mcp": lambda: measure_mcp(client, image_id, plan, run_id),
        "cell": lambda: measure_cell(client, backend, image_id, plan, run_id, scratch),
        "matrix": lambda: anyio.to_thread.run_sync(measure_matrix, plan, scratch, say),
        "flood": lambda: anyio.to_thread.run_sync(measure_flood, scratch),
        "images": lambda: anyio.to_thread.run_sync(measure_images, images),
        "startup": lambda: anyio.to_thread.run_sync(measure_startup, plan, say),
        "runtime": lambda: measure_runtime(client, backend, plan, run_id, scratch, say, images),
        "phases": lambda: measure_phases(client, backend, plan, run_id, scratch, say, images),
    }
    for section in plan.sections:
        say(f"{section} …")
        started = time.perf_counter()
        try:
            figures += await steps[section]()
        except Exception as err:  # one section that cannot be measured does not cost the others
            why = str(err) if isinstance(err, BenchError) else f"{type(err).__name__}: {err}"
            say(f"[red]{section}: not measured[/] — {why}")
            figures += failed(section, why)
        say(f"{section} done in {time.perf_counter() - started:.1f} s")
    return figures


def parse(argv: Sequence[str] | None) -> tuple[argparse.Namespace, Plan]:
    import runner.bench

    summary = (runner.bench.__doc__ or "").split("\n\n")[0]
    parser = argparse.ArgumentParser(prog="python -m runner.bench", description=summary)
    parser.add_argument("--out", type=Path, default=Path("bench-results.json"), help="where the JSON goes")
    parser.add_argument("--quick", action="store_true", help="a smaller sample (fewer calls, repetitions, cells)")
    parser.add_argument("--only", help=f"comma-separated sections to run: {','.join(SECTIONS)}")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed or not measured")
    parser.add_argument("--harness", dest="harnesses",
                        help="comma-separated harnesses the phases section measures (default: all)")
    args = parser.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()] if args.only else None
    if only and (unknown := sorted(set(only) - set(SECTIONS))):
        parser.error(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}")
    harnesses = [c.strip() for c in args.harnesses.split(",") if c.strip()] if args.harnesses else []
    return args, plan_for(args.quick, only, harnesses)


def main(environ: Mapping[str, str], argv: Sequence[str] | None = None) -> int:
    """``python -m runner.bench``, on the engine the host's variables ``environ`` name."""
    args, plan = parse(argv)

    import shutil

    import anyio
    from rich.console import Console

    from runner.engine import EngineError, connect
    from runner.images import ImageSettings, current_keys, read_build, verify_lock
    from runner.sandbox.container import RUN_LABEL, remove_labelled

    # on a terminal the table fits it; written to a pipe or a file it is never folded (logs and grep see whole rows)
    err = Console(stderr=True) if sys.stderr.isatty() else Console(stderr=True, soft_wrap=True, width=1 << 16)
    out = Console() if sys.stdout.isatty() else Console(soft_wrap=True, width=1 << 16)

    def say(text: str) -> None:
        err.print(f"[dim]bench[/] {text}", highlight=False)

    images = ImageSettings.from_environ(environ)  # where the images and their records are, read here once
    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    try:
        client = connect(environ)
        problems = verify_lock(client, images)
    except EngineError as error:
        err.print(f"[red]no engine[/]: {error}")
        return 5
    if problems:
        for problem in problems:
            err.print(f"[red]✗[/] {problem}", highlight=False)
        err.print("an image's lock.json is stale or its images are not all built here; the bench never builds: "
                  "run `make images` first")
        return 5
    reference = read_build("reference", images, current_keys(client, "reference", images).build_key)
    if reference is None:
        err.print("no reference image is built here; run `make images` first")
        return 5
    machine, versions = machine_info(client), versions_info(reference)
    say(f"{machine['cores']} cores, {machine['memoryMiB']:.0f} MiB, kernel {machine['kernel']}, "
        f"docker {machine['docker'].get('server')}; sections {', '.join(plan.sections)}"
        f"{' (quick)' if plan.quick else ''}")
    run_id = f"bench-{int(time.time())}-{os.getpid()}"
    scratch = Path(tempfile.mkdtemp(prefix="runner-bench-runs-"))
    try:
        figures = anyio.run(measure, client, plan, reference.image_id, run_id, scratch, say, images)
    finally:
        remove_labelled(client, f"{RUN_LABEL}={run_id}")  # only this bench's own containers, if any were left
        shutil.rmtree(scratch, ignore_errors=True)
    machine["loadAverageAtEnd"] = load_average()
    doc = document(figures, machine, versions, plan.to_json(), started_at, time.perf_counter() - started)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    out.print(table(doc))
    rows = next((f["detail"].get("rows") for f in doc["figures"] if f["key"] == "phases.table"), None)
    if isinstance(rows, list) and rows:
        from runner.bench.phases import phase_table

        out.print(phase_table([r for r in rows if isinstance(r, dict)]))
    summary = doc["summary"]
    out.print(f"{summary['pass']} PASS, {summary['miss']} MISS, {summary['notMeasured']} not measured; "
              f"wrote {args.out}", highlight=False)
    if args.strict and (summary["miss"] or summary["notMeasured"]):
        return 1
    return 0
