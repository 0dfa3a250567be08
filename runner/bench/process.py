"""Processes the bench runs to completion: host commands (wall time, peak RSS) and hardened containers."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from runner.bench.figures import BenchError


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


def escalated_exec(argv: Sequence[str], timeout: float) -> tuple[Measured, dict[str, object]]:
    """``runner exec ... --json`` run to completion and its JSON; a BenchError unless the turn escalated (a bench
    figure of a turn that did something else would measure the wrong thing)."""
    measured = run_measured(argv, timeout)
    try:
        body = json.loads(measured.stdout)
    except ValueError:
        body = {}
    if not isinstance(body, dict) or measured.returncode != 0 or body.get("status") != "escalated":
        status = body.get("status") if isinstance(body, dict) else None
        raise BenchError(f"{' '.join(argv[-8:])}: runner exec exited {measured.returncode} with status {status!r}: "
                         f"{measured.stderr_tail()}")
    return measured, body


def runner_command() -> list[str]:
    """The ``runner`` console script beside this interpreter (``.venv/bin/runner``), as a user runs it."""
    script = Path(sys.executable).with_name("runner")
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", "from runner.cli import app; app(prog_name='runner')"]


def turn_dir() -> Path:
    """A bench turn's directory, as a turn's is made: runner's, passable by the container's uid alone
    (runner.sandbox.ownership); what the container reads in it is written ``0644``, and its socket handed to that
    uid (:func:`give_socket`)."""
    from runner.sandbox.ownership import close_turn_dir, container_user

    path = Path(tempfile.mkdtemp(prefix="runner-bench-"))
    close_turn_dir(path, container_user())
    return path


def give_socket(path: Path) -> None:
    """Hand a bench turn's socket (bound by serve_mcp, this uid's alone) to the container's uid."""
    from runner.sandbox.ownership import container_user, give

    give(path, container_user())


class Container(Protocol):
    """What the bench does with a sandboxed process (runner.sandbox's, whichever transport)."""

    def start(self) -> None: ...

    def pump(self, on_output: Callable[[int, bytes], None]) -> None: ...

    def wait(self) -> int | None: ...

    def remove(self) -> None: ...


def _blocking_run(proc: Container) -> tuple[int | None, bytes, bytes]:
    from runner.sandbox.container import STDOUT

    out, err = bytearray(), bytearray()
    proc.start()
    proc.pump(lambda stream, data: (out if stream == STDOUT else err).extend(data))
    return proc.wait(), bytes(out), bytes(err)


async def run_container(proc: Container, timeout: float) -> tuple[int | None, bytes, bytes]:
    """Start a :class:`SandboxedProcess`, collect its output until it exits, and remove it whatever happens."""
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
