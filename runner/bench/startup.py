"""Item 6: how long runner takes to start, against a bare interpreter, measured side by side.

``runner --help`` and ``runner cases`` run as whole processes (the console script beside this
interpreter, ``.venv/bin/runner``, as a user runs it), alternated with ``python -c pass`` on the same
interpreter: the floor any Python command pays (interpreter start-up and ``site``). Each command runs
once untimed first, so a cold page cache is not counted. ``runner exec`` as a process against its
floor is item 2's ``cell.exec.ratio``: its floor is a container run, taken there.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from runner.bench.figures import BenchError, Figure
from runner.bench.plan import Plan
from runner.bench.process import run_measured, runner_command
from runner.bench.stats import median, ratio, samples

BARE = "bare"
COMMANDS: dict[str, tuple[str, ...]] = {"help": ("--help",), "cases": ("cases",)}


def startup_commands() -> dict[str, list[str]]:
    """The floor first, then each runner command, as they are run."""
    runner = runner_command()
    return {BARE: [sys.executable, "-c", "pass"], **{k: [*runner, *args] for k, args in COMMANDS.items()}}


def measure_startup(plan: Plan, say: Callable[[str], None]) -> list[Figure]:
    commands = startup_commands()
    walls: dict[str, list[float]] = {key: [] for key in commands}
    for rep in range(plan.startup_reps + 1):  # the first round is a warm-up
        for key, argv in commands.items():
            measured = run_measured(argv, timeout=60.0)
            if measured.returncode != 0 or measured.timed_out:
                raise BenchError(f"{' '.join(argv)} exited {measured.returncode}: {measured.stderr_tail()}")
            if rep:
                walls[key].append(measured.wall)
    say(", ".join(f"{key} {median(w) * 1e3:.0f} ms" for key, w in walls.items()))
    return startup_figures(walls, plan.startup_reps)


def startup_figures(walls: dict[str, list[float]], reps: int) -> list[Figure]:
    """The figures of item 6 from its samples (seconds): the floor's, then each command's wall and ratio."""
    note = f"median of {reps}, alternated, after one warm-up round"
    bare = median(walls[BARE])
    figures = [Figure("startup.bare.median", 6, "start-up floor: python -c pass", bare, "s",
                      "the same interpreter, whole process wall time", note, {"samples": samples(walls[BARE], 4)})]
    for key, args in COMMANDS.items():
        command = "runner " + " ".join(args)
        wall = median(walls[key])
        figures += [
            Figure(f"startup.{key}.median", 6, f"start-up: {command}", wall, "s",
                   f"{command} (.venv/bin/runner), whole process wall time", note,
                   {"samples": samples(walls[key], 4)}),
            Figure(f"startup.{key}.ratio", 6, f"{command} / python -c pass", ratio(wall, bare), "×",
                   f"median {command} wall ÷ median python -c pass wall"),
        ]
    return figures
