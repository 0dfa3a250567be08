"""``python -m runner.bench`` (``make bench``): what runner costs, against its floor, measured side by side.

Every figure is a ratio or a percentile taken in this one run, next to the machine it ran on (cores,
memory, kernel, Docker) and the versions involved (runner, the MCP SDK, Python); each has its target
and a verdict (``PASS`` / ``MISS``; ``not measured`` when this run could not take it, ``info`` for a
figure without a target). The table goes to stdout, the progress to stderr, and everything (samples
included) to ``bench-results.json`` (``--out``).

1. **MCP ``tools/call`` round trip** (``files.read`` of ``["Workspace","policy.md"]`` against the
   baseline world's real envelope and escalation latch, its tool-call budget raised so every call is
   a real read). *Real*: :mod:`runner.bench_client` runs in the reference image under runner's own
   :class:`ContainerSpec` (network none, uid 1000, read-only root, every capability dropped), reaches
   a host :func:`serve_mcp` through ``socat STDIO UNIX-CONNECT:/run/runner/mcp.sock`` on the mounted
   turn dir, and times each call inside the container. *Floor*: the same client loop and the same
   server handlers (one ``_Session`` of :mod:`runner.mcp.server`) on the SDK's in-memory streams.
2. **A whole reference cell**: ``runner exec --harness reference --case escalation --json`` (wall
   time of the process), against a bare ``containers.run`` of the same image, same hardening, same
   client and script (the same three calls) against an MCP server that is already listening.
3. **Matrix throughput** on the scripted model: ``runner run --harness reference`` with ``-j 1`` and
   with ``-j 2`` (``--per-harness`` raised with it, else one column never runs two cells at once),
   each into a fresh directory; only cells that ran a turn count.
4. **Peak RSS of the runner process** (``wait4``'s ``ru_maxrss``, as ``/usr/bin/time -v`` reports it;
   containers are the engine's children, not runner's, so they are not in it) during a ``flood`` turn
   and during the ``-j 2`` matrix of item 3.
5. **Images**: a warm ``runner images build --all``; the cold steps as each recorded itself (timings.py).

The bench never builds an image: it checks ``images/lock.json`` against the engine and the recipes
first and stops if anything is stale (``make bench`` runs ``make setup`` before it).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Any, Literal, cast

SCHEMA = "runner.bench/1"
PASS, MISS, NOT_MEASURED, INFO = "PASS", "MISS", "not measured", "info"
SECTIONS = ("mcp", "cell", "matrix", "flood", "images")
ROUNDTRIP_TOOL = "files.read"
ROUNDTRIP_ARGUMENTS: dict[str, Any] = {"path": ["Workspace", "policy.md"]}
MIB = 1024 * 1024
COLD_NOT_MEASURED = (
    "no cold step is recorded on this machine: each step writes its own time into "
    "$RUNNER_CACHE_DIR/cold-timings/ when it really runs (engine install and start, a base bootstrap, an "
    "image build); a machine set up before that existed has none until something is rebuilt"
)
COLD_LABELS = {"engine.install": "cold: install docker.io + mmdebstrap", "engine.start": "cold: start dockerd"}

Op = Literal["<", "<=", ">", ">="]


# ------------------------------------------------------------------------------------------- pure


def percentile(values: Sequence[float], q: float) -> float:
    """The ``q``-th percentile (0..100), linear between closest ranks (numpy's default, R's type 7)."""
    if not values:
        raise ValueError("a percentile needs at least one sample")
    if not 0 <= q <= 100:
        raise ValueError(f"percentile {q} is outside 0..100")
    ordered = sorted(values)
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


def median(values: Sequence[float]) -> float:
    return percentile(values, 50)


def ratio(numerator: float | None, denominator: float | None) -> float | None:
    """``numerator / denominator``; None when either is missing or the denominator is not positive."""
    if numerator is None or denominator is None or denominator <= 0:
        return None
    return numerator / denominator


def summarise(values: Sequence[float], digits: int = 4) -> dict[str, Any]:
    """n, p50, p95, min, max and mean of a sample (empty: n 0 and nothing else)."""
    if not values:
        return {"n": 0}
    return {
        "n": len(values),
        "p50": round(percentile(values, 50), digits),
        "p95": round(percentile(values, 95), digits),
        "min": round(min(values), digits),
        "max": round(max(values), digits),
        "mean": round(sum(values) / len(values), digits),
    }


@dataclass(frozen=True)
class Target:
    op: Op
    threshold: float

    def met(self, value: float) -> bool:
        if self.op == "<":
            return value < self.threshold
        if self.op == "<=":
            return value <= self.threshold
        if self.op == ">":
            return value > self.threshold
        return value >= self.threshold

    def __str__(self) -> str:
        return f"{self.op} {self.threshold:g}"

    def to_json(self) -> dict[str, Any]:
        return {"op": self.op, "threshold": self.threshold}


def verdict(value: float | None, target: Target | None) -> str:
    if value is None:
        return NOT_MEASURED
    if target is None:
        return INFO
    return PASS if target.met(value) else MISS


TARGETS: dict[str, Target] = {
    "mcp.real.p50": Target("<", 1.0),  # ms
    "mcp.ratio.p50": Target("<", 4.0),
    "cell.ratio.median": Target("<", 1.3),
    "matrix.speedup": Target(">=", 1.6),
    "rss.flood": Target("<", 200.0),  # MiB
    "rss.matrix.j2": Target("<", 300.0),  # MiB
    "images.warm": Target("<", 5.0),  # s
}


@dataclass
class Figure:
    key: str
    item: int
    label: str
    value: float | None
    unit: str
    how: str = ""
    note: str = ""
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def target(self) -> Target | None:
        return TARGETS.get(self.key)

    @property
    def verdict(self) -> str:
        return verdict(self.value, self.target)

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "item": self.item,
            "label": self.label,
            "value": None if self.value is None else round(self.value, 4),
            "unit": self.unit,
            "target": self.target.to_json() if self.target else None,
            "verdict": self.verdict,
            "how": self.how,
            "note": self.note,
            "detail": self.detail,
        }


def not_measured(key: str, item: int, label: str, unit: str, why: str) -> Figure:
    return Figure(key, item, label, None, unit, note=why)


def document(
    figures: Sequence[Figure],
    machine: dict[str, Any],
    versions: dict[str, Any],
    options: dict[str, Any],
    started_at: str,
    elapsed: float,
) -> dict[str, Any]:
    """The JSON written to ``--out``."""
    verdicts = [f.verdict for f in figures]
    return {
        "schema": SCHEMA,
        "startedAt": started_at,
        "elapsedSeconds": round(elapsed, 1),
        "machine": machine,
        "versions": versions,
        "options": options,
        "figures": [f.to_json() for f in figures],
        "summary": {
            "pass": verdicts.count(PASS),
            "miss": verdicts.count(MISS),
            "notMeasured": verdicts.count(NOT_MEASURED),
            "missed": [f.key for f in figures if f.verdict == MISS],
        },
    }


def cold_figures(recorded: dict[str, dict[str, Any]]) -> list[Figure]:
    """One figure per recorded cold step (engine first, then bases, then images); reported, no target."""
    order = {"engine": 0, "base": 1, "image": 2}
    figures = []
    for step in sorted(recorded, key=lambda k: (order.get(k.split(".", 1)[0], 3), k)):
        body = recorded[step]
        kind, _, name = step.partition(".")
        label = COLD_LABELS.get(step) or (f"cold: bootstrap base {name}" if kind == "base" else f"cold: build {name}")
        figures.append(Figure(f"cold.{step}", 5, label, float(body["seconds"]), "s",
                              "recorded by the step itself when it ran (runner/sandbox/timings.py)",
                              f"at {body.get('at', '?')}", {k: v for k, v in body.items() if k != "seconds"}))
    return figures or [not_measured("images.cold", 5, "cold set-up steps", "s", COLD_NOT_MEASURED)]


def count_turn_cells(run_dir: Path) -> dict[str, int]:
    """Cells of a ``runner run`` directory: how many ran a turn, how many were declared, how many failed infra."""
    counts = {"turn": 0, "declared": 0, "infrastructure": 0}
    for result in sorted(run_dir.glob("*/result.json")):
        try:
            data = json.loads(result.read_text())
        except (OSError, ValueError):
            continue
        if data.get("infrastructureError"):
            counts["infrastructure"] += 1
        elif "turn" in data:
            counts["turn"] += 1
        else:
            counts["declared"] += 1
    return counts


@dataclass(frozen=True)
class Plan:
    quick: bool
    sections: tuple[str, ...]
    mcp_warmup: int
    mcp_calls: int
    cell_reps: int
    matrix_cases: str  # "all" or a comma-separated list

    def to_json(self) -> dict[str, Any]:
        return {
            "quick": self.quick, "sections": list(self.sections), "mcpWarmup": self.mcp_warmup,
            "mcpCalls": self.mcp_calls, "cellRepetitions": self.cell_reps, "matrixCases": self.matrix_cases,
        }


QUICK_MATRIX_CASES = "escalation,hidden-tool,forged-grant,read-to-mutation,namespace-crossing,grant-material"


def plan_for(quick: bool, only: Iterable[str] | None = None) -> Plan:
    sections = tuple(s for s in SECTIONS if only is None or s in set(only))
    if quick:
        return Plan(True, sections, mcp_warmup=10, mcp_calls=50, cell_reps=3, matrix_cases=QUICK_MATRIX_CASES)
    return Plan(False, sections, mcp_warmup=20, mcp_calls=200, cell_reps=5, matrix_cases="all")


# -------------------------------------------------------------------------------------- machine


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _mem_total_mib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024, 0)
    except (OSError, ValueError, IndexError):
        return None
    return None


def machine_info(client: Any) -> dict[str, Any]:
    engine: dict[str, Any] = {}
    try:
        version, info = client.version(), client.info()
        engine = {
            "server": version.get("Version"), "api": version.get("ApiVersion"),
            "cgroup": info.get("CgroupVersion"), "storageDriver": info.get("Driver"), "cpus": info.get("NCPU"),
        }
    except Exception as err:  # the figures are still worth having; say why this part is missing
        engine = {"error": repr(err)}
    return {
        "cores": os.cpu_count(),
        "usableCores": len(os.sched_getaffinity(0)),
        "memoryMiB": _mem_total_mib(),
        "kernel": platform.release(),
        "loadAverage": [round(x, 2) for x in os.getloadavg()],  # at the start: other work on the machine skews it
        "platform": platform.platform(),
        "docker": engine,
    }


def versions_info(reference: Any | None) -> dict[str, Any]:
    import runner

    body: dict[str, Any] = {
        "runner": runner.__version__,
        "python": platform.python_version(),
        "mcp": _version("mcp"),
        "mcpTypes": _version("mcp-types"),
        "anyio": _version("anyio"),
        "dockerPy": _version("docker"),
    }
    if reference is not None:
        body["referenceImage"] = {"imageId": reference.image_id, "versionOutput": reference.version_output}
    return body


# ------------------------------------------------------------------------------- subprocesses


@dataclass
class Measured:
    """One process run to completion: wall time, exit code, peak RSS (KiB, wait4) and its output."""

    argv: list[str]
    wall: float
    returncode: int
    maxrss_kib: int
    stdout: str
    stderr: str
    timed_out: bool = False

    @property
    def maxrss_mib(self) -> float:
        return self.maxrss_kib / 1024

    def stderr_tail(self, lines: int = 8) -> str:
        return "\n".join(self.stderr.strip().splitlines()[-lines:])


def run_measured(argv: Sequence[str], timeout: float, cwd: Path | None = None) -> Measured:
    """Run ``argv`` to completion; ``wait4`` gives its peak RSS. Past ``timeout`` it gets SIGINT (runner's
    Ctrl-C: its containers are removed), then SIGKILL 20 s later."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        started = time.perf_counter()
        proc = subprocess.Popen(list(argv), stdout=out, stderr=err, stdin=subprocess.DEVNULL, cwd=cwd)
        done = threading.Event()
        timed_out = False

        def watchdog() -> None:
            nonlocal timed_out
            if done.wait(timeout):
                return
            timed_out = True
            proc.send_signal(signal.SIGINT)
            if not done.wait(20):
                proc.kill()

        threading.Thread(target=watchdog, daemon=True).start()
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - started
        done.set()
        proc.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        return Measured(
            list(argv), wall, proc.returncode, int(usage.ru_maxrss),
            out.read().decode(errors="replace"), err.read().decode(errors="replace"), timed_out,
        )


