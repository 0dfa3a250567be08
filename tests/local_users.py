"""Other local users, for the tests of who reaches a turn: runner run by a non-root user of the ``docker`` group (as
GitHub's hosted runner runs it, uid 1001, or any other uid), and a user outside it who must reach nothing of a turn.

A user is made with ``useradd`` (as root: ``make test`` runs as root on the machines it provisions) once and kept,
like the hosted runner's (tests/hosted_runner.py). runner runs as that user the way a user installs it: this
checkout built as a wheel into a virtual environment of the system's Python that every user may read
(:func:`installed_runner`, once per test session), never from the checkout itself, which may lie where other users
cannot pass (a fresh clone in a ``mktemp -d`` directory is 0700). Each user has a cache directory of its own that
finds the images this engine already has: the build records and the staged inputs' digests copied from the test
run's cache, the wheels linked (:func:`image_cache_for`).
"""

from __future__ import annotations

import atexit
import functools
import grp
import os
import pwd
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from runner.images.settings import ImageSettings
from tests import hosted_runner

ROOT = Path(__file__).resolve().parent.parent
SYSTEM_PYTHON = "/usr/bin/python3"


@functools.cache
def installed_runner() -> Path:
    """``runner`` installed from this checkout (its wheel, with the runtime lock's dependencies) into a virtual
    environment of the system's Python under ``/var/tmp`` that every user may read; removed when the session ends."""
    return runner_venv("runner-installed-") / "bin" / "runner"


def runner_venv(prefix: str, *also: Path) -> Path:
    """A fresh virtual environment of the system's Python under ``/var/tmp`` (every user may read it; removed when the
    session ends) with this checkout installed as a user installs it (the runtime lock's dependencies, then the
    project), and the projects ``also`` after it (a plugin's): the venv's directory."""
    if not Path(SYSTEM_PYTHON).exists():
        pytest.fail(f"runner is installed into a venv of {SYSTEM_PYTHON}, which is missing")
    home = Path(tempfile.mkdtemp(prefix=prefix, dir="/var/tmp"))
    home.chmod(0o755)
    atexit.register(shutil.rmtree, home, True)
    venv = home / "venv"
    # the project's sources as they are now, alone: a build in the checkout itself would reuse its build/ directory,
    # where a module deleted since an earlier build still lies and would be packaged again
    source = home / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(ROOT / "runner", source / "runner", ignore=shutil.ignore_patterns("__pycache__"))
    steps = ([SYSTEM_PYTHON, "-m", "venv", str(venv)],
             [str(venv / "bin" / "pip"), "install", "--quiet", "--no-deps", "--require-hashes",
              "-r", str(ROOT / "requirements" / "runtime.lock")],
             [str(venv / "bin" / "pip"), "install", "--quiet", "--no-deps", str(source)],
             *([str(venv / "bin" / "pip"), "install", "--quiet", "--no-deps", str(project)] for project in also))
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True, timeout=900, cwd=home)
        assert done.returncode == 0, f"{' '.join(step)}: {done.stderr[-2000:]}"
    return venv


