"""GitHub's hosted runner, as near as this machine can be made to look like it, for running a workflow job's own
steps the way GitHub runs them.

What the hosted runner is (ubuntu-latest; each fact is listed in docs/ci.md's "What the workflows rely on" with where it
was verified): a non-root user, in the ``docker`` group (its engine answers on the default socket), with
passwordless ``sudo``, a HOME of its own, the job's Python from ``actions/setup-python`` first on PATH, and an
Ubuntu system without this machine's Debian extras. What is done here to match it:

- the user :data:`USER` (created once, with GitHub's uid :data:`UID`, in the ``docker`` group, with a passwordless
  sudoers entry and no subordinate ids: the column job's Prepare step adds them, as it would on a runner that lacks
  them);
- a PATH of its own (:attr:`HostedRunner.path`): links to every program on this machine's system PATH except
  :data:`EXTRAS`, the Debian extras an Ubuntu runner does not have. There is no Ubuntu mirror here, so nothing
  pretends to be Ubuntu: a restricted PATH is the stand-in for a system without them. A step that installs one of
  them with ``apt-get install`` makes it visible from the next step on, as installing it would;
- a Python of the system's (Debian's ``python3``, 3.11 like the workflow's ``python-version``), made into a venv
  owned by the user, as setup-python's tool cache is;
- every path the job touches under the user's HOME, so the engine sees the same paths as the host (the mount
  transport's bind mounts are real host paths, as on GitHub).
"""

from __future__ import annotations

import grp
import os
import pwd
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import pytest

USER = "ghrunner"  # GitHub's is called `runner`: another name here, so no message mistakes it for the tool
UID = 1001  # GitHub's (ubuntu-latest): not 1000, the images' own uid, which hides what another uid would meet
EXTRAS = {"mmdebstrap": "mmdebstrap", "socat": "socat"}  # program: the Debian package that brings it
SYSTEM_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
SHELL = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]  # GitHub's `shell: bash`
APT_INSTALL = re.compile(r"apt-get\s+install\s+([^\n;&|]+)")


@dataclass
class HostedRunner:
    user: str
    uid: int
    gid: int
    groups: list[int]
    work: Path  # everything this machine's jobs write: checkouts, HOMEs, the Python, the PATH
    path: Path  # the restricted PATH's one directory
    python: Path  # setup-python's bin directory
    hidden: set[str] = field(default_factory=lambda: set(EXTRAS))

    def env(self, home: Path, extra: dict[str, str] | None = None) -> dict[str, str]:
        """A job's environment: nothing of this test run's (root's HOME, its pyenv, its caches), as a fresh
        hosted runner starts."""
        base = {
            "HOME": str(home), "USER": self.user, "LOGNAME": self.user, "SHELL": "/bin/bash", "LANG": "C.UTF-8",
            "PATH": f"{self.python}{os.pathsep}{self.path}", "CI": "true", "GITHUB_ACTIONS": "true",
            "RUNNER_OS": "Linux", "RUNNER_TEMP": str(self.work / "runner-temp"),
            # actions/setup-python's `cache: pip` restores pip's cache: one shared here, so jobs don't re-download
            "PIP_CACHE_DIR": str(self.work / "pip-cache"), "PIP_DISABLE_PIP_VERSION_CHECK": "1",
        }
        return {**_network_settings(), **base, **(extra or {})}

    def mkdir(self, path: Path) -> Path:
        path.mkdir(parents=True, exist_ok=True)
        os.chown(path, self.uid, self.gid)
        return path

    def own(self, path: Path) -> None:
        """Hand ``path`` (a file, or a tree this test made as root) to the user, as actions/checkout's files are
        theirs."""
        os.lchown(path, self.uid, self.gid)
        for dirpath, dirnames, filenames in os.walk(path):
            os.chown(dirpath, self.uid, self.gid)
            for name in dirnames + filenames:
                os.lchown(os.path.join(dirpath, name), self.uid, self.gid)

    def run(self, argv: list[str], *, cwd: Path, env: dict[str, str], timeout: float
            ) -> subprocess.CompletedProcess[str]:
        return subprocess.run(argv, cwd=cwd, env=env, user=self.uid, group=self.gid, extra_groups=self.groups,
                              capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)

    def run_step(self, script: str, *, cwd: Path, env: dict[str, str], timeout: float = 1800
                 ) -> subprocess.CompletedProcess[str]:
        """One `run:` step, as GitHub runs it: its script in a file, under `bash -eo pipefail`."""
        file = self.work / "runner-temp" / f"step-{os.urandom(4).hex()}.sh"
        file.write_text(script, encoding="utf-8")
        os.chown(file, self.uid, self.gid)
        done = self.run([*SHELL, str(file)], cwd=cwd, env=env, timeout=timeout)
        if done.returncode == 0:
            self._installed(script)
        return done

    def _installed(self, script: str) -> None:
        """A step that installed a Debian extra with apt-get makes it visible, as the package would."""
        for found in APT_INSTALL.finditer(script.replace("\\\n", " ")):
            packages = set(found.group(1).split())
            for program in [p for p in self.hidden if EXTRAS[p] in packages]:
                self.unhide(program)

    def unhide(self, program: str) -> None:
        located = shutil.which(program, path=os.pathsep.join(SYSTEM_PATH))
        assert located, f"the step installed {program}, but it is not on this machine's PATH"
        (self.path / program).symlink_to(located)
        self.hidden.discard(program)

    def fresh(self) -> None:
        """A new virtual machine for the next job: what an earlier job's steps installed or set is gone."""
        for program in EXTRAS:
            (self.path / program).unlink(missing_ok=True)
        self.hidden = set(EXTRAS)
        _forget_subordinate_ids()

    def which(self, program: str) -> str | None:
        return shutil.which(program, path=f"{self.python}{os.pathsep}{self.path}")