def runner_command() -> list[str]:
    script = Path(sys.executable).with_name("runner")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from runner.cli import app; app(prog_name='runner')"]


class BenchError(Exception):
    """A measurement could not be taken (its figures are reported as not measured, with this reason)."""


# ---------------------------------------------------------------------------- item 1: MCP calls


def _baseline_authority(budget: int | None) -> tuple[Any, Any, str]:
    """The escalation case's (baseline) world: its catalogue, its latch over the envelope, the instructions.

    ``budget`` raises the envelope's tool-call budget so every timed call is a real read (the default
    budget of 16 would turn the rest into refusals, which cost less)."""
    import runner
    from runner.conformance.cases import get_case
    from runner.conformance.prompt import instructions_for
    from runner.core.envelope import Envelope, Limits, RuntimeInfo
    from runner.core.latch import EscalationLatch
    from runner.core.world import build_world

    world = build_world(get_case("escalation").condition.world)
    limits = Limits(max_steps=16, max_tool_calls=budget) if budget is not None else None
    envelope = Envelope(
        world, "escalation.baseline.reference", RuntimeInfo("runner.reference.mcp", runner.__version__),
        limits=limits, clock=world.clock,
    )
    return envelope.catalogue, EscalationLatch(envelope, envelope.catalogue.names), instructions_for(world.grants)


