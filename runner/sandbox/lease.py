"""A run's liveness mark: a lock file the run holds while it lives, that ``runner gc`` tries before removing anything.

Every process that works for a run holds ``<TMPDIR>/runner-run-<token>.lock`` (the token: 8 hex digits of the run id's
hash, :func:`run_token`, short so that the sockets' paths in the turn dirs named after it stay within ``AF_UNIX``'s
107 bytes) with a shared ``flock`` from before
its first turn dir or container until it exits: the command line takes it as it starts (:func:`hold_run`), and
creating a turn dir takes it too, so that whatever runs a turn (a test, the bench) holds its run's lease. The kernel
drops the lock when the process dies, SIGKILL included, and no child inherits it (the descriptor is close-on-exec,
and the reaper and the CLIs are started with ``close_fds``). A run is **live** while anyone holds its lock:
:func:`liveness` asks for it exclusively without waiting, and a lock it gets, or a file that is not there, means the
run is **dead**; a file it cannot open is **unknown**, and left alone.

A lock file speaks only for the machine and the filesystem it is on, so every container of a run is labelled with
where its lease is (:func:`lease_labels`): the host's name, the lease's path and its **scope**: this machine, this
boot of its kernel and this mount namespace (two machines, or two containers running runner against one engine,
each see their own ``/tmp``). ``runner gc`` tries the leases of its own scope; a container of an earlier boot of the
same machine (its machine id and host name) is dead whatever its lease says (the machine crashed and came back);
the rest it leaves alone unless named with ``--run``.

A run that ends cleanly unlinks its lock file while holding it exclusively; whoever takes a lock checks, once it
holds it, that the file is still the one at the path (else it opens the new one): the usual way to remove a lock
file without losing a holder.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import os
import re
import socket
import stat
import tempfile
from enum import StrEnum
from pathlib import Path

PREFIX = "runner-run-"
SUFFIX = ".lock"
HOST_LABEL = "runner.host"  # the host runner ran on, by name (what gc says of a run it leaves to another host)
LEASE_LABEL = "runner.lease"  # the path of the run's lease on that host
SCOPE_LABEL = "runner.lease-scope"  # where that path means something: this boot, this mount namespace
TOKEN = re.compile(r"[0-9a-f]{8}")


class Liveness(StrEnum):
    LIVE = "live"  # someone holds the run's lease
    DEAD = "dead"  # nobody does, or its file is gone
    UNKNOWN = "unknown"  # the lease cannot be read here (another user's directory): left alone


def run_token(run_id: str) -> str:
    """What names a run's files (its lease, its turn dirs): 8 hex digits of its id's hash. Two runs that shared one
    would each keep the other's files alive, never the other way round."""
    return hashlib.sha256(run_id.encode("utf-8")).hexdigest()[:8]


def lease_path(run_id: str, directory: Path | None = None) -> Path:
    """The lease of ``run_id`` in ``directory`` (the temporary directory by default)."""
    return lease_of_token(run_token(run_id), directory)


def lease_of_token(token: str, directory: Path | None = None) -> Path:
    """The lease of the run whose token is ``token``, in ``directory`` (the temporary directory by default)."""
    return Path(directory or tempfile.gettempdir()) / f"{PREFIX}{token}{SUFFIX}"


def token_of_lease(name: str) -> str | None:
    """The run token a lease file's name carries, or None for another file."""
    if name.startswith(PREFIX) and name.endswith(SUFFIX):
        token = name[len(PREFIX):-len(SUFFIX)]
        return token if TOKEN.fullmatch(token) else None
    return None


def scope() -> str:
    """Where a lease's path means something: this machine (its ``/etc/machine-id``, empty where there is none), this
    boot of its kernel and this process's mount namespace, as ``<machine> <boot> <mount namespace>``."""
    try:
        boot = Path("/proc/sys/kernel/random/boot_id").read_text(encoding="ascii").strip()
        mounts = os.readlink("/proc/self/ns/mnt")
    except OSError:
        return ""
    try:
        machine = Path("/etc/machine-id").read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        machine = ""
    return f"{machine} {boot} {mounts}"


