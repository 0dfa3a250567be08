"""The intake's file side, on a real filesystem: what the CLI left is read confined, bounded, and never through a link.

Each hostile tree is what a CLI in its container can make in its HOME (links to host files and directories, relative
links that climb out, FIFOs, sockets, huge and growing files, deep and wide trees) or put in a tar (names that climb
out, links, devices, an archive without end), and a link swapped in between runner's look at a name and its open.
Nothing here needs the engine: the same trees through the real box are tests/integration/test_hostile_files.py's.
"""

from __future__ import annotations

import io
import os
import socket
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.intake import files
from runner.intake.files import (
    BoundedStream,
    IntakeBounds,
    NotConfined,
    PastTheBound,
    Tree,
    copy_tree,
    extract_tar,
    parts,
    read_file,
    usage,
    walk,
)

SECRET = b"host-secret-0123456789"


@pytest.fixture
def host(tmp_path: Path) -> Path:
    """What the host holds outside the CLI's tree: a secret file and a directory with a key in it."""
    outside = tmp_path / "host"
    (outside / ".ssh").mkdir(parents=True)
    (outside / "secret.txt").write_bytes(SECRET)
    (outside / ".ssh" / "id_rsa").write_bytes(SECRET + b" (the key)")
    return outside


@pytest.fixture
def turn(tmp_path: Path) -> Path:
    root = tmp_path / "turn"
    (root / "home" / "sessions").mkdir(parents=True)
    (root / "home" / "sessions" / "s1.jsonl").write_text('{"ok": 1}\n')
    return root


def everything_in(root: Path) -> bytes:
    """Every byte of every file under ``root`` (read by runner's test, following nothing)."""
    found = b""
    for dirpath, _dirs, names in os.walk(root):
        for name in names:
            path = Path(dirpath) / name
            assert not path.is_symlink(), f"{path} is a link in a copy"
            found += path.read_bytes()
    return found


# --- confined paths ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/etc/passwd", "../x", "a/../../b", "a/..", "x\x00y"])
def test_a_path_that_leaves_its_root_is_refused(path: str) -> None:
    with pytest.raises(NotConfined):
        parts(path)
    with pytest.raises(NotConfined):
        Tree(Path("/tmp"), path)


def test_a_confined_path_is_its_components() -> None:
    assert parts("home/.codex/sessions") == ("home", ".codex", "sessions")
    assert parts("./a//b/") == ("a", "b") and parts("") == ()


# --- links are never followed --------------------------------------------------------------------------------------


@pytest.mark.parametrize("target", ["secret.txt", ".ssh", "/proc/self/environ", "relative-climb"])
def test_a_link_at_the_session_path_itself_is_not_followed(turn: Path, host: Path, target: str, tmp_path: Path) -> None:
    session = turn / "home" / "sessions"
    for child in session.iterdir():
        child.unlink()
    session.rmdir()
    if target == "relative-climb":
        session.symlink_to("../../../host")  # from turn/home: up to tmp_path, into the host's directory
    else:
        session.symlink_to(target if target.startswith("/") else host / target)
    copied = copy_tree(Tree(turn, "home/sessions"), tmp_path / "out")
    assert copied.files == [] and copied.bytes == 0
    assert [(s.path, s.why) for s in copied.skipped] == [("home/sessions", "a symbolic link (never followed)")]
    assert not (tmp_path / "out").exists() or everything_in(tmp_path / "out") == b""


def test_a_link_above_the_session_path_is_not_followed(turn: Path, host: Path, tmp_path: Path) -> None:
    (turn / "home" / "sessions" / "s1.jsonl").unlink()
    (turn / "home" / "sessions").rmdir()
    (turn / "home" / "dot").symlink_to(host)  # the session path's parent is a link to the host's directory
    copied = copy_tree(Tree(turn, "home/dot/.ssh"), tmp_path / "out")
    assert copied.files == [] and [s.why for s in copied.skipped] == ["a symbolic link (never followed)"]


def test_links_below_the_session_path_are_skipped_and_the_rest_copied(turn: Path, host: Path, tmp_path: Path) -> None:
    session = turn / "home" / "sessions"
    (session / "environ").symlink_to("/proc/self/environ")
    (session / "key").symlink_to(host / ".ssh" / "id_rsa")
    (session / "hostdir").symlink_to(host)
    (session / "up").symlink_to("../../..")
    (session / "nested").mkdir()
    (session / "nested" / "deep-link").symlink_to(host / "secret.txt")
    (session / "nested" / "kept.txt").write_text("kept")
    copied = copy_tree(Tree(turn, "home/sessions"), tmp_path / "out")
    assert sorted(copied.files) == ["nested/kept.txt", "s1.jsonl"]
    assert sorted(s.path for s in copied.skipped) == ["environ", "hostdir", "key", "nested/deep-link", "up"]
    assert SECRET not in everything_in(tmp_path / "out")
    assert b"PATH=" not in everything_in(tmp_path / "out")