async def floor_roundtrip(warmup: int, calls: int) -> Any:
    """The same ``ClientSession`` loop against the same server handlers, on the SDK's in-memory streams."""
    import anyio
    from mcp import ClientSession
    from mcp.server import NotificationOptions
    from mcp.shared.memory import create_client_server_memory_streams

    import runner
    from runner.bench_client import CLIENT_INFO, timed_calls
    from runner.mcp.server import McpServerHandle, _Service, _Session

    catalogue, latch, instructions = _baseline_authority(warmup + calls + 1)
    service = _Service(McpServerHandle(Path("memory")), catalogue, latch, instructions, "sharedos", runner.__version__)
    session = _Session(service, 1, cast(Any, None))  # its socket is never touched: no read or write loop runs
    options = session.server.create_initialization_options(NotificationOptions(tools_changed=False))
    async with create_client_server_memory_streams() as (client_streams, server_streams), \
            anyio.create_task_group() as tg:
        tg.start_soon(session.server.run, server_streams[0], server_streams[1], options)
        started = time.perf_counter()
        async with ClientSession(client_streams[0], client_streams[1], client_info=CLIENT_INFO) as client:
            await client.initialize()
            await client.list_tools()
            init_ms = (time.perf_counter() - started) * 1e3
            timings = await timed_calls(client, warmup, calls, ROUNDTRIP_TOOL, ROUNDTRIP_ARGUMENTS)
        tg.cancel_scope.cancel()
    timings.init_ms = init_ms
    if service.handle.calls != warmup + calls:
        raise BenchError(f"the floor server saw {service.handle.calls} calls, expected {warmup + calls}")
    return timings


