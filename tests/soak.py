"""``make soak``: the integration and end-to-end layers, again and again, in a random order, on a busy machine.

A test that passes by chance (the order of concurrent requests, a sleep that a loaded machine outlasts, a state
an earlier test left behind) passes ``make test`` most of the time. The soak looks for such tests before a change
lands: each round runs the chosen tests once, in an order drawn from a seed (pytest-random-order: modules shuffled,
then the tests inside each module, so a module's fixtures are still set up once), while one busy-loop process per
core keeps every core busy. It prints each round's seed; ``make soak SEED=<seed>`` replays that order (on the same
tests: ``SOAK_TESTS`` as it was). A failing round stops the soak at once, with its seed in the message: nothing is
retried, so nothing is hidden. ``make test`` is not changed by any of this: the plugin orders nothing unless asked.

The load is bounded: one process per core (``--load`` sets how many, 0 for none), each stopping by itself when the
soak's process is gone (however it ended: a failure, Ctrl-C, SIGTERM, SIGKILL) or after ``--load-seconds``.

    python -m tests.soak [--rounds N] [--seed SEED] [--load K] [PATH ...]
"""

from __future__ import annotations

import argparse
import ctypes
import os
import random
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import FrameType

LAYERS = ("tests/integration", "tests/e2e")
# --durations: each round ends with its slowest tests, so what a round costs, and where, is on record
PYTEST_ARGS = ("-q", "-p", "no:cacheprovider", "--random-order-bucket=module", "--durations=25")
PR_SET_PDEATHSIG = 1  # prctl(2)
LOAD_SECONDS = 6 * 3600.0  # a worker outliving a forgotten soak stops by itself after this

# One core's worth of load. It checks twice a second whether the soak that started it is still its parent (a
# killed parent's children are handed to another process) and whether its time is up; between checks it spins.
BUSY = """
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the soak's to handle: it stops the load itself
parent, until = int(sys.argv[1]), time.monotonic() + float(sys.argv[2])
while os.getppid() == parent and time.monotonic() < until:
    tick = time.monotonic() + 0.5
    while time.monotonic() < tick:
        pass
"""


def start_load(workers: int, seconds: float = LOAD_SECONDS) -> list[subprocess.Popen[bytes]]:
    """``workers`` busy-loop processes, children of this one, each stopping when this process is gone."""
    return [subprocess.Popen([sys.executable, "-c", BUSY, str(os.getpid()), str(seconds)],
                             stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
            for _ in range(workers)]


def stop_load(load: Sequence[subprocess.Popen[bytes]]) -> None:
    for proc in load:
        proc.terminate()
    for proc in load:
        proc.wait(timeout=10)


def new_seed() -> int:
    return random.SystemRandom().randrange(1, 2**31)


def replay_hint(seed: int, paths: Sequence[str]) -> str:
    tests = "" if tuple(paths) == LAYERS else f" SOAK_TESTS='{' '.join(paths)}'"
    return f"make soak SEED={seed}{tests}"


def say(text: str) -> None:
    print(f"soak: {text}", flush=True)


def _interrupted_with_the_soak() -> None:
    """In pytest's process before it starts: a SIGINT when the soak's process is gone, even by SIGKILL (Linux).

    SIGINT is put back to its default first: a soak started in the background by a non-interactive shell (`make
    soak &`, nohup, a CI step's `&`) inherits SIGINT ignored, and an ignored SIGINT survives exec, so pytest would
    shrug off both this signal and the soak's own interrupt (seen: pytest outlived a killed soak by a minute)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGINT)


def run_pytest(argv: Sequence[str]) -> int:
    """pytest's exit code; if the soak is stopped meanwhile, pytest is interrupted as Ctrl-C would (its fixtures
    clean up), then killed if it does not end within a minute; if the soak is killed, the kernel interrupts it."""
    proc = subprocess.Popen(argv, preexec_fn=_interrupted_with_the_soak)
    try:
        return proc.wait()
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


def soak(rounds: int, seed: int | None, paths: Sequence[str], load: int, pytest: Sequence[str]) -> int:
    """Run the rounds; the exit code of the first failing one (0 when all pass)."""
    workers = start_load(load)
    say(f"{rounds} round(s) of {' '.join(paths)} in a random order, {load} busy-loop process(es) running "
        f"(pids {' '.join(str(w.pid) for w in workers) or '-'})")
    started = time.monotonic()
    try:
        for number in range(1, rounds + 1):
            this_seed = seed if seed is not None else new_seed()
            say(f"round {number}/{rounds}: seed {this_seed} (replay: {replay_hint(this_seed, paths)})")
            began = time.monotonic()
            code = run_pytest([*pytest, *paths, *PYTEST_ARGS, f"--random-order-seed={this_seed}"])
            took = time.monotonic() - began
            if code != 0:
                say(f"round {number}/{rounds} FAILED (pytest exit {code}) after {took:.0f} s with seed {this_seed}; "
                    f"replay: {replay_hint(this_seed, paths)}")
                return code
            say(f"round {number}/{rounds} passed in {took:.0f} s (seed {this_seed})")
        say(f"{rounds} round(s) passed in {time.monotonic() - started:.0f} s")
        return 0
    finally:
        stop_load(workers)
        say(f"load stopped ({len(workers)} process(es))")


def _terminated(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # so the finally blocks above stop pytest and the load


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.soak", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="*", default=list(LAYERS), help="what pytest runs (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=2, help="how many times (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=None, help="replay this order (default: a new seed each round)")
    parser.add_argument("--load", type=int, default=os.cpu_count() or 1,
                        help="busy-loop processes (default: one per core, %(default)s here)")
    args = parser.parse_args(argv)
    if args.rounds < 1 or args.load < 0:
        parser.error("--rounds must be at least 1 and --load at least 0")
    missing = [p for p in args.paths if not Path(p.split("::")[0]).exists()]
    if missing:
        parser.error(f"no such test path: {' '.join(missing)}")
    signal.signal(signal.SIGTERM, _terminated)
    return soak(args.rounds, args.seed, args.paths, args.load, [sys.executable, "-m", "pytest"])


if __name__ == "__main__":
    sys.exit(main())
