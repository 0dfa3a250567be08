"""Only the turn reaches the turn (issue 29): runner run as root, as GitHub's hosted runner user (uid 1001) and as
another non-root uid (1003), each in the ``docker`` group, through the real engine and real CLIs.

- Another local user, in the same shared temporary directory (``1777``, as ``/tmp``), tries a live turn's
  ``mcp.sock`` and ``model.sock`` and to write into its turn dir and HOME, and fails every time; nothing in the turn
  dir is writable by group or others.
- A non-root runner reads and removes what the CLI made, its ``0600`` session files included (Claude Code's), and
  leaves nothing in TMPDIR.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from runner.images import ImageRecord, ensure_image
from runner.images.settings import ImageSettings
from tests.local_users import LocalUser, docker_user, image_cache_for, local_user, shared_tmp
from tests.support import RUNNER

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

OUTSIDER_UID = 1005  # neither root, nor the images' 1000, nor a runner's uid below
RUNNERS = ["root", "uid-1001", "uid-1003"]

# what the outsider tries, each on its own: one line of JSON, {attempt: the error's name, or "reached"}
TRY = r"""
import json, os, socket, sys
turn = sys.argv[1]
seen = {}
def attempt(name, action):
    try:
        action()
        seen[name] = "reached"
    except OSError as err:
        seen[name] = type(err).__name__
def connect(name):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(os.path.join(turn, name))
    finally:
        s.close()