def _turn_dir() -> Path:
    path = Path(tempfile.mkdtemp(prefix="runner-bench-"))
    os.chmod(path, 0o755)  # uid 1000 in the container needs search permission to reach the socket
    return path


def _blocking_run(proc: Any) -> tuple[int | None, bytes, bytes]:
    from runner.sandbox.container import STDOUT

    out, err = bytearray(), bytearray()
    proc.start()
    proc.pump(lambda stream, data: (out if stream == STDOUT else err).extend(data))
    return proc.wait(), bytes(out), bytes(err)


async def _run_container(proc: Any, timeout: float) -> tuple[int | None, bytes, bytes]:
    import anyio
    import anyio.to_thread

    try:
        with anyio.fail_after(timeout):
            return await anyio.to_thread.run_sync(_blocking_run, proc, abandon_on_cancel=True)
    except TimeoutError as err:
        raise BenchError(f"the container did not finish within {timeout:g} s") from err
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(proc.remove)


async def real_roundtrip(
    client: Any, image_id: str, warmup: int, calls: int, run_id: str, transport: str = "relay"
) -> tuple[Any, int]:
    """The bench client in the reference image, hardened as runner runs a CLI, through socat to serve_mcp
    (``relay``, as the reference harness and the CLIs connect) or straight to the socket (``direct``)."""
    import shutil

    from runner import bench_client
    from runner.bench_client import Timings
    from runner.mcp import unix_client
    from runner.mcp.server import serve_mcp
    from runner.sandbox.container import CELL_LABEL, RUN_LABEL, TURN_MOUNT, ContainerSpec, SandboxedProcess

    catalogue, latch, instructions = _baseline_authority(warmup + calls + 1)
    turn = _turn_dir()
    try:
        for module in (bench_client, unix_client):
            target = turn / Path(str(module.__file__)).name
            shutil.copyfile(str(module.__file__), target)
            os.chmod(target, 0o644)
        spec = ContainerSpec(
            image_id=image_id,
            argv=["/opt/venv/bin/python", f"{TURN_MOUNT}/bench_client.py", str(warmup), str(calls), ROUNDTRIP_TOOL,
                  json.dumps(ROUNDTRIP_ARGUMENTS), transport],
            turn_dir=turn,
            labels={RUN_LABEL: run_id, CELL_LABEL: f"bench.mcp-roundtrip-{transport}"},
            env={"PYTHONDONTWRITEBYTECODE": "1"},
        )
        async with serve_mcp(turn / "mcp.sock", catalogue, latch, instructions=instructions) as handle:
            code, out, err = await _run_container(SandboxedProcess(client, spec), timeout=120)
            server_calls = handle.calls
    finally:
        shutil.rmtree(turn, ignore_errors=True)
    lines = [line for line in out.decode(errors="replace").splitlines() if line.strip()]
    try:
        body = json.loads(lines[-1])
    except (IndexError, ValueError) as exc:
        tail = err.decode(errors="replace").strip().splitlines()[-5:]
        raise BenchError(f"the in-container client exited {code} without timings: {' | '.join(tail)}") from exc
    timings = Timings(samples_ms=[float(s) for s in body["samplesMs"]], errors=int(body["errors"]),
                      first_text=str(body.get("firstText", "")), init_ms=body.get("initMs"))
    return timings, server_calls