# how this machine reaches the registries (its proxy and the CA bundle that goes with it) and where its engine is:
# facts of the machine, not of root's session, so the user's jobs get them as a hosted runner has its own
NETWORK = re.compile(
    r"^(DOCKER_HOST|NODE_EXTRA_CA_CERTS|(PIP|NPM_CONFIG|npm_config)_\w+|\w*(PROXY|proxy|CERT|CA_BUNDLE|CA_CERTS)\w*)$"
)


def _network_settings() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if NETWORK.match(key)}


def _ensure_user() -> pwd.struct_passwd:
    docker_group = grp.getgrnam("docker")  # Debian's docker.io made it; the engine's socket belongs to it
    try:
        entry = pwd.getpwnam(USER)
    except KeyError:
        subprocess.run(["useradd", "--create-home", "--shell", "/bin/bash", "--uid", str(UID), "--groups",
                        docker_group.gr_name, USER], check=True, capture_output=True, timeout=60)
        entry = pwd.getpwnam(USER)
    if USER not in docker_group.gr_mem:
        subprocess.run(["usermod", "-aG", docker_group.gr_name, USER], check=True, capture_output=True, timeout=60)
    sudoers = Path("/etc/sudoers.d") / USER
    sudoers.write_text(f"{USER} ALL=(ALL) NOPASSWD:ALL\n", encoding="utf-8")
    sudoers.chmod(0o440)
    _forget_subordinate_ids()
    return entry


def _forget_subordinate_ids() -> None:
    """The user without subordinate ids: the Prepare step adds them where the runner lacks them."""
    for table in (Path("/etc/subuid"), Path("/etc/subgid")):
        if table.exists():
            lines = table.read_text(encoding="utf-8").splitlines(keepends=True)
            table.write_text("".join(line for line in lines if not line.startswith(f"{USER}:")), encoding="utf-8")


def _restricted_path(directory: Path) -> None:
    directory.mkdir()
    for system_dir in SYSTEM_PATH:
        if not os.path.isdir(system_dir):
            continue
        for name in sorted(os.listdir(system_dir)):
            target = os.path.join(system_dir, name)
            link = directory / name
            if name in EXTRAS or link.exists() or link.is_symlink():
                continue
            if os.path.isfile(target) and os.access(target, os.X_OK):
                link.symlink_to(target)


@pytest.fixture(scope="session")
def hosted_runner() -> Iterator[HostedRunner]:
    """The hosted runner's user and system; its work directory is removed afterwards."""
    if os.geteuid() != 0:
        pytest.fail("running the workflow's jobs as GitHub's non-root user needs root to create that user "
                    "(make test runs as root on the machines it provisions)")
    sudo = shutil.which("sudo")
    assert sudo, "sudo is not installed: `make test-tools` installs it"
    entry = _ensure_user()
    home = Path(entry.pw_dir)
    work = Path(tempfile.mkdtemp(prefix="hosted-", dir=home))
    os.chown(work, entry.pw_uid, entry.pw_gid)
    groups = sorted({g.gr_gid for g in grp.getgrall() if USER in g.gr_mem})
    runner = HostedRunner(USER, entry.pw_uid, entry.pw_gid, groups, work, work / "path", work / "setup-python" / "bin")
    _restricted_path(runner.path)
    for name in ("runner-temp", "pip-cache"):
        runner.mkdir(work / name)
    # actions/setup-python: a Python 3.11 the user owns, first on PATH
    made = runner.run(["/usr/bin/python3", "-m", "venv", str(work / "setup-python")], cwd=work,
                      env=runner.env(home), timeout=300)
    assert made.returncode == 0, made.stderr
    for program in EXTRAS:
        assert runner.which(program) is None, f"{program} must not be on the hosted runner's PATH"
    yield runner
    shutil.rmtree(work, ignore_errors=True)


@contextmanager
def empty_engine(log_dir: Path) -> Iterator[str]:
    """A Docker Engine of the job's own, empty as a hosted runner's is when its job starts: a second dockerd on this
    host (its own data root, exec root and socket, owned by the ``docker`` group; no bridge, since every container
    of a turn or a build runs with network none), so the paths it mounts are the host's own, as on GitHub. Yields
    its DOCKER_HOST; stopped and removed afterwards, whatever happened."""
    root = Path(tempfile.mkdtemp(prefix="runner-hosted-engine-", dir="/var/lib"))
    root.chmod(0o755)  # the socket's group (docker) decides who may talk to it, as for /var/run/docker.sock
    socket = root / "docker.sock"
    log = (log_dir / f"{root.name}.log").open("ab")
    daemon = subprocess.Popen(
        ["dockerd", "--data-root", str(root / "data"), "--exec-root", str(root / "exec"),
         "--pidfile", str(root / "dockerd.pid"), "-H", f"unix://{socket}", "--group", "docker",
         "--bridge", "none", "--iptables=false", "--ip6tables=false"],
        stdout=log, stderr=log, stdin=subprocess.DEVNULL)
    host = f"unix://{socket}"
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(["docker", "-H", host, "info"], capture_output=True, timeout=30).returncode != 0:
            assert daemon.poll() is None, f"the job's engine exited ({daemon.returncode}); see {log.name}"
            assert time.monotonic() < deadline, f"the job's engine did not answer within 60 s; see {log.name}"
            time.sleep(0.5)
        yield host
    finally:
        daemon.terminate()
        try:
            daemon.wait(timeout=60)
        except subprocess.TimeoutExpired:
            daemon.kill()
            daemon.wait(timeout=30)
        log.close()
        shutil.rmtree(root, ignore_errors=True)