attempt("connect mcp.sock", lambda: connect("mcp.sock"))
attempt("connect model.sock", lambda: connect("model.sock"))
attempt("list the turn dir", lambda: os.listdir(turn))
attempt("write in the turn dir", lambda: open(os.path.join(turn, "planted"), "x").close())
attempt("write in HOME", lambda: open(os.path.join(turn, "home", "planted"), "x").close())
attempt("read a config file", lambda: open(os.path.join(turn, "home", ".codex", "config.toml")).read())
print(json.dumps(seen))
"""


@pytest.fixture(scope="module")
def outsider() -> LocalUser:
    """A local user who has nothing to do with any turn (not in the docker group)."""
    return local_user("runner-outsider", OUTSIDER_UID, docker=False)


class Runner:
    """runner's command line run as root (this test process) or as a non-root user of the docker group."""

    def __init__(self, who: str, work: Path, cache: Path | None, user: LocalUser | None) -> None:
        self.who, self.work, self.cache, self.user = who, work, cache, user

    def popen(self, argv: list[str], tmp: Path, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
        if self.user is None:
            return subprocess.Popen([RUNNER, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                    env={**os.environ, "TMPDIR": str(tmp), **(env or {})}, cwd=self.work)
        return self.user.popen(["runner", *argv], self.user.env(tmp, self.cache, env), self.work)


def make_runner(who: str, settings: ImageSettings, root: Path) -> Runner:
    if who == "root":
        return Runner(who, root, None, None)
    user = docker_user(int(who.removeprefix("uid-")))
    work = user.mkdir(root / who)
    return Runner(who, work, image_cache_for(user, settings, work / "cache"), user)


@pytest.fixture(scope="module")
def place() -> Iterator[Path]:
    """Where the runners work, every user may pass (the runs' TMPDIR is made in it, 1777)."""
    path = shared_tmp("runner-access-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture(scope="module")
def images(engine: docker.DockerClient, image_settings: ImageSettings) -> dict[str, ImageRecord]:
    """The images the runners below use, built (by this process) before any runner's cache is made."""
    return {name: ensure_image(engine, name, image_settings) for name in ("reference", "codex", "claude-code")}


@pytest.fixture(scope="module", params=RUNNERS)
def runner(request: pytest.FixtureRequest, place: Path, image_settings: ImageSettings,
           images: dict[str, ImageRecord]) -> Runner:
    return make_runner(request.param, image_settings, place)


def turn_dir_of(tmp: Path) -> Path | None:
    found = [p for p in tmp.glob("runner-*") if (p / "mcp.sock").is_socket() and (p / "model.sock").is_socket()]
    return found[0] if found else None


def wait_for(what: str, probe: object, timeout: float = 120) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = probe() if callable(probe) else None
        if found:
            return found
        time.sleep(0.2)
    pytest.fail(f"{what}: not within {timeout:.0f} s")


def open_to_others(turn: Path) -> list[str]:
    """Every path in ``turn`` that a user other than its owner could write (or, for a socket, connect to)."""
    loose = []
    for path in [turn, *turn.rglob("*")]:
        mode = path.lstat().st_mode
        if stat.S_ISLNK(mode):
            continue
        if mode & (stat.S_IWGRP | stat.S_IWOTH):
            loose.append(f"{path.relative_to(turn.parent)} {stat.filemode(mode)}")
    return loose


def test_another_local_user_reaches_neither_socket_of_a_live_turn_nor_its_turn_dir(
    runner: Runner, outsider: LocalUser, place: Path
) -> None:
    tmp = shared_tmp(f"tmp-{runner.who}-", place)
    out = place / f"out-{runner.who}"
    # a turn that stays live: its model never answers, so the CLI waits (until the deadline, or the Ctrl-C below)
    proc = runner.popen(["exec", "--harness", "codex", "--case", "escalation", "--model-fault", "stall",
                         "--deadline", "120", "--json", "--out", str(out)], tmp)
    try:
        turn = wait_for("a live turn with both its sockets", lambda: turn_dir_of(tmp))
        assert isinstance(turn, Path)
        wait_for("the CLI's config in HOME", lambda: (turn / "home" / ".codex" / "config.toml").exists())
        tried = outsider.run(["/usr/bin/python3", "-c", TRY, str(turn)], outsider.env(tmp), cwd=Path("/"),
                             timeout=60)
        assert tried.returncode == 0, tried.stderr
        assert json.loads(tried.stdout) == {
            "connect mcp.sock": "PermissionError", "connect model.sock": "PermissionError",
            "list the turn dir": "PermissionError", "write in the turn dir": "PermissionError",
            "write in HOME": "PermissionError", "read a config file": "PermissionError",
        }, f"runner as {runner.who}: another local user reached the live turn at {turn}"
        assert open_to_others(turn) == [], "nothing in a turn dir is writable by group or others"
        assert proc.poll() is None, "the turn was still live while the outsider tried it"
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr
    assert list(tmp.iterdir()) == [], f"runner as {runner.who} left files in TMPDIR"


# (runner's uid, column, how the turn runs): each column on the mount transport under runc, and the column whose CLI
# writes its session 0600 over the stream transport (the archive made for the container's uid) and under gVisor
READERS = [
    *[(who, harness, ()) for who in ("uid-1001", "uid-1003") for harness in ("reference", "codex", "claude-code")],
    ("uid-1003", "claude-code", ("--transport", "stream")),
    ("uid-1001", "claude-code", ("--runtime", "runsc")),
]


@pytest.mark.parametrize(("who", "harness", "how"), READERS, ids=[f"{w}-{h}{''.join(x)}" for w, h, x in READERS])
def test_a_non_root_runner_reads_and_removes_what_the_cli_made_and_leaves_nothing_in_tmpdir(
    who: str, harness: str, how: tuple[str, ...], place: Path, image_settings: ImageSettings,
    images: dict[str, ImageRecord]
) -> None:
    """Claude Code writes its session 0600 and Codex its sessions in directories of its own: a runner of another uid
    than the CLI's (before: 1000 in the container) could not read the one nor remove the other."""
    runner = make_runner(who, image_settings, place)
    assert runner.user is not None
    tmp = shared_tmp(f"tmp-{who}-", place)
    out = place / f"out-{who}-{harness}{''.join(how)}"
    proc = runner.popen(["exec", "--harness", harness, "--case", "escalation", "--json", "--out", str(out), *how],
                        tmp)
    stdout, stderr = proc.communicate(timeout=480)
    assert proc.returncode == 0, f"runner exec as {who} ({harness}):\n{stderr[-3000:]}"
    report = json.loads(stdout)
    assert report["status"] == "escalated" and report["infrastructureError"] is None
    assert report["outcome"]["metadata"]["harnessOutcome"] == "complete"
    assert (report["transport"], report["pins"].get("runtime")) == (  # the pin is absent under runc
        "stream" if "stream" in how else "mount", "runsc" if "runsc" in how else None)
    if harness != "reference":
        copied = [p for p in Path(report["files"]["session"]).rglob("*") if p.is_file()]
        assert copied, "the CLI's own session transcript was read and copied out"
    left = sorted(map(str, tmp.rglob("*")))
    assert left == [], f"runner as {who} left in TMPDIR: {left[:8]}"
    assert {p.stat().st_uid for p in [out, *out.rglob("*")]} == {runner.user.uid}


LOCKS_ITSELF_IN = (
    "mkdir -p /run/runner/home/locked/deep && echo mine > /run/runner/home/locked/deep/file && "
    "chmod 000 /run/runner/home/locked/deep/file && chmod 500 /run/runner/home/locked/deep /run/runner/home/locked"
)


def test_a_non_root_runner_removes_what_the_cli_made_unwritable(
    place: Path, image_settings: ImageSettings, images: dict[str, ImageRecord]
) -> None:
    """A CLI (a profile of the test's own on the reference image) leaves a directory 0500 holding a 0000 file in its
    HOME: runner, of the CLI's uid, gives its own directories back u+rwx and removes them."""
    runner = make_runner("uid-1003", image_settings, place)
    assert runner.user is not None
    profile = runner.work / "locks-itself-in.yaml"
    profile.write_text(f"id: locks-itself-in\nlabel: Locks itself in\nimage: reference\nhome: turn\n"
                       f"argv: [/bin/sh, -c, {json.dumps(LOCKS_ITSELF_IN)}]\n"
                       "requires_mcp_session: false\ninterpreter: exit-code\n", encoding="utf-8")
    os.chown(profile, runner.user.uid, runner.user.gid)
    tmp = shared_tmp("tmp-locked-", place)
    proc = runner.popen(["exec", "--profile", str(profile), "--case", "escalation", "--json", "--out",
                         str(place / "out-locked")], tmp)
    stdout, stderr = proc.communicate(timeout=300)
    assert proc.returncode == 0, stderr[-3000:]
    assert json.loads(stdout)["exitCode"] == 0, "the CLI locked itself in"
    left = sorted(map(str, tmp.rglob("*")))
    assert left == [], f"left in TMPDIR: {left[:8]}"