def from_an_earlier_boot(theirs: str, here: str) -> bool:
    """Whether the scope ``theirs`` is this machine's (the same machine id, which must be there) before its kernel's
    last boot: nothing that ran then runs now."""
    them, us = theirs.split(" "), here.split(" ")
    return len(them) == len(us) == 3 and bool(us[0]) and them[0] == us[0] and them[1] != us[1]


def lease_labels(run_id: str) -> dict[str, str]:
    """The labels that say where ``run_id``'s lease is, held by this process from now on (:func:`hold_run`)."""
    return {HOST_LABEL: socket.gethostname(), LEASE_LABEL: str(hold_run(run_id)), SCOPE_LABEL: scope()}


class RunLease:
    """This process's hold on one run's lease (shared: every process working for the run holds it)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.fd = locked_file(path, fcntl.LOCK_SH)

    def release(self) -> None:
        """Let go; the last holder removes the file."""
        if self.fd < 0:
            return
        try:
            fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # nobody else holds it: the file goes
            unlink_held(self.path, self.fd)
        except OSError:
            pass  # someone else holds it still: theirs to remove
        finally:
            os.close(self.fd)
            self.fd = -1


_HELD: dict[Path, RunLease] = {}


def hold_run(run_id: str, directory: Path | None = None) -> Path:
    """Hold ``run_id``'s lease for the life of this process (once; again is a no-op); its path. The lease is let go
    when the process exits (:func:`release_all` then runs)."""
    path = lease_path(run_id, directory)
    if path not in _HELD:
        _HELD[path] = RunLease(path)
    return path


@atexit.register
def release_all() -> None:
    """Let go of every lease this process holds (at exit; a test may call it to end its runs)."""
    while _HELD:
        _, lease = _HELD.popitem()
        lease.release()


def liveness(path: Path) -> Liveness:
    """Whether the run whose lease is at ``path`` is live: held by someone (live), not held or not there (dead), or
    not readable by this process (unknown). Never waits, never follows a link, never opens anything but a file."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        return Liveness.DEAD
    except OSError:
        return Liveness.UNKNOWN
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return Liveness.UNKNOWN
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return Liveness.LIVE
    except OSError:
        return Liveness.UNKNOWN
    finally:
        os.close(fd)
    return Liveness.DEAD


def remove_if_dead(path: Path) -> bool:
    """Remove a dead run's lease file (held by nobody); whether it was removed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return unlink_held(path, fd)
    except OSError:
        return False
    finally:
        os.close(fd)


def locked_file(path: Path, how: int, *, writable: bool = False) -> int:
    """A descriptor of the file at ``path`` (made if missing, ``0644``: anyone may try it, nobody else write it),
    locked ``how`` (``fcntl.LOCK_SH`` or ``LOCK_EX``, with ``LOCK_NB``: :class:`BlockingIOError` when someone else
    holds it), and still the file at ``path`` once locked; close it to let go."""
    while True:
        access = os.O_RDWR if writable else os.O_RDONLY
        fd = os.open(path, access | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o644)
        try:
            with contextlib.suppress(PermissionError):  # another user's file: as it is
                os.fchmod(fd, 0o644)  # whatever the umask: every user's gc may try it
            fcntl.flock(fd, how)
            if _same(path, fd):
                return fd
        except BaseException:
            os.close(fd)
            raise
        os.close(fd)  # removed (or replaced) while we waited: take the one there now


def _same(path: Path, fd: int) -> bool:
    try:
        here, held = os.lstat(path), os.fstat(fd)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (held.st_dev, held.st_ino)


def unlink_held(path: Path, fd: int) -> bool:
    """Remove the lock file at ``path``, which ``fd`` holds exclusively (if it is still the one there)."""
    if not _same(path, fd):
        return False
    try:
        os.unlink(path)
    except OSError:  # gone already, or another user's in a sticky directory
        return False
    return True
