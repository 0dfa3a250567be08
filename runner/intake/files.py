"""Files the CLI could have written, read without trusting them: confined, bounded, never through a link.

A path the CLI controls is never handed to anything that resolves it (``open(path)``, ``Path.is_file()``,
``Path.rglob``, ``shutil.copytree``): each of those follows a symbolic link the CLI planted, at the path itself or at
any directory above it, to a host file (``/proc/self/environ``, a key) or a host directory, and each checks a name at
one moment and opens it at another, so a link swapped in between is followed just the same. Here a tree is read from
a descriptor of a directory runner owns (a :class:`Tree`'s root), one component at a time, each opened relative to
its parent's descriptor with ``O_NOFOLLOW`` (and ``O_DIRECTORY`` for a directory, ``O_NONBLOCK`` for a file, so that
a FIFO never blocks the open); what was opened is then checked on the descriptor (``fstat``: the same inode as the
name had, of the same type), so what is read is what was checked. Only regular files and directories are read: a
link, a socket, a FIFO or a device is skipped and reported, never opened. A relative path is confined before it is
used (no absolute path, no ``..``), and every walk is bounded in entries, depth and bytes, counted while it reads (a
file is read up to the bound and no further, never read whole and measured after).

What is written lands in a directory runner owns, through the same descriptors (``O_NOFOLLOW`` on every file and
directory it creates), so a name from the tree can only ever name a place below the destination.

Used by the turn's collection of the CLI's session transcript (:mod:`runner.turn.collect`), the mount transport's
``read_tree`` and the stream transport's archives (:mod:`runner.sandbox.stream_transport`), and the turn's disk
budget (:func:`usage`).
"""

from __future__ import annotations

import errno
import os
import stat
import tarfile
from collections.abc import Callable, Generator, Iterable, Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

MiB = 1024 * 1024
DIRECTORY = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
REGULAR = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CREATE = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
CHUNK = MiB


class IntakeError(ValueError):
    """What the CLI left cannot be taken in: a path that leaves its root, or more than the bound."""


class NotConfined(IntakeError):
    """A relative path that is absolute, climbs out (``..``) or holds a NUL."""


class PastTheBound(IntakeError):
    """More bytes than the bound allows; nothing past the bound was read."""


@dataclass(frozen=True)
class IntakeBounds:
    """How much one walk takes in: bytes read (or, for :func:`usage`, allocated on disk), entries seen (skipped ones
    included) and directory depth below the tree."""

    bytes: int = 64 * MiB
    entries: int = 10_000
    depth: int = 32


DEFAULT_BOUNDS = IntakeBounds()


def parts(relative: str) -> tuple[str, ...]:
    """The components of ``relative``, a path confined below its root (``""`` is the root itself; ``.`` and empty
    components name nothing and are dropped). :class:`NotConfined` for an absolute path, a ``..`` or a NUL."""
    if "\x00" in relative:
        raise NotConfined(f"{relative!r}: a NUL in a path")
    if relative.startswith("/"):
        raise NotConfined(f"{relative!r}: an absolute path")
    found = tuple(p for p in relative.split("/") if p not in ("", "."))
    if ".." in found:
        raise NotConfined(f"{relative!r}: '..' climbs out of where it must stay")
    return found


@dataclass(frozen=True)
class Tree:
    """What the CLI left at ``relative`` below ``root``. ``root`` is runner's own directory (made by runner, never
    writable by the CLI): it is the one path opened by name. Every component of ``relative``, and everything below
    it, is the CLI's, and is opened without following."""

    root: Path
    relative: str = ""

    def __post_init__(self) -> None:
        parts(self.relative)  # NotConfined now, not when it is read

    @property
    def name(self) -> str:
        found = parts(self.relative)
        return found[-1] if found else self.root.name


@dataclass(frozen=True)
class NotTaken:
    """An entry a walk did not take in, and why (a link, a socket, past a bound, gone while it was read...)."""

    path: str
    why: str