async def measure_mcp(client: Any, image_id: str, plan: Plan, run_id: str) -> list[Figure]:
    from runner.bench_client import Timings

    # the floor is taken in two halves, before and after the real path, so drift on the machine hits both
    before = await floor_roundtrip(plan.mcp_warmup, plan.mcp_calls // 2)
    real, server_calls = await real_roundtrip(client, image_id, plan.mcp_warmup, plan.mcp_calls, run_id)
    direct, direct_calls = await real_roundtrip(client, image_id, plan.mcp_warmup, plan.mcp_calls, run_id, "direct")
    after = await floor_roundtrip(plan.mcp_warmup, plan.mcp_calls - plan.mcp_calls // 2)
    floor = Timings(before.samples_ms + after.samples_ms, before.errors + after.errors, before.first_text,
                    before.init_ms)
    for name, timings in (("floor", floor), ("real", real), ("direct", direct)):
        if timings.errors:
            raise BenchError(f"{timings.errors} of the {name} calls came back as errors: {timings.first_text[:120]}")
    expected = plan.mcp_warmup + plan.mcp_calls
    if server_calls != expected or direct_calls != expected:
        raise BenchError(f"the host server saw {server_calls} and {direct_calls} calls, expected {expected} each")
    real_s, floor_s, direct_s = summarise(real.samples_ms), summarise(floor.samples_ms), summarise(direct.samples_ms)
    how_real = "in-container SDK client → socat → mounted socket → host serve_mcp (latch + envelope)"
    how_floor = "same client loop and server handlers on in-process memory streams"
    n = f"{plan.mcp_calls} calls after {plan.mcp_warmup} warm-up"
    return [
        Figure("mcp.real.p50", 1, "tools/call real p50", real_s["p50"], "ms", how_real, n,
               {**real_s, "initMs": real.init_ms, "samplesMs": [round(s, 4) for s in real.samples_ms]}),
        Figure("mcp.real.p95", 1, "tools/call real p95", real_s["p95"], "ms", how_real, n),
        Figure("mcp.floor.p50", 1, "tools/call floor p50", floor_s["p50"], "ms", how_floor, n,
               {**floor_s, "initMs": round(floor.init_ms or 0, 3),
                "samplesMs": [round(s, 4) for s in floor.samples_ms]}),
        Figure("mcp.floor.p95", 1, "tools/call floor p95", floor_s["p95"], "ms", how_floor, n),
        Figure("mcp.ratio.p50", 1, "tools/call real / floor (p50)", ratio(real_s["p50"], floor_s["p50"]), "×",
               "p50 real ÷ p50 floor", detail={"p95Ratio": ratio(real_s["p95"], floor_s["p95"])}),
        Figure("mcp.direct.p50", 1, "… without the relay: direct p50", direct_s["p50"], "ms",
               "in-container SDK client → mounted socket (no socat) → host serve_mcp: where the relay's share "
               "shows", n, {**direct_s, "initMs": direct.init_ms}),
    ]


# --------------------------------------------------------------------------- item 2: one cell


async def floor_cell(client: Any, image_id: str, run_id: str, index: int) -> float:
    """One bare ``containers.run`` of the reference client (same image, hardening, script) against a
    server that is already listening; its wall time. No turn dir machinery, no attach, no record."""
    import shutil

    import anyio
    import anyio.to_thread

    from runner.conformance.behaviours import Behaviour, actions_for
    from runner.conformance.cases import get_case
    from runner.harnesses.profile import find_profile
    from runner.mcp.server import serve_mcp
    from runner.sandbox.container import CELL_LABEL, RUN_LABEL, ContainerSpec, remove_labelled
    from runner.turn.turndir import container_home, placeholder_values

    case = get_case("escalation")
    profile = find_profile("reference")
    catalogue, latch, instructions = _baseline_authority(None)
    actions = [a.to_json() for a in actions_for(case, Behaviour.COOPERATIVE, issue_uncatalogued=True)]
    values = placeholder_values(profile, "", None, None)
    turn = _turn_dir()
    cell = f"bench.floor-cell.{index}"
    try:
        script = turn / "script.json"
        script.write_text(json.dumps({"harness": profile.id, "server": profile.mcp_server_name, "actions": actions}))
        os.chmod(script, 0o644)
        kwargs = ContainerSpec(
            image_id=image_id, argv=profile.render_argv(values), turn_dir=turn,
            labels={RUN_LABEL: run_id, CELL_LABEL: cell},
            env={**profile.render_env(values), "HOME": container_home(profile)},
        ).create_kwargs()
        kwargs.pop("log_config")  # containers.run reads the output back through the engine's log
        kwargs["stdin_open"] = False

        def run() -> bytes:
            return cast(bytes, client.containers.run(**kwargs, remove=True, stdout=True, stderr=False))

        async with serve_mcp(turn / "mcp.sock", catalogue, latch, instructions=instructions):
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


async def running_cell(client: Any, run_id: str, out: Path) -> float:
    """One whole reference cell as ``runner run`` pays for it, in this already running process: image
    check, MCP server, container, turn, judge and artifacts (``run_cell``); its wall time."""
    from runner.conformance.cases import get_case
    from runner.harnesses.profile import find_profile
    from runner.matrix.cell import CellOptions, run_cell
    from runner.matrix.cells import Cell

    case = get_case("escalation")
    cell = Cell(case, case.condition, find_profile("reference"))
    started = time.perf_counter()
    result, _ = await run_cell(client, cell, out, CellOptions(run_id=run_id))
    wall = time.perf_counter() - started
    if result.get("turn", {}).get("status") != "escalated":
        raise BenchError(f"the in-process reference cell did not escalate: {json.dumps(result)[:300]}")
    return wall


async def measure_cell(client: Any, image_id: str, plan: Plan, run_id: str, scratch: Path) -> list[Figure]:
    import anyio.to_thread

    await running_cell(client, run_id, scratch / "cell-warmup")  # first-use imports are not a cell's cost
    cell_walls: list[float] = []
    exec_walls: list[float] = []
    turn_elapsed: list[float] = []
    floor_walls: list[float] = []
    import_walls: list[float] = []
    imports = [sys.executable, "-c", "import runner.cli, runner.matrix.cell, runner.turn.runtime"]
    for index in range(plan.cell_reps):  # alternated, so drift on the machine hits both alike
        import_walls.append((await anyio.to_thread.run_sync(run_measured, imports, 60.0)).wall)
        argv = [*runner_command(), "exec", "--harness", "reference", "--case", "escalation", "--json",
                "--out", str(scratch / f"cell-{index}")]
        measured = await anyio.to_thread.run_sync(run_measured, argv, 120.0)
        try:
            body = json.loads(measured.stdout)
        except ValueError:
            body = {}
        if measured.returncode != 0 or body.get("status") != "escalated":
            raise BenchError(f"runner exec exited {measured.returncode} with status {body.get('status')!r}: "
                             f"{measured.stderr_tail()}")
        exec_walls.append(measured.wall)
        turn_elapsed.append(float(body.get("elapsedSeconds", 0.0)))
        floor_walls.append(await floor_cell(client, image_id, run_id, index))
        cell_walls.append(await running_cell(client, run_id, scratch / f"cell-running-{index}"))
    exec_m, floor_m, turn_m = median(exec_walls), median(floor_walls), median(turn_elapsed)
    cell_m = median(cell_walls)
    outside = [w - t for w, t in zip(exec_walls, turn_elapsed, strict=True)]
    reps = f"median of {plan.cell_reps}"
    return [
        Figure("cell.exec.median", 2, "reference cell: runner exec (wall)", exec_m, "s",
               "runner exec --harness reference --case escalation --json, process wall time", reps,
               {"samples": [round(s, 3) for s in exec_walls]}),
        Figure("cell.turn.median", 2, "… of which the turn (elapsedSeconds)", turn_m, "s",
               "the turn's own elapsedSeconds, from the --json output", reps, {"samples": turn_elapsed}),
        Figure("cell.outside.median", 2, "… of which outside the turn", median(outside), "s",
               "exec wall − elapsedSeconds: interpreter, imports, engine connect, image lookup, cell files", reps,
               {"samples": [round(s, 3) for s in outside]}),
        Figure("cell.imports.median", 2, "… python + runner imports alone", median(import_walls), "s",
               "python -c 'import runner.cli, runner.matrix.cell, runner.turn.runtime', wall", reps,
               {"samples": [round(s, 3) for s in import_walls]}),
        Figure("cell.floor.median", 2, "reference cell floor: containers.run", floor_m, "s",
               "docker-py containers.run, same image/hardening/script, server already listening", reps,
               {"samples": [round(s, 3) for s in floor_walls]}),
        Figure("cell.running.median", 2, "reference cell in a running runner", cell_m, "s",
               "run_cell in this process (what runner run pays per cell): image check, server, container, "
               "turn, judge, artifacts", reps, {"samples": [round(s, 3) for s in cell_walls]}),
        Figure("cell.ratio.median", 2, "cell / floor (median wall)", ratio(cell_m, floor_m), "×",
               "median in-process cell wall ÷ median floor wall: both in a running process, like for like",
               detail={"turnOverFloor": ratio(turn_m, floor_m)}),
        Figure("cell.exec.ratio", 2, "runner exec / floor (median wall)", ratio(exec_m, floor_m), "×",
               "median runner exec process wall ÷ median floor wall: adds the interpreter and imports, "
               "paid once per command, not per cell"),
    ]


# ---------------------------------------------------------------------- items 3 and 4: matrix, RSS


def measure_matrix(plan: Plan, scratch: Path, say: Any) -> list[Figure]:
    runs: dict[int, tuple[Measured, dict[str, int]]] = {}
    for jobs in (1, 2):
        out = scratch / f"matrix-j{jobs}"
        argv = [*runner_command(), "run", "--harness", "reference", "--case", plan.matrix_cases,
                "-j", str(jobs), "--per-harness", str(jobs), "--out", str(out)]
        say(f"matrix -j {jobs}: {' '.join(argv[1:])}")
        measured = run_measured(argv, timeout=600.0)
        counts = count_turn_cells(out)
        if measured.returncode != 0 or measured.timed_out or counts["turn"] == 0:
            raise BenchError(f"runner run -j {jobs} exited {measured.returncode} "
                             f"({counts}): {measured.stderr_tail()}")
        runs[jobs] = (measured, counts)
    rate = {j: counts["turn"] / (m.wall / 60) for j, (m, counts) in runs.items()}
    how = "runner run --harness reference --case {cases} -j N --per-harness N; turn cells ÷ wall minutes"
    how = how.format(cases=plan.matrix_cases if plan.matrix_cases == "all" else "<quick subset>")
    detail = {f"j{j}": {"wallSeconds": round(m.wall, 2), "cells": c, "peakRssMiB": round(m.maxrss_mib, 1)}
              for j, (m, c) in runs.items()}
    j2 = runs[2][0]
    return [
        Figure("matrix.j1.rate", 3, "matrix -j 1", rate[1], "cells/min", how, detail=detail["j1"]),
        Figure("matrix.j2.rate", 3, "matrix -j 2", rate[2], "cells/min", how, detail=detail["j2"]),
        Figure("matrix.speedup", 3, "matrix speedup -j 2 / -j 1", ratio(rate[2], rate[1]), "×",
               "cells/min at -j 2 ÷ cells/min at -j 1"),
        Figure("rss.matrix.j2", 4, "peak RSS, runner run -j 2", j2.maxrss_mib, "MiB",
               "wait4 ru_maxrss of the runner process (containers excluded)",
               detail={"j1PeakRssMiB": round(runs[1][0].maxrss_mib, 1)}),
    ]


def measure_flood(scratch: Path) -> list[Figure]:
    argv = [*runner_command(), "exec", "--harness", "reference", "--case", "escalation", "--behaviour", "flood",
            "--json", "--out", str(scratch / "flood")]
    measured = run_measured(argv, timeout=180.0)
    try:
        status = json.loads(measured.stdout).get("status")
    except ValueError:
        status = None
    if measured.returncode != 0 or status != "escalated":
        raise BenchError(f"the flood turn exited {measured.returncode} with status {status!r}: "
                         f"{measured.stderr_tail()}")
    stdout_log = scratch / "flood" / "stdout.log"
    return [Figure("rss.flood", 4, "peak RSS, flood turn (50 MB stdout)", measured.maxrss_mib, "MiB",
                   "wait4 ru_maxrss of runner exec --behaviour flood (containers excluded)",
                   detail={"wallSeconds": round(measured.wall, 2),
                           "stdoutLogBytes": stdout_log.stat().st_size if stdout_log.exists() else None})]


# ------------------------------------------------------------------------------ item 5: images


def measure_images() -> list[Figure]:
    from runner.sandbox import timings
    from runner.sandbox.images import cache_dir

    measured = run_measured([*runner_command(), "images", "build", "--all"], timeout=300.0)
    if measured.returncode != 0:
        raise BenchError(f"runner images build --all exited {measured.returncode}: {measured.stderr_tail()}")
    # ensure_image only reports progress (printed as "… <step>") when it bootstraps, stages or builds
    cold = [line.strip() for line in measured.stderr.splitlines() if line.lstrip().startswith("…")]
    figures = [Figure("images.warm", 5, "warm images build --all", measured.wall, "s",
                      "runner images build --all with nothing changed, process wall time",
                      "not warm: " + "; ".join(cold[:3]) if cold else "",
                      {"stdout": measured.stdout.strip().splitlines()})]
    return figures + cold_figures(timings.read(cache_dir()))


# ------------------------------------------------------------------------------------------ run


SECTION_FIGURES: dict[str, list[tuple[str, int, str, str]]] = {
    "mcp": [("mcp.real.p50", 1, "tools/call real p50", "ms"), ("mcp.ratio.p50", 1, "tools/call real / floor", "×")],
    "cell": [("cell.ratio.median", 2, "cell / floor (median wall)", "×")],
    "matrix": [("matrix.speedup", 3, "matrix speedup -j 2 / -j 1", "×"),
               ("rss.matrix.j2", 4, "peak RSS, runner run -j 2", "MiB")],
    "flood": [("rss.flood", 4, "peak RSS, flood turn", "MiB")],
    "images": [("images.warm", 5, "warm images build --all", "s")],
}


def _failed(section: str, why: str) -> list[Figure]:
    return [not_measured(key, item, label, unit, why) for key, item, label, unit in SECTION_FIGURES[section]]


async def _measure(client: Any, plan: Plan, image_id: str, run_id: str, scratch: Path, say: Any) -> list[Figure]:
    import anyio.to_thread

    figures: list[Figure] = []
    steps: dict[str, Any] = {
        "mcp": lambda: measure_mcp(client, image_id, plan, run_id),
        "cell": lambda: measure_cell(client, image_id, plan, run_id, scratch),
        "matrix": lambda: anyio.to_thread.run_sync(measure_matrix, plan, scratch, say),
        "flood": lambda: anyio.to_thread.run_sync(measure_flood, scratch),
        "images": lambda: anyio.to_thread.run_sync(measure_images),
    }
    for section in plan.sections:
        say(f"{section} …")
        started = time.perf_counter()
        try:
            figures += await steps[section]()
        except Exception as err:  # one section that cannot be measured does not cost the others
            why = str(err) if isinstance(err, BenchError) else f"{type(err).__name__}: {err}"
            say(f"[red]{section}: not measured[/] — {why}")
            figures += _failed(section, why)
        say(f"{section} done in {time.perf_counter() - started:.1f} s")
    return figures


def _table(doc: dict[str, Any]) -> Any:
    from rich.table import Table

    machine, versions = doc["machine"], doc["versions"]
    engine = machine.get("docker", {})
    caption = (
        f"{machine['cores']} cores · {machine['memoryMiB']:.0f} MiB · kernel {machine['kernel']} · "
        f"docker {engine.get('server')} (API {engine.get('api')}, cgroup v{engine.get('cgroup')})\n"
        f"runner {versions['runner']} · mcp {versions['mcp']} · python {versions['python']} · "
        f"docker-py {versions['dockerPy']}{' · --quick' if doc['options']['quick'] else ''} · "
        f"{doc['elapsedSeconds']:.0f} s"
    )
    table = Table("#", "figure", "value", "target", "verdict", "how / note", title="runner bench", caption=caption)
    style = {PASS: "green", MISS: "red", NOT_MEASURED: "yellow", INFO: "dim"}
    for f in doc["figures"]:
        value = "—" if f["value"] is None else _fmt(f["value"], f["unit"])
        target = "" if f["target"] is None else f"{f['target']['op']} {f['target']['threshold']:g}"
        words = f["how"] + (f" ({f['note']})" if f["note"] and f["how"] else f["note"])
        table.add_row(str(f["item"]), f["label"], value, target, f"[{style[f['verdict']]}]{f['verdict']}[/]", words)
    return table


def _fmt(value: float, unit: str) -> str:
    digits = 3 if abs(value) < 10 else 1
    return f"{value:.{digits}f} {unit}".strip()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m runner.bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=Path("bench-results.json"), help="where the JSON goes")
    parser.add_argument("--quick", action="store_true", help="a smaller sample (fewer calls, repetitions, cells)")
    parser.add_argument("--only", help=f"comma-separated sections to run: {','.join(SECTIONS)}")
    parser.add_argument("--strict", action="store_true", help="exit 1 when a target is missed or not measured")
    args = parser.parse_args(argv)
    only = [s.strip() for s in args.only.split(",") if s.strip()] if args.only else None
    if only and (unknown := sorted(set(only) - set(SECTIONS))):
        parser.error(f"unknown section(s) {', '.join(unknown)}; known: {', '.join(SECTIONS)}")
    plan = plan_for(args.quick, only)

    import shutil

    import anyio
    from rich.console import Console

    from runner.sandbox.container import RUN_LABEL, remove_labelled
    from runner.sandbox.engine import EngineError, connect
    from runner.sandbox.images import read_lock, verify_lock

    err = Console(stderr=True)
    out = Console()
    out = Console(width=max(out.width, 120))  # a pipe reports 80 columns: too narrow for the table

    def say(text: str) -> None:
        err.print(f"[dim]bench[/] {text}", highlight=False)

    started_at = datetime.now(UTC).isoformat(timespec="seconds")
    started = time.perf_counter()
    try:
        client = connect()
        problems = verify_lock(client)
    except EngineError as error:
        err.print(f"[red]no engine[/]: {error}")
        return 5
    if problems:
        for problem in problems:
            err.print(f"[red]✗[/] {problem}", highlight=False)
        err.print("images/lock.json is not current; the bench never builds: run `make images` first")
        return 5
    reference = read_lock().get("reference")
    if reference is None:
        err.print("images/lock.json has no reference image; run `make images` first")
        return 5
    machine, versions = machine_info(client), versions_info(reference)
    say(f"{machine['cores']} cores, {machine['memoryMiB']:.0f} MiB, kernel {machine['kernel']}, "
        f"docker {machine['docker'].get('server')}; sections {', '.join(plan.sections)}"
        f"{' (quick)' if plan.quick else ''}")
    run_id = f"bench-{int(time.time())}-{os.getpid()}"
    scratch = Path(tempfile.mkdtemp(prefix="runner-bench-runs-"))
    try:
        figures = anyio.run(_measure, client, plan, reference.image_id, run_id, scratch, say)
    finally:
        remove_labelled(client, f"{RUN_LABEL}={run_id}")  # only this bench's own containers, if any were left
        shutil.rmtree(scratch, ignore_errors=True)
    machine["loadAverageAtEnd"] = [round(x, 2) for x in os.getloadavg()]
    doc = document(figures, machine, versions, plan.to_json(), started_at, time.perf_counter() - started)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=2) + "\n")
    out.print(_table(doc))
    summary = doc["summary"]
    out.print(f"{summary['pass']} PASS, {summary['miss']} MISS, {summary['notMeasured']} not measured; "
              f"wrote {args.out}", highlight=False)
    if args.strict and (summary["miss"] or summary["notMeasured"]):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
