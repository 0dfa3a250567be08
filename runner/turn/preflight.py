"""Before any CLI starts: the output directory must be writable, have room for a turn's files, and be this run's.

A turn writes its record, transcripts (each capped at 64 MiB) and the CLI's session transcript; a
disk that fills half-way would leave a half-written artifact, so a run refuses to start instead.

Two runs writing one directory at once would interleave their cells (each resuming, retrying and marking the other's
cells ``interrupted``), so a run holds ``<out>/.runner.lock`` (an exclusive ``flock``, with its run id, pid and host
written in it for the message) from its start until it exits, SIGKILL included: a second ``runner run`` or
``runner exec`` on that directory is refused before anything starts (:class:`OutputDirBusy`, exit 5), and the first
never notices. A run that ends removes the file; one that was killed leaves it, unheld, for the next to take.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import shutil
import socket
import uuid
from pathlib import Path

from runner.errors import InfrastructureError
from runner.sandbox.lease import locked_file, unlink_held

LOCK_FILE = ".runner.lock"
HOLDER_BYTES = 4096  # what is read of another run's lock file for the message: runner's own, small

MIN_FREE_BYTES = 256 * 1024 * 1024


class OutputDirError(InfrastructureError, OSError):
    """The output directory cannot take this run's artifacts; the message says why and where."""


def check_output_dir(path: Path, min_free: int = MIN_FREE_BYTES) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".runner-probe-{uuid.uuid4().hex}"
        probe.write_bytes(b"probe")
        probe.unlink()
    except OSError as err:
        raise OutputDirError(f"{path}: cannot write the run's files there ({err.strerror or err})") from None
    free = shutil.disk_usage(path).free
    if free < min_free:
        raise OutputDirError(
            f"{path}: only {free // (1024 * 1024)} MiB free; a turn may write up to "
            f"{min_free // (1024 * 1024)} MiB (transcripts, record, session files). Free some space or use --out."
        )


class OutputDirBusy(InfrastructureError):
    """Another live run holds the output directory; the message names it."""


class OutputDirLock:
    """This process's hold on an output directory (:func:`hold_output_dir`), until :meth:`release` or its exit."""

    def __init__(self, path: Path, fd: int) -> None:
        self.path, self.fd = path, fd

    def release(self) -> None:
        if self.fd >= 0:
            unlink_held(self.path, self.fd)
            os.close(self.fd)
            self.fd = -1


def hold_output_dir(path: Path, run_id: str) -> OutputDirLock:
    """Take ``path`` (an existing directory) for run ``run_id`` until this process exits; :class:`OutputDirBusy`
    naming the run that holds it."""
    lock = path / LOCK_FILE
    try:
        fd = locked_file(lock, fcntl.LOCK_EX | fcntl.LOCK_NB, writable=True)
    except BlockingIOError:
        raise OutputDirBusy(
            f"{path}: another runner is writing there ({_holder(lock)}), and two runs in one directory would mix "
            "their cells. Wait for it to end, or give this run another --out") from None
    except OSError as err:
        raise OutputDirError(f"{lock}: cannot take the output directory ({err.strerror or err})") from None
    holder = {"run": run_id, "pid": os.getpid(), "host": socket.gethostname()}
    os.ftruncate(fd, 0)
    os.pwrite(fd, (json.dumps(holder) + "\n").encode("utf-8"), 0)
    held = OutputDirLock(lock, fd)
    atexit.register(held.release)
    return held


def _holder(lock: Path) -> str:
    """Who holds ``lock``, as its holder wrote it (bounded, never through a link); what is known of it."""
    try:
        fd = os.open(lock, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            data = json.loads(os.read(fd, HOLDER_BYTES))
        finally:
            os.close(fd)
        return f"run {data['run']}, pid {int(data['pid'])} on {data['host']}"
    except (OSError, ValueError, KeyError, TypeError):
        return "a run that has not said which yet"