@dataclass
class Walked:
    """What a walk met besides what it took in: the entries it skipped and why, how many entries it saw, and whether
    it went to the end (False: it stopped at a bound)."""

    skipped: list[NotTaken] = field(default_factory=list)
    entries: int = 0
    complete: bool = True

    def skip(self, path: str, why: str) -> None:
        self.skipped.append(NotTaken(path, why))

    def stop(self, path: str, why: str) -> None:
        """The walk ends here, at a bound."""
        self.skip(path, why)
        self.complete = False


@dataclass
class Copied(Walked):
    """What a copy or an extraction took in: the regular files written (relative to the destination) and the bytes
    read, besides what it skipped."""

    files: list[str] = field(default_factory=list)
    bytes: int = 0


@dataclass(frozen=True)
class DiskUsage:
    """What a tree holds on disk: bytes allocated and entries, counted up to the bound; ``over`` says which bound it
    passed (None: within both)."""

    bytes: int
    entries: int
    over: str | None


@dataclass(frozen=True)
class TreeEntry:
    """One regular file or directory of a walk: its path relative to the tree (its name, for a tree that is one
    file), what ``fstat`` said of it, and its descriptor (open for as long as the walk is at it; None for a file of a
    walk that does not open files)."""

    path: str
    stat: os.stat_result
    fd: int | None

    @property
    def is_dir(self) -> bool:
        return stat.S_ISDIR(self.stat.st_mode)


