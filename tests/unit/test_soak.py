"""``make soak`` (tests/soak.py): its rounds print a seed that replays their order, a failing round stops the soak
with the seed in the message, and its busy-loop load ends with it, however it ends."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(120)

ORDERED = """
import os
from pathlib import Path
import pytest

@pytest.mark.parametrize("n", range(8))
def test_one(n):
    with Path(os.environ["SOAK_ORDER"]).open("a") as f:
        f.write(f"{n}\\n")
"""


def soak(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "tests.soak", *args], cwd=REPO, capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, timeout=100)


def gone(pid: int) -> bool:
    """The process has exited (reaped, or a zombie waiting for whoever adopted it)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return True
    return state in ("Z", "X")


def wait_gone(pids: list[int], timeout: float = 10) -> list[int]:
    """The pids still running after ``timeout``; polled, so it is as short as the processes allow."""
    deadline = time.monotonic() + timeout
    while (left := [p for p in pids if not gone(p)]) and time.monotonic() < deadline:
        time.sleep(0.05)
    return left


def test_a_seed_replays_the_order_and_each_round_prints_its_own(tmp_path: Path) -> None:
    tests = tmp_path / "test_ordered.py"
    tests.write_text(ORDERED)
    orders = []
    for run in range(2):
        order = tmp_path / f"order{run}"
        done = soak(tmp_path, "--rounds", "1", "--seed", "12345", "--load", "0", str(tests),
                    env={"SOAK_ORDER": str(order)})
        assert done.returncode == 0, done.stdout + done.stderr
        assert "round 1/1: seed 12345 (replay: make soak SEED=12345 SOAK_TESTS=" in done.stdout
        assert "slowest 25 durations" in done.stdout  # each round says where its time went
        orders.append(order.read_text().split())
    assert orders[0] == orders[1] and sorted(orders[0]) == [str(n) for n in range(8)]
    assert orders[0] != sorted(orders[0]), "the order is drawn from the seed, not the file's"  # seed 12345: measured
    fresh = soak(tmp_path, "--rounds", "2", "--load", "0", str(tests), env={"SOAK_ORDER": str(tmp_path / "fresh")})
    assert fresh.returncode == 0, fresh.stdout + fresh.stderr
    seeds = [line.split("seed ")[1].split()[0] for line in fresh.stdout.splitlines() if ": seed " in line]
    assert len(seeds) == 2 and "2 round(s) passed" in fresh.stdout


def test_a_failing_round_stops_the_soak_with_its_seed_and_stops_the_load(tmp_path: Path) -> None:
    tests = tmp_path / "test_fails.py"
    tests.write_text("def test_fails():\n    assert False\n")
    done = soak(tmp_path, "--rounds", "3", "--load", "2", str(tests))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "round 1/3 FAILED (pytest exit 1)" in done.stdout and "round 2/3" not in done.stdout
    failed = next(line for line in done.stdout.splitlines() if line.startswith("soak: round 1/3 FAILED"))
    seed = done.stdout.split("round 1/3: seed ")[1].split()[0]
    assert f"with seed {seed}; replay: make soak SEED={seed}" in failed
    pids = [int(p) for p in done.stdout.split("(pids ")[1].split(")")[0].split()]
    assert len(pids) == 2 and wait_gone(pids) == []
    assert "load stopped (2 process(es))" in done.stdout


def _sigint_ignored() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("started", ["in-a-terminal", "in-the-background"])
@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGTERM])
def test_the_load_stops_when_the_soak_is_killed(tmp_path: Path, how: signal.Signals, started: str) -> None:
    """``in-the-background``: the soak inherits SIGINT ignored, as from `make soak &` in a non-interactive shell or
    nohup (an ignored signal survives fork and exec); its pytest must be interruptible all the same."""
    tests = tmp_path / "test_slow.py"
    tests.write_text("import os, pathlib, time\n\ndef test_slow():\n"
                     "    pathlib.Path(os.environ['SOAK_TEST_RUNNING']).touch()\n    time.sleep(60)\n")
    running = tmp_path / "running"
    proc = subprocess.Popen([sys.executable, "-m", "tests.soak", "--rounds", "1", "--load", "2", str(tests)],
                            cwd=REPO, stdout=subprocess.PIPE, text=True, start_new_session=True,
                            env={**os.environ, "SOAK_TEST_RUNNING": str(running)},
                            preexec_fn=_sigint_ignored if started == "in-the-background" else None)
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        pids = [int(p) for p in first.split("(pids ")[1].split(")")[0].split()]
        assert len(pids) == 2 and wait_gone(pids, timeout=0.5) == pids, "the load runs while the soak does"
        round_started = proc.stdout.readline()
        assert "round 1/1: seed" in round_started
        pytest_pid = wait_child(proc.pid)
        # stopped mid-round, as a user stops a soak: once the test runs, not while pytest is still importing (a
        # SIGINT that lands in an import's lock callback is swallowed by CPython, and the soak then waits out its
        # one-minute grace before it kills pytest: seen once in a fresh clone)
        wait_for(running)
        proc.send_signal(how)
        proc.wait(timeout=60)
        assert wait_gone(pids) == [], f"the load outlived a soak stopped by {how.name}"
        assert wait_gone([pytest_pid], timeout=60) == [], f"pytest outlived a soak stopped by {how.name}"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of the soak's session (nothing, if it passed)


def wait_for(path: Path, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        if time.monotonic() > deadline:
            pytest.fail(f"{path.name}: the soak's test never started")
        time.sleep(0.05)


def wait_child(parent: int, timeout: float = 30) -> int:
    """The pid of ``parent``'s pytest child, once it has started."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for child in Path(f"/proc/{parent}/task/{parent}/children").read_text().split():
            if b"pytest" in Path(f"/proc/{child}/cmdline").read_bytes():
                return int(child)
        time.sleep(0.05)
    pytest.fail("the soak never started pytest")


def test_a_test_path_that_does_not_exist_is_refused(tmp_path: Path) -> None:
    done = soak(tmp_path, "--load", "0", str(tmp_path / "nowhere.py"))
    assert done.returncode == 2 and "no such test path" in done.stderr