@dataclass(frozen=True)
class LocalUser:
    name: str
    uid: int
    gid: int
    groups: tuple[int, ...]
    home: Path

    def mkdir(self, path: Path) -> Path:
        """A directory of the user's own (its parents must let the user in)."""
        path.mkdir(parents=True, exist_ok=True)
        os.chown(path, self.uid, self.gid)
        return path

    def env(self, tmpdir: Path, cache: Path | None = None, extra: dict[str, str] | None = None) -> dict[str, str]:
        """What runner runs with as this user: its own HOME and TMPDIR, the engine."""
        base = {
            "HOME": str(self.home), "USER": self.name, "LOGNAME": self.name, "LANG": "C.UTF-8",
            "PATH": "/usr/local/bin:/usr/bin:/bin", "TMPDIR": str(tmpdir),
            **({"RUNNER_CACHE_DIR": str(cache)} if cache else {}),
            **{k: v for k, v in os.environ.items() if k in ("DOCKER_HOST", "RUNNER_RUNTIME")},
        }
        return {**base, **(extra or {})}

    def popen(self, argv: list[str], env: dict[str, str], cwd: Path) -> subprocess.Popen[str]:
        """``argv`` as this user (its groups included); ``runner`` at its head is the installed tool."""
        command = [str(installed_runner()), *argv[1:]] if argv[0] == "runner" else argv
        return subprocess.Popen(command, cwd=cwd, env=env, user=self.uid, group=self.gid,
                                extra_groups=list(self.groups), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                stdin=subprocess.DEVNULL, text=True)

    def run(self, argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 600
            ) -> subprocess.CompletedProcess[str]:
        proc = self.popen(argv, env, cwd)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            out, err = proc.communicate(timeout=60)
        return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def local_user(name: str, uid: int, *, docker: bool) -> LocalUser:
    """The user ``name`` of uid ``uid`` (made when missing), in the ``docker`` group or not."""
    if os.geteuid() != 0:
        pytest.fail("making another local user needs root (make test runs as root on the machines it provisions)")
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        groups = ["--groups", "docker"] if docker else []
        made = subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "--uid", str(uid), *groups, name],
                              capture_output=True, text=True, timeout=60)
        assert made.returncode == 0, made.stderr
        entry = pwd.getpwnam(name)
    assert entry.pw_uid == uid, f"user {name} exists with uid {entry.pw_uid}, not {uid}"
    docker_group = grp.getgrnam("docker")
    if docker and name not in docker_group.gr_mem:
        subprocess.run(["usermod", "-aG", "docker", name], check=True, capture_output=True, timeout=60)
    if not docker and name in docker_group.gr_mem:
        subprocess.run(["gpasswd", "-d", name, "docker"], check=True, capture_output=True, timeout=60)
    groups = tuple(sorted({g.gr_gid for g in grp.getgrall() if name in g.gr_mem} - {entry.pw_gid}))
    return LocalUser(name, entry.pw_uid, entry.pw_gid, groups, Path(entry.pw_dir))


def docker_user(uid: int) -> LocalUser:
    """A non-root user of uid ``uid`` in the ``docker`` group: the hosted runner's (tests/hosted_runner.py) for
    GitHub's uid 1001, ``runner-u<uid>`` for another."""
    return local_user(hosted_runner.USER if uid == hosted_runner.UID else f"runner-u{uid}", uid, docker=True)


def shared_tmp(prefix: str, parent: Path = Path("/tmp")) -> Path:
    """A temporary directory every local user may use, as ``/tmp`` is (sticky, ``1777``), in ``parent`` (which every
    user may pass): what stands between one user and another user's turn dir in it is the turn dir's own modes."""
    path = Path(tempfile.mkdtemp(prefix=prefix, dir=parent))
    path.chmod(0o1777)
    return path


def _link_once(source: str, dest: str) -> None:
    if not os.path.exists(dest):
        os.link(source, dest)


def image_cache_for(user: LocalUser, settings: ImageSettings, dest: Path) -> Path:
    """A cache directory of ``user``'s own in which runner finds the images this engine already has (built by the
    test run first): the build records and the npm and Debian stages' digests copied (each stage's tree is only
    named by its digest), the wheels hard-linked (their bytes are an input of the key; linked, they stay root's,
    read-only to the user). Again on the same ``dest``: brought up to date."""
    source = settings.cache_dir
    user.mkdir(dest)
    for kept in ("builds",):
        if (source / kept).is_dir():
            shutil.copytree(source / kept, dest / kept, dirs_exist_ok=True)
    for stage in sorted((source / "npm").glob("*/.complete")) + sorted((source / "debs").glob("*/.complete")):
        target = dest / stage.parent.relative_to(source)
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy2(stage, target / ".complete")
        for inner in ("npm-global", "debs"):
            if (stage.parent / inner).is_dir():
                (target / inner).mkdir(exist_ok=True)
    if (source / "wheels").is_dir():
        shutil.copytree(source / "wheels", dest / "wheels", copy_function=_link_once, dirs_exist_ok=True)
    for directory, dirs, files in os.walk(dest):  # the user's, but not the linked wheels (root's files)
        os.chown(directory, user.uid, user.gid)
        for name in files:
            path = Path(directory, name)
            if os.stat(path).st_nlink == 1:
                os.chown(path, user.uid, user.gid)
        dirs.sort()
    return dest
