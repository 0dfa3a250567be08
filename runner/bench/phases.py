"""Item 8: each runnable column's turn, phase by phase, against that column's floor, measured in one run.

For every column that runs here (not declared unavailable, its pinned image built), the escalation cell (cooperative,
scripted model where it talks to one) runs ``reps`` times as ``runner exec --harness H --case escalation --json`` (a
whole process, as a user runs it) and as many times in this process (``run_cell``: what ``runner run`` pays per
cell), alternated; and the CLI's bare boot (its recipe's version command, ``--version``, in a hardened container of
the same image) runs as often. The clocks are the engine's and the turn's own:

- the engine's container events (``start`` and ``die``, ``timeNano``; the engine is local, so it shares this host's
  clock): when the turn's container started and exited, and how many containers a turn started (a wiring probe
  is one more, labelled with the same run);
- the model exchange log (``model-exchanges.jsonl``: each exchange's ``ts``, when its answer was written, and its
  ``duration_s``): when the CLI's first model request arrived and its last answer left.

The phases of one turn: **runner → container start** (process start, or ``run_cell``'s call, to the container's
start), **start → first model request**, **model exchanges** (first request to last answer), **last answer → exit**,
**exit → runner done**. The floor is the container's own life (start → exit) in the same turn, with the MCP and model
servers already listening: what no runner could take away. Runner's own share is the wall minus that floor (before
plus after), in ``runner exec`` and in ``run_cell``; the CLI's start beyond its bare boot is start → first request
minus the bare ``--version``. Each column's figures say which phase holds the difference; the whole table is
printed and kept in ``bench-results.json`` (the figure ``phases.table``).
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from runner.bench.figures import BenchError, Figure, not_measured
from runner.bench.plan import Plan
from runner.bench.stats import median, ratio, samples
from runner.core.outcomes import JsonValue

if TYPE_CHECKING:
    from rich.table import Table

    from runner.engine import EngineClient
    from runner.images import ImageRecord
    from runner.images.settings import ImageSettings
    from runner.sandbox.backend import SandboxBackend

ITEM = 8
CASE = "escalation"
PHASES = ("before", "boot", "exchanges", "windDown", "after")
PHASE_LABELS = {
    "before": "runner → container start",
    "boot": "start → first model request",
    "exchanges": "model exchanges",
    "windDown": "last answer → exit",
    "after": "exit → runner done",
}


@dataclass(frozen=True)
class Turn:
    """One measured turn: its wall, the turn container's start and exit, its model exchanges, and how many
    containers it started (the turn's own and any wiring probe). Times are seconds on the host's clock."""

    began: float
    ended: float
    started: float
    exited: float
    exchanges: tuple[tuple[float, float], ...] = ()  # (request arrived, answer written), in arrival order
    containers: int = 1

    @property
    def wall(self) -> float:
        return self.ended - self.began

    @property
    def floor(self) -> float:
        return self.exited - self.started

    @property
    def runner(self) -> float:
        """Runner's own share: the wall outside the container's life."""
        return self.wall - self.floor

    def phases(self) -> dict[str, float | None]:
        """The five phases (seconds); those of the model are None for a turn that made no model request."""
        first = self.exchanges[0][0] if self.exchanges else None
        last = max(end for _, end in self.exchanges) if self.exchanges else None
        return {
            "before": self.started - self.began,
            "boot": None if first is None else first - self.started,
            "exchanges": None if first is None or last is None else last - first,
            "windDown": None if last is None else self.exited - last,
            "after": self.ended - self.exited,
        }


def exchanges_of(log: Path) -> tuple[tuple[float, float], ...]:
    """(request arrived, answer written) of each exchange in a model exchange log, in arrival order; none for a
    turn with no model (no log)."""
    if not log.is_file():
        return ()
    spans = []
    for line in log.read_text(encoding="utf-8").splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        end = datetime.fromisoformat(str(record["ts"])).timestamp()
        spans.append((end - float(record.get("duration_s") or 0.0), end))
    return tuple(sorted(spans))


def holder(phases: dict[str, float | None], boot: float | None) -> str:
    """Which phase holds the difference between the cell and its floor: runner's before or after, or the CLI's
    start beyond its bare boot, whichever is largest."""
    before, after = phases.get("before") or 0.0, phases.get("after") or 0.0
    start = phases.get("boot")
    excess = (start - boot) if start is not None and boot is not None else 0.0
    largest = max((before, "before"), (after, "after"), (excess, "boot"))
    return largest[1]


def medians(turns: Sequence[Turn]) -> dict[str, float | None]:
    out: dict[str, float | None] = {}
    for phase in PHASES:
        values = [v for t in turns if (v := t.phases()[phase]) is not None]
        out[phase] = median(values) if values else None
    return out


def harness_figures(harness: str, execs: Sequence[Turn], cells: Sequence[Turn], boots: Sequence[float],
                   reps: int) -> tuple[list[Figure], dict[str, JsonValue]]:
    """The figures of one column from its turns (``runner exec`` processes and in-process cells) and bare boots;
    and its row of the phase table."""
    note = f"median of {reps}, alternated"
    floor = median([t.floor for t in execs]) if execs else None  # the same turns' own: the ratio is like for like
    wall = median([t.wall for t in execs]) if execs else None
    exec_share = median([t.runner for t in execs]) if execs else None
    run_share = median([t.runner for t in cells]) if cells else None
    boot = median(boots) if boots else None
    phases = medians(execs)
    start = phases["boot"]
    excess = None if start is None or boot is None else start - boot
    containers = max((t.containers for t in execs), default=0)
    row: dict[str, JsonValue] = {
        "harness": harness, "wall": _r(wall), "cellInProcess": _r(median([t.wall for t in cells]) if cells else None),
        **{phase: _r(value) for phase, value in phases.items()}, "floor": _r(floor), "bareBoot": _r(boot),
        "ratio": _r(ratio(wall, floor)), "runnerExec": _r(exec_share), "runnerRun": _r(run_share),
        "bootExcess": _r(excess), "containersPerExec": containers, "holds": holder(phases, boot),
    }
    key = f"phases.{harness}"
    figures = [
        Figure(f"{key}.ratio", ITEM, f"{harness}: runner exec / floor", ratio(wall, floor), "×",
               f"exec wall {_s(wall)} ÷ container start → exit {_s(floor)}; the difference is mostly "
               f"{PHASE_LABELS[str(row['holds'])]}", note, {"row": row}),
        Figure(f"{key}.runner.exec", ITEM, f"{harness}: runner's share in runner exec", exec_share, "s",
               f"exec process wall − container start → exit; {containers} container(s) per exec", note,
               {"samples": samples([t.runner for t in execs])}),
        Figure(f"{key}.runner.run", ITEM, f"{harness}: runner's share per cell in runner run", run_share, "s",
               "run_cell wall in a running process − container start → exit", note,
               {"samples": samples([t.runner for t in cells])}),
        Figure(f"{key}.boot.excess", ITEM, f"{harness}: start → first request beyond bare boot", excess, "s",
               f"start → first model request {_s(start)} − bare --version {_s(boot)}", note,
               {"bareBoot": samples(list(boots))}),
    ]
    return figures, row


def _r(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _s(value: float | None) -> str:
    return "—" if value is None else f"{value:.2f} s"


def phase_table(rows: Sequence[dict[str, JsonValue]]) -> Table:
    """The per-column phase table, as ``make bench`` prints it."""
    from rich.table import Table

    def cell(value: JsonValue) -> str:
        return "—" if value is None else f"{value:.2f}" if isinstance(value, float) else str(value)

    keys = ("wall", *PHASES, "floor", "bareBoot", "ratio", "runnerExec", "runnerRun", "containersPerExec", "holds")
    heads = ("exec wall", *(PHASE_LABELS[p] for p in PHASES), "floor (start → exit)", "bare --version",
             "wall / floor", "runner's share (exec)", "runner's share (run)", "containers", "difference in")
    table = Table("harness", *heads, title="runner bench: a turn's phases (seconds, medians)")
    for row in rows:
        table.add_row(str(row["harness"]), *(cell(row.get(k)) for k in keys))
    return table


# --- measuring (needs the engine) ----------------------------------------------------------------------------


class ContainerClock:
    """The engine's container events (``start``, ``die``) of runner's containers, heard in a thread for as long as
    it is open: container id -> (labels, start time, die time), seconds on the host's clock."""

    def __init__(self, client: EngineClient) -> None:
        self.seen: dict[str, dict[str, Any]] = {}
        self._stream = client.events(decode=True, filters={"type": "container", "event": ["start", "die"]})
        self._thread = threading.Thread(target=self._listen, daemon=True)
        self._thread.start()

    def _listen(self) -> None:
        try:
            for event in self._stream:
                actor = event.get("Actor") or {}
                entry = self.seen.setdefault(str(actor.get("ID") or event.get("id")),
                                             {"labels": dict(actor.get("Attributes") or {})})
                entry[str(event.get("Action") or event.get("status"))] = int(event["timeNano"]) / 1e9
        except Exception:  # the stream is closed under us at the end
            return

    def wait_for(self, container_id: str, timeout: float = 10.0) -> tuple[float, float]:
        """The container's start and die times (waiting a little for the engine's events to arrive)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            entry = self.seen.get(container_id, {})
            if "start" in entry and "die" in entry:
                return float(entry["start"]), float(entry["die"])
            time.sleep(0.02)
        raise BenchError(f"the engine reported no start and exit of container {container_id[:12]}")

    def containers_of(self, run_id: str) -> int:
        """How many containers of the run ``run_id`` started (the turn's and any wiring probe)."""
        return sum(1 for e in self.seen.values() if e["labels"].get("runner.run") == run_id and "start" in e)

    def run_of(self, container_id: str) -> str:
        return str(self.seen.get(container_id, {}).get("labels", {}).get("runner.run", ""))

    def close(self) -> None:
        self._stream.close()


def runnable(client: EngineClient, images: ImageSettings) -> tuple[list[str], dict[str, str]]:
    """The columns whose turn can be measured here, and why each other one cannot."""
    from runner.harnesses.profile import find_profile, known_harnesses
    from runner.images import current_keys, read_build

    ready, skipped = [], {}
    for harness in known_harnesses():
        profile = find_profile(harness)
        if profile.unavailable:
            continue
        if read_build(profile.image, images, current_keys(client, profile.image, images).build_key) is None:
            skipped[harness] = f"its image ({profile.image}) is not built here: run `make images` first"
            continue
        ready.append(harness)
    return ready, skipped


def exec_turn(clock: ContainerClock, harness: str, out: Path) -> Turn:
    """One ``runner exec`` process of the column's escalation cell."""
    from runner.bench.process import escalated_exec, runner_command

    argv = [*runner_command(), "exec", "--harness", harness, "--case", CASE, "--json", "--out", str(out)]
    began = time.time()
    measured, body = escalated_exec(argv, 300.0)
    ended = began + measured.wall
    container = str(body["containerId"])
    started, exited = clock.wait_for(container)
    return Turn(began, ended, started, exited, exchanges_of(out / "model-exchanges.jsonl"),
                clock.containers_of(clock.run_of(container)))


async def cell_turn(backend: SandboxBackend, clock: ContainerClock, harness: str, run_id: str,
                    out: Path, image: ImageRecord) -> Turn:
    """One cell of the column in this process, as ``runner run`` pays for it (``run_cell`` with the column's image
    resolved once, before its cells)."""
    import anyio.to_thread

    from runner.bench.cell import running_cell_report

    began = time.time()
    container = await running_cell_report(backend, run_id, out, harness, image=image)
    ended = time.time()
    started, exited = await anyio.to_thread.run_sync(clock.wait_for, container)
    return Turn(began, ended, started, exited, exchanges_of(out / "model-exchanges.jsonl"))


def _image_of(backend: SandboxBackend, harness: str, images: ImageSettings) -> ImageRecord:
    from runner.harnesses.profile import find_profile

    return backend.prepare_image(find_profile(harness).image, images)


def bare_boot(client: EngineClient, clock: ContainerClock, harness: str, run_id: str, images: ImageSettings) -> float:
    """The CLI's ``--version`` (its recipe's version command) in a hardened container of the same image: start →
    exit, from the engine's events."""
    from runner.harnesses.profile import find_profile
    from runner.images import current_keys, load_harness_recipe, read_build, source_root
    from runner.sandbox.container import RUN_LABEL, create_kwargs, remove_labelled
    from runner.sandbox.interface import ContainerSpec
    from runner.sandbox.lease import lease_labels

    image = find_profile(harness).image
    record = read_build(image, images, current_keys(client, image, images).build_key)
    recipe = load_harness_recipe(image, source_root(images))
    if record is None or not recipe.version_command:
        raise BenchError(f"{harness}: no built image or no version command to boot")
    kwargs = create_kwargs(ContainerSpec(record.image_id, list(recipe.version_command), Path("/nonexistent"),
                                         {RUN_LABEL: run_id, "runner.cell": f"bench.boot.{harness}",
                                          **lease_labels(run_id)}))
    kwargs["mounts"], kwargs["stdin_open"] = [], False
    container: Any = client.containers.create(**kwargs)
    try:
        container.start()
        container.wait(timeout=120)
        started, exited = clock.wait_for(str(container.id))
    finally:
        remove_labelled(client, f"runner.cell=bench.boot.{harness}")
    return exited - started


async def measure_phases(client: EngineClient, backend: SandboxBackend, plan: Plan, run_id: str, scratch: Path,
                         say: Callable[[str], None], images: ImageSettings) -> list[Figure]:
    import anyio.to_thread

    harnesses, skipped = await anyio.to_thread.run_sync(runnable, client, images)
    if plan.phase_harnesses:
        harnesses = [c for c in harnesses if c in plan.phase_harnesses]
    clock = ContainerClock(client)
    figures: list[Figure] = []
    rows: list[dict[str, JsonValue]] = []
    try:
        for harness in harnesses:
            execs: list[Turn] = []
            cells: list[Turn] = []
            boots: list[float] = []
            try:
                image = await anyio.to_thread.run_sync(_image_of, backend, harness, images)
                for rep in range(plan.phase_reps + 1):  # the first round warms the image, probe and page cache
                    where = scratch / f"phases-{harness}-{rep}"
                    exec_ = await anyio.to_thread.run_sync(exec_turn, clock, harness, where / "exec")
                    cell = await cell_turn(backend, clock, harness, run_id, where / "cell", image)
                    boot = await anyio.to_thread.run_sync(bare_boot, client, clock, harness, run_id, images)
                    if rep:
                        execs.append(exec_)
                        cells.append(cell)
                        boots.append(boot)
            except BenchError as err:
                say(f"[red]{harness}: not measured[/] — {err}")
                figures += _not_measured(harness, str(err))
                continue
            found, row = harness_figures(harness, execs, cells, boots, plan.phase_reps)
            figures += found
            rows.append(row)
            say(f"{harness}: exec {row['wall']} s, floor {row['floor']} s, runner's share {row['runnerExec']} s "
                f"(exec) {row['runnerRun']} s (run), boot beyond --version {row['bootExcess']} s")
    finally:
        clock.close()
    for harness, why in skipped.items():
        figures += _not_measured(harness, why)
    figures += headline(rows)
    return figures


def headline(rows: Sequence[dict[str, JsonValue]]) -> list[Figure]:
    """The section's figures with a target: the worst column's share of runner in ``runner exec`` and in
    ``runner run``; and the whole table (every row in ``detail.rows``)."""
    figures = []
    for key, label, how in (("runnerExec", "runner's share in runner exec, worst column", "runner exec"),
                            ("runnerRun", "runner's share per cell in runner run, worst column", "run_cell")):
        values = {str(r["harness"]): v for r in rows if isinstance(v := r.get(key), float)}
        worst = max(values, key=lambda c: values[c]) if values else None
        figures.append(Figure(f"phases.{key}.worst", ITEM, label, values[worst] if worst else None, "s",
                              f"{how} wall − container start → exit, the column where it is largest ({worst})",
                              "" if values else "no harness measured", {"harnesses": {**values}}))
    figures.append(Figure("phases.table", ITEM, "per-harness phase table", float(len(rows)), "harnesses",
                          "printed below the figures; every row in detail.rows", "", {"rows": [*rows]}))
    return figures


def _not_measured(harness: str, why: str) -> list[Figure]:
    key = f"phases.{harness}"
    return [not_measured(f"{key}.{k}", ITEM, f"{harness}: {label}", unit, why)
            for k, label, unit in (("ratio", "runner exec / floor", "×"),
                                   ("runner.exec", "runner's share in runner exec", "s"),
                                   ("runner.run", "runner's share per cell in runner run", "s"),
                                   ("boot.excess", "start → first request beyond bare boot", "s"))]
