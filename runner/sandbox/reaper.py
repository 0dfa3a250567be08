"""The reaper: a run's containers die with the runner that started them, however it dies (SIGKILL too).

Design (issue 14). testcontainers' Ryuk is a container holding the engine socket; the client keeps
a TCP connection to it, and when that connection drops Ryuk removes everything with the session's
label. Here the watcher is a **host-side process** instead, started per run:

- ``runner`` spawns ``python -m runner.sandbox.reaper RUN_ID`` in its own session (so a Ctrl-C in
  the terminal or a kill of runner's process group does not reach it), with stdin the read end of
  a pipe whose only write end runner holds (close-on-exec: no CLI or build subprocess inherits it).
- The kernel closes that write end when runner exits for any reason. The reaper reads EOF, removes
  every container labelled ``runner.run=RUN_ID`` through the same engine address runner used
  (DOCKER_HOST and the rest of the environment are inherited), sweeps again after a pause (a
  ``create`` in flight when runner died can land after the first sweep), and exits.
- An orderly runner does its own teardown and then writes ``done``: the reaper exits without
  touching the engine. ``--keep`` starts no reaper, nor does a lease made with ``enabled=False``
  (``RUNNER_REAPER=0``, read by the command line: a test of ``runner gc`` needs the leftover).

Why not a reaper container: a container reaches the engine only through the engine's socket
mounted from the *engine's* host, whose path runner cannot know for a remote (tcp/ssh) engine or
Docker Desktop, differs under rootless Podman, and hands root on that host to the container; and
runner would need a network channel to it, where every other container here has network none. The
process needs only what runner already has, an engine address that answers, so it works on every
engine runner works on. What it does not survive is the death of the machine or container that
runs runner itself (in Docker-out-of-Docker, killing runner's own container kills its reaper
too): ``runner gc`` stays the fallback for that.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Mapping
from typing import IO

DONE = b"done\n"
SWEEPS = (0.0, 2.0, 6.0)  # seconds after the runner's death: one sweep now, two for creates in flight


class Reaper:
    """The runner's side: holds the lease (the pipe's write end) for the life of the run."""

    def __init__(self, run_id: str, enabled: bool = True) -> None:
        self.run_id = run_id
        self.enabled = enabled
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> Reaper:
        if not self.enabled:
            return self
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "runner.sandbox.reaper", self.run_id],
                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                start_new_session=True, close_fds=True,
            )
        except OSError:
            self.proc = None  # no reaper: `runner gc` is the fallback, as before
        return self

    def release(self) -> None:
        """The run cleaned up after itself: tell the reaper to leave without touching the engine."""
        self._close(DONE)

    def abandon(self) -> None:
        """The run could not clean up (the engine did not answer): let the reaper try."""
        self._close(b"")

    def _close(self, word: bytes) -> None:
        if self.proc is None or self.proc.stdin is None:
            return
        try:
            if word:
                self.proc.stdin.write(word)
            self.proc.stdin.close()
        except OSError:
            pass  # the reaper is gone already


def should_reap(lease: IO[bytes]) -> bool:
    """Block until the lease ends; True unless the runner said ``done`` first."""
    data = b""
    while chunk := lease.read(64):
        data += chunk
    return not data.endswith(DONE)


def reap(run_id: str, environ: Mapping[str, str]) -> int:
    """Remove every container of the run from the engine ``environ`` names; the number removed. Engine failures are
    retried, then given up."""
    from runner.engine import EngineError, connect
    from runner.sandbox.container import RUN_LABEL, remove_labelled

    removed = 0
    start = time.monotonic()
    for at in SWEEPS:
        time.sleep(max(0.0, start + at - time.monotonic()))
        try:
            removed += len(remove_labelled(connect(environ, timeout=30), f"{RUN_LABEL}={run_id}"))
        except EngineError:
            continue  # the next sweep tries again; after the last, `runner gc` is the fallback
    return removed


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m runner.sandbox.reaper RUN_ID", file=sys.stderr)
        return 2
    for signum in (signal.SIGINT, signal.SIGHUP):
        signal.signal(signum, signal.SIG_IGN)  # a terminal's Ctrl-C or hangup is for runner, not for its reaper
    if should_reap(sys.stdin.buffer):
        reap(argv[1], os.environ)  # a process of its own: its edge, with the engine its parent was started for
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