KINDS = ((stat.S_ISSOCK, "a socket"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
         (stat.S_ISBLK, "a block device"))
LINK = "a symbolic link (never followed)"
GONE = "gone while it was read"


def _kind(mode: int) -> str:
    """Why an entry of this mode is not read."""
    if stat.S_ISLNK(mode):
        return LINK
    name = next((name for test, name in KINDS if test(mode)), "an entry of an unknown type")
    return f"{name} (only regular files and directories are read)"


def _open_at(dir_fd: int, name: str, *, open_files: bool = True) -> tuple[int | None, os.stat_result] | str:
    """Open ``name`` in ``dir_fd`` without following it: its descriptor (None for a file when ``open_files`` is
    false) and ``fstat``, or why it was not opened. The name is looked at first (``fstatat``, no follow) so that
    nothing but a regular file or a directory is ever opened, then opened ``O_NOFOLLOW`` and checked again on the
    descriptor: a name swapped for a link in between fails the open (``ELOOP``), one swapped for another file fails
    the check."""
    try:
        seen = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return GONE
    except OSError as err:
        return f"unreadable ({err.strerror})"
    if not (stat.S_ISREG(seen.st_mode) or stat.S_ISDIR(seen.st_mode)):
        return _kind(seen.st_mode)
    if stat.S_ISREG(seen.st_mode) and not open_files:
        return None, seen
    try:
        fd = os.open(name, DIRECTORY if stat.S_ISDIR(seen.st_mode) else REGULAR, dir_fd=dir_fd)
    except OSError as err:
        if err.errno == errno.ENOENT:
            return GONE
        if err.errno in (errno.ELOOP, errno.ENOTDIR):  # O_NOFOLLOW met a link (ENOTDIR with O_DIRECTORY), or a file
            with suppress(OSError):
                if stat.S_ISLNK(os.stat(name, dir_fd=dir_fd, follow_symlinks=False).st_mode):
                    return LINK
            return "changed while it was read"
        return f"unreadable ({err.strerror})"
    got = os.fstat(fd)
    if (got.st_dev, got.st_ino, stat.S_IFMT(got.st_mode)) != (seen.st_dev, seen.st_ino, stat.S_IFMT(seen.st_mode)):
        os.close(fd)
        return "changed while it was read"
    return fd, got


@contextmanager
def _opened_tree(tree: Tree, walked: Walked, open_files: bool) -> Iterator[tuple[int | None, os.stat_result] | None]:
    """The top of ``tree``, opened component by component from its root: (descriptor, stat), or None when there is
    nothing to read there (missing; or a link or special file, then said in ``walked``)."""
    names = parts(tree.relative)
    with ExitStack() as fds:
        try:
            fd = os.open(tree.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        except FileNotFoundError:
            yield None
            return
        fds.callback(os.close, fd)
        top: tuple[int | None, os.stat_result] = (fd, os.fstat(fd))
        for depth, name in enumerate(names):
            parent = top[0]
            assert parent is not None  # only a directory is descended into
            last = depth == len(names) - 1
            opened = _open_at(parent, name, open_files=open_files or not last)
            if isinstance(opened, str):
                if opened != GONE:
                    walked.skip("/".join(names[:depth + 1]), opened)
                yield None
                return
            if opened[0] is not None:
                fds.callback(os.close, opened[0])
            top = opened
            if not last and not stat.S_ISDIR(top[1].st_mode):
                yield None  # a file where a directory must be: nothing below it
                return
        yield top


def walk(tree: Tree, bounds: IntakeBounds = DEFAULT_BOUNDS, *, open_files: bool = True,
         walked: Walked | None = None) -> Generator[TreeEntry, None, None]:
    """Every regular file and directory of ``tree``, parents before children, names sorted; the tree's top itself
    first when it is a directory (path ``""``), alone when it is a file (path: its name). Links, sockets, FIFOs and
    devices are skipped, and so is everything past ``bounds`` (entries, depth): each is told in ``walked``, which
    also says whether the walk went to the end. Each entry's descriptor is open only while the walk is at it."""
    walked = walked if walked is not None else Walked()
    with _opened_tree(tree, walked, open_files) as top:
        if top is None:
            return
        fd, seen = top
        if not stat.S_ISDIR(seen.st_mode):
            walked.entries += 1
            yield TreeEntry(tree.name, seen, fd)
            return
        assert fd is not None
        yield TreeEntry("", seen, fd)
        yield from _below(fd, "", 1, bounds, open_files, walked)


def _below(
    dir_fd: int, prefix: str, depth: int, bounds: IntakeBounds, open_files: bool, walked: Walked,
) -> Iterator[TreeEntry]:
    try:
        with os.scandir(dir_fd) as listing:
            names = sorted(entry.name for entry in listing)
    except OSError as err:
        walked.skip(prefix, f"unreadable ({err.strerror})")
        return
    for name in names:
        path = f"{prefix}{name}"
        if not walked.complete:
            return
        walked.entries += 1
        if walked.entries > bounds.entries:
            walked.stop(path, f"more than {bounds.entries} entries: the walk stopped here")
            return
        opened = _open_at(dir_fd, name, open_files=open_files)
        if isinstance(opened, str):
            walked.skip(path, opened)
            continue
        fd, seen = opened
        try:
            if stat.S_ISDIR(seen.st_mode) and depth > bounds.depth:
                walked.skip(path, f"deeper than {bounds.depth} directories")
                continue
            yield TreeEntry(path, seen, fd)
            if fd is not None and stat.S_ISDIR(seen.st_mode):
                yield from _below(fd, f"{path}/", depth + 1, bounds, open_files, walked)
        finally:
            if fd is not None:
                os.close(fd)


def read_bounded(fd: int, limit: int) -> bytes:
    """Everything ``fd`` holds, read in chunks: :class:`PastTheBound` as soon as it holds more than ``limit`` bytes
    (at most ``limit + 1`` bytes are read)."""
    chunks: list[bytes] = []
    total = 0
    while True:
        chunk = os.read(fd, min(CHUNK, limit + 1 - total))
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
        total += len(chunk)
        if total > limit:
            raise PastTheBound(f"more than {limit} bytes")


def read_file(root: Path, relative: str, limit: int) -> bytes | None:
    """The regular file at ``relative`` below ``root`` (every component opened without following), read up to
    ``limit`` bytes (:class:`PastTheBound` past it); None when there is no regular file there."""
    for entry in walk(Tree(root, relative), IntakeBounds(bytes=limit, entries=1)):
        if entry.fd is not None and not entry.is_dir:
            return read_bounded(entry.fd, limit)
    return None


Transform = Callable[[str, bytes], bytes | None]  # (path relative to the destination, bytes read) -> bytes to write


def copy_tree(
    tree: Tree, dest: Path, bounds: IntakeBounds = DEFAULT_BOUNDS, transform: Transform | None = None,
) -> Copied:
    """Copy the regular files of ``tree`` into ``dest`` (a directory runner owns; made when a file is written),
    keeping their paths: a tree that is a directory copies its contents into ``dest``, one that is a file copies to
    ``dest/<its name>``. ``transform`` may rewrite (or drop, with None) each file's bytes on the way. Stops at the
    first file that would take the bytes read past ``bounds.bytes``; the copy is then not ``complete``."""
    copied = Copied()
    with _Destination(dest) as out:
        entries = walk(tree, bounds, walked=copied)
        for entry in entries:
            if entry.is_dir:
                continue  # made when a file below it is written: an empty directory is not copied
            assert entry.fd is not None
            left = bounds.bytes - copied.bytes
            try:
                if entry.stat.st_size > left:
                    raise PastTheBound(f"{entry.stat.st_size} bytes")
                data = read_bounded(entry.fd, left)  # PastTheBound when it grew after fstat
            except PastTheBound:
                copied.stop(entry.path, f"past the bound of {bounds.bytes} bytes: the copy stopped here")
                entries.close()
                break
            copied.bytes += len(data)
            kept = transform(entry.path, data) if transform is not None else data
            if kept is not None:
                out.write(tuple(entry.path.split("/")), kept)
                copied.files.append(entry.path)
    return copied


class _Destination:
    """A directory runner owns, written through descriptors: every directory and file below it is created (or
    opened) relative to its parent's descriptor with ``O_NOFOLLOW``."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._dirs: dict[tuple[str, ...], int] = {}

    def __enter__(self) -> _Destination:
        return self

    def __exit__(self, *_exc: object) -> None:
        for fd in self._dirs.values():
            os.close(fd)
        self._dirs.clear()

    def directory(self, path: tuple[str, ...]) -> int:
        """The directory at ``path`` below the root (confined components), made when missing."""
        if path not in self._dirs:
            if not path:
                self.root.mkdir(parents=True, exist_ok=True)
                self._dirs[()] = os.open(self.root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            else:
                parent = self.directory(path[:-1])
                with suppress(FileExistsError):
                    os.mkdir(path[-1], 0o777, dir_fd=parent)
                self._dirs[path] = os.open(path[-1], DIRECTORY, dir_fd=parent)
        return self._dirs[path]

    def write(self, path: tuple[str, ...], data: bytes | Iterable[bytes]) -> None:
        """Write ``data`` (bytes, or chunks of them) to the file at ``path``, replacing what was there."""
        fd = os.open(path[-1], CREATE, 0o666, dir_fd=self.directory(path[:-1]))
        try:
            for chunk in [data] if isinstance(data, bytes) else data:
                view = memoryview(chunk)
                while view:
                    view = view[os.write(fd, view):]
        finally:
            os.close(fd)


def usage(tree: Tree, bounds: IntakeBounds) -> DiskUsage:
    """The bytes ``tree`` holds on disk (allocated blocks: a sparse file counts what it takes) and its entries,
    counted without opening a file and without following a link; the count stops once past a bound."""
    total = 0
    walked = Walked()
    entries = walk(tree, bounds, open_files=False, walked=walked)
    for entry in entries:
        total += entry.stat.st_blocks * 512
        if total > bounds.bytes:
            entries.close()
            budget = f"{bounds.bytes // MiB} MiB" if bounds.bytes % MiB == 0 else f"{bounds.bytes} bytes"
            return DiskUsage(total, walked.entries, f"more than {budget} on disk")
    if not walked.complete:
        return DiskUsage(total, walked.entries, f"more than {bounds.entries} files and directories")
    return DiskUsage(total, walked.entries, None)


class BoundedStream:
    """A readable stream over ``chunks`` (an HTTP response's body, say) that fails with :class:`PastTheBound` once more
    than ``limit`` bytes have been asked of it: nothing much past the bound is ever read (one chunk at most), and
    no more than what was asked for and one chunk is held at a time."""

    def __init__(self, chunks: Iterable[bytes], limit: int) -> None:
        self._chunks = iter(chunks)
        self._buffer = b""
        self.limit = limit
        self.read_bytes = 0

    def read(self, size: int = -1) -> bytes:
        # never pull more than what tells the bound was passed: one byte past it (and the rest of one chunk)
        want = self.limit + 1 - self.read_bytes if size < 0 else min(size, self.limit + 1 - self.read_bytes)
        pieces, held = [self._buffer], len(self._buffer)
        while held < want:
            chunk = next(self._chunks, b"")
            if not chunk:
                break
            pieces.append(chunk)
            held += len(chunk)
        buffer = b"".join(pieces)
        out, self._buffer = buffer[:want], buffer[want:]
        self.read_bytes += len(out)
        if self.read_bytes > self.limit:
            raise PastTheBound(f"an archive of more than {self.limit} bytes")
        return out


def extract_tar(stream: BoundedStream, dest: Path, bounds: IntakeBounds = DEFAULT_BOUNDS) -> Copied:
    """Extract a tar read from ``stream`` as it comes (tarfile's stream mode: never the whole archive in memory)
    into ``dest`` (a directory runner owns; made when missing): regular files and directories only, each member's
    name confined below ``dest`` (:func:`parts`), written through the same descriptors as :func:`copy_tree`'s, at
    most ``bounds`` entries, depth and file bytes. A member that is anything else (a link, a device...) or names a
    path outside is skipped and told. A stream that ends early or passes its own bound stops the extraction: what
    was extracted stays, and the result is not ``complete``."""
    copied = Copied()
    with _Destination(dest) as out:
        out.directory(())
        try:
            with tarfile.open(fileobj=stream, mode="r|") as tar:  # type: ignore[call-overload]
                for member in tar:
                    copied.entries += 1
                    if copied.entries > bounds.entries:
                        copied.stop(member.name, f"more than {bounds.entries} entries: the extraction stopped here")
                        break
                    try:
                        names = parts(member.name)
                    except NotConfined as err:
                        copied.skip(member.name, str(err))
                        continue
                    if not names:
                        continue
                    if len(names) > bounds.depth + 1:
                        copied.skip(member.name, f"deeper than {bounds.depth} directories")
                        continue
                    if member.isdir():
                        out.directory(names)
                        continue
                    if not member.isfile():
                        copied.skip(member.name, "a link or a special file (only regular files and directories "
                                                 "are taken)")
                        continue
                    if copied.bytes + member.size > bounds.bytes:
                        copied.stop(member.name, f"past the bound of {bounds.bytes} bytes: the extraction stopped "
                                                 "here")
                        break
                    source = tar.extractfile(member)
                    assert source is not None  # a regular file's member
                    out.write(names, _chunks(source, member.size))
                    copied.bytes += member.size
                    copied.files.append("/".join(names))
        except (tarfile.TarError, PastTheBound, EOFError, OSError) as err:
            copied.stop("", f"the archive stopped: {err}")
    return copied


def _chunks(source: IO[bytes], size: int) -> Iterator[bytes]:
    left = size
    while left > 0:
        chunk = source.read(min(CHUNK, left))
        if not chunk:
            raise EOFError("a member cut short")
        left -= len(chunk)
        yield chunk