def test_a_link_swapped_in_between_the_look_and_the_open_is_not_followed(
    turn: Path, host: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The race a CLI's background process runs during teardown, made certain: right after runner looks at the name
    (a regular file), it becomes a link to the host's secret."""
    session = turn / "home" / "sessions"
    looked = os.stat

    def look_then_swap(path: object, *args: object, **kwargs: object) -> os.stat_result:
        seen = looked(path, *args, **kwargs)  # type: ignore[arg-type]
        if path == "sessions" and not session.is_symlink():
            session.rename(turn / "home" / "was-sessions")
            session.symlink_to(host)
        return seen

    monkeypatch.setattr(files.os, "stat", look_then_swap)
    copied = copy_tree(Tree(turn, "home/sessions"), tmp_path / "out")
    monkeypatch.undo()
    assert (turn / "home" / "sessions").is_symlink(), "the swap did happen"
    assert copied.files == []
    assert [s.why for s in copied.skipped] == ["a symbolic link (never followed)"]
    assert not (tmp_path / "out").exists() or SECRET not in everything_in(tmp_path / "out")


def test_a_file_swapped_in_below_the_tree_between_the_look_and_the_open_is_not_followed(
    turn: Path, host: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    session = turn / "home" / "sessions"
    (session / "swapped").write_text("innocent")
    looked = os.stat

    def look_then_swap(path: object, *args: object, **kwargs: object) -> os.stat_result:
        seen = looked(path, *args, **kwargs)  # type: ignore[arg-type]
        if path == "swapped" and not (session / "swapped").is_symlink():
            (session / "swapped.tmp").symlink_to(host / "secret.txt")
            os.replace(session / "swapped.tmp", session / "swapped")
        return seen

    monkeypatch.setattr(files.os, "stat", look_then_swap)
    copied = copy_tree(Tree(turn, "home/sessions"), tmp_path / "out")
    monkeypatch.undo()
    assert copied.files == ["s1.jsonl"]
    assert [(s.path, s.why) for s in copied.skipped] == [("swapped", "a symbolic link (never followed)")]
    assert SECRET not in everything_in(tmp_path / "out")


# --- only regular files and directories ----------------------------------------------------------------------------


def test_a_fifo_and_a_socket_are_skipped_without_blocking(turn: Path, tmp_path: Path) -> None:
    session = turn / "home" / "sessions"
    os.mkfifo(session / "fifo")
    listener = socket.socket(socket.AF_UNIX)
    listener.bind(str(session / "sock"))
    done: list[object] = []
    worker = threading.Thread(target=lambda: done.append(copy_tree(Tree(turn, "home/sessions"), tmp_path / "out")))
    worker.start()
    worker.join(5)
    listener.close()
    assert done, "a FIFO in the tree blocked the copy"
    copied = done[0]
    assert isinstance(copied, files.Copied) and copied.files == ["s1.jsonl"]
    assert {s.path: s.why.split(" (")[0] for s in copied.skipped} == {"fifo": "a FIFO", "sock": "a socket"}


def test_a_tree_that_is_one_file_copies_to_its_name(turn: Path, tmp_path: Path) -> None:
    copied = copy_tree(Tree(turn, "home/sessions/s1.jsonl"), tmp_path / "out")
    assert copied.files == ["s1.jsonl"] and (tmp_path / "out" / "s1.jsonl").read_text() == '{"ok": 1}\n'


def test_nothing_there_is_nothing_copied(turn: Path, tmp_path: Path) -> None:
    assert copy_tree(Tree(turn, "home/missing/deeper"), tmp_path / "out").files == []
    assert copy_tree(Tree(tmp_path / "no-root", "x"), tmp_path / "out").files == []
    assert not (tmp_path / "out").exists()


# --- bounded while read --------------------------------------------------------------------------------------------


def test_the_copy_stops_at_its_byte_bound(turn: Path, tmp_path: Path) -> None:
    session = turn / "home" / "sessions"
    for name in ("a", "b", "c"):
        (session / name).write_bytes(b"x" * 400)
    copied = copy_tree(Tree(turn, "home/sessions"), tmp_path / "out", IntakeBounds(bytes=1000))
    assert copied.files == ["a", "b"] and copied.bytes == 800 and not copied.complete
    assert copied.skipped[-1].path == "c" and "past the bound of 1000 bytes" in copied.skipped[-1].why


def test_a_file_that_grows_past_its_size_is_read_only_to_the_bound(turn: Path, tmp_path: Path) -> None:
    path = turn / "home" / "sessions" / "s1.jsonl"
    fd = os.open(path, os.O_RDONLY)
    try:
        path.write_bytes(b"y" * 5000)
        assert files.read_bounded(fd, 5000) == b"y" * 5000
        os.lseek(fd, 0, os.SEEK_SET)
        with pytest.raises(PastTheBound):
            files.read_bounded(fd, 4999)
    finally:
        os.close(fd)
    assert read_file(turn, "home/sessions/s1.jsonl", 5000) == b"y" * 5000
    with pytest.raises(PastTheBound):
        read_file(turn, "home/sessions/s1.jsonl", 100)


def test_a_wide_or_deep_tree_is_walked_only_to_its_bounds(turn: Path, tmp_path: Path) -> None:
    session = turn / "home" / "sessions"
    for n in range(50):
        (session / f"f{n:03}").write_text("x")
    walked = files.Walked()
    seen = [e.path for e in walk(Tree(turn, "home/sessions"), IntakeBounds(entries=10), walked=walked)]
    assert len(seen) == 11 and not walked.complete  # the top, then ten entries
    deep = turn / "home" / "deep"
    deep.joinpath(*["d"] * 40).mkdir(parents=True)
    walked = files.Walked()
    seen = [e.path for e in walk(Tree(turn, "home/deep"), IntakeBounds(depth=5), walked=walked)]
    assert max(p.count("/") for p in seen) == 4 and walked.skipped[0].why == "deeper than 5 directories"


def test_usage_counts_what_the_disk_holds_and_stops_past_the_budget(turn: Path) -> None:
    session = turn / "home" / "sessions"
    with open(session / "sparse", "wb") as fh:
        fh.truncate(10 * 1024 * 1024 * 1024)  # ten GiB that take no block
    (session / "real").write_bytes(os.urandom(256 * 1024))
    within = usage(Tree(turn), IntakeBounds(bytes=1024 * 1024, entries=100))
    assert within.over is None and 256 * 1024 <= within.bytes < 1024 * 1024
    over = usage(Tree(turn), IntakeBounds(bytes=100 * 1024, entries=100))
    assert over.over == "more than 102400 bytes on disk" and over.bytes > 100 * 1024
    many = usage(Tree(turn), IntakeBounds(bytes=1024 * 1024, entries=3))
    assert many.over == "more than 3 files and directories"


# --- tar archives (the stream transport's) -------------------------------------------------------------------------


def tar_of(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def member(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, link
    return info


def chunked(data: bytes, size: int = 700) -> Iterator[bytes]:
    for start in range(0, len(data), size):
        yield data[start:start + size]


def test_a_tar_yields_only_confined_regular_files_and_directories(tmp_path: Path, host: Path) -> None:
    archive = tar_of(
        (member("sessions", tarfile.DIRTYPE), None),
        (member("sessions/ok.jsonl"), b"fine"),
        (member("sessions/../../escaped"), b"out"),
        (member("/abs/escaped"), b"out"),
        (member("sessions/link", tarfile.SYMTYPE, str(host / "secret.txt")), None),
        (member("sessions/hard", tarfile.LNKTYPE, "sessions/ok.jsonl"), None),
        (member("sessions/dev", tarfile.CHRTYPE), None),
        (member("sessions/fifo", tarfile.FIFOTYPE), None),
    )
    dest = tmp_path / "scratch"
    got = extract_tar(BoundedStream(chunked(archive), len(archive)), dest)
    assert got.files == ["sessions/ok.jsonl"] and got.complete
    assert sorted(s.path for s in got.skipped) == sorted(
        ["sessions/../../escaped", "/abs/escaped", "sessions/link", "sessions/hard", "sessions/dev", "sessions/fifo"])
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if "host" not in p.parts) == [
        "scratch", "scratch/sessions", "scratch/sessions/ok.jsonl"]


def test_a_tar_is_read_as_it_streams_and_stops_at_its_bound(tmp_path: Path) -> None:
    big = os.urandom(64 * 1024)
    archive = tar_of(*[(member(f"s/{n}"), big) for n in range(20)])
    pulled: list[int] = []

    def source() -> Iterator[bytes]:
        for chunk in chunked(archive, 4096):
            pulled.append(len(chunk))
            yield chunk

    stream = BoundedStream(source(), 200 * 1024)
    got = extract_tar(stream, tmp_path / "scratch", IntakeBounds(bytes=10 * 1024 * 1024))
    assert not got.complete and "the archive stopped" in got.skipped[-1].why
    assert 1 <= len(got.files) <= 3
    assert sum(pulled) <= 200 * 1024 + 4096, "nothing past the bound but the rest of one chunk was pulled"


def test_a_tar_stops_at_its_file_bytes_and_entries(tmp_path: Path) -> None:
    archive = tar_of(*[(member(f"s/{n}"), b"z" * 1000) for n in range(10)])
    got = extract_tar(BoundedStream(chunked(archive), len(archive)), tmp_path / "a", IntakeBounds(bytes=2500))
    assert got.files == ["s/0", "s/1"] and not got.complete
    got = extract_tar(BoundedStream(chunked(archive), len(archive)), tmp_path / "b", IntakeBounds(entries=3))
    assert got.files == ["s/0", "s/1", "s/2"] and not got.complete


def test_a_cut_archive_keeps_what_came_and_says_it_stopped(tmp_path: Path) -> None:
    archive = tar_of((member("s/a"), b"a" * 3000), (member("s/b"), b"b" * 3000))
    cut = archive[:512 + 3072 + 512 + 1000]
    got = extract_tar(BoundedStream(chunked(cut), len(archive)), tmp_path / "scratch")
    assert got.files == ["s/a"] and not got.complete
