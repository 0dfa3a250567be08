"""Who the CLI runs as, and who owns its turn dir: runner and the container's uid, and nobody else on the host.

The turn dir lies under the shared temporary directory and holds what drives the turn: ``mcp.sock`` (whoever connects
can ask first and close the latch, or burn the turn's budgets), ``model.sock`` (in live mode, the vendor's API with the
host's key) and the CLI's HOME with its config and session files. So its modes are all that stands between the turn
and every other local user, and they must hold whatever uid runs runner: root, GitHub's hosted runner user (uid
1001), or any other. And the CLI's files must stay readable and removable by runner whatever modes the CLI gives them
(several CLIs write their session 0600, in directories they make 0700).

**The mechanism: the container runs as a uid runner may own files for.**

- *runner is root*: the CLI runs as ``1000:1000``, the user the images are built for (base-cli's ``runner``, and the
  node compile caches of the node-22 images are warmed for that uid). Root gives what the container uses to it
  (chown): script.json, HOME and its config files, and the two sockets, each ``0600`` (a directory ``0700``). The
  turn dir itself stays root's, ``0750`` with group 1000: the container may list it (as it could its mount
  before: a CLI that reads the directories above its working directory) and pass through it, never put anything
  in it. Root reads and removes whatever the CLI leaves, whatever its modes.
- *runner is not root*: it cannot give a file to another uid, so the CLI runs as runner's own uid and gid. The turn
  dir is ``0700`` and everything in it ``0600``/``0700``, runner's: a file the CLI makes is runner's, so runner
  reads and removes it whatever its mode. The HOME tmpfs (``uid=``/``gid=``) and the stream transport's archive are
  made for that uid too (:func:`runner.sandbox.container.create_kwargs`, :mod:`runner.sandbox.stream_transport`).

Either way no other local uid reaches the sockets or HOME, and nothing is world-writable.

Why not the alternatives, for a non-root runner: open modes (``0777``/``0666``, what it was) let every local user
connect and write; a group shared by runner and the container (a setgid ``0770`` directory) loses every file the CLI
makes ``0600`` and every directory it makes ``0700`` (runner could neither read nor delete them: the
``PermissionError`` of issue 29, and files left in TMPDIR); POSIX ACLs lose them the same way (a new file's ACL mask
comes from the mode it is created with, so a ``0600`` file masks runner's entry out), and filesystems differ in
having them; handing the files back after the turn needs a privileged helper container per turn.

What it costs and what it assumes:

- As a non-root runner's uid the CLI has no passwd entry in the image (HOME is set in its environment, as always),
  and the node-22 images' compile cache, warmed for uid 1000, goes unused: those CLIs start a little slower.
- The kernel sees the CLI as runner's own uid (non-root) or as host uid 1000 (root; on most hosts the first user's
  uid, who shares the container's access to the turn dir). The container's own pid, network, mount and IPC
  namespaces, no capabilities and the seccomp profile (no keyctl) keep that uid from anything of runner's beyond
  the turn dir; what it does share are the kernel's per-uid counts (processes against ``RLIMIT_NPROC``, inotify
  instances), the first bounded by the container's pids limit. Being runner's uid, a non-root runner's CLI may also
  rename or replace what lies at the top of the turn dir: runner only unlinks there and removes the tree without
  following a link (:func:`remove_tree`); the CLI's files are hostile input whoever owns them (the intake's rule).
- Ids are the host's: a Docker Engine with ``userns-remap``, or rootless Podman, maps the container's uid to a
  subordinate one, which owns nothing here (rootless Podman is refused earlier by the wiring probe,
  :class:`~runner.sandbox.probe.HardeningRefused`). Under gVisor (``runsc``) its kernel checks the same modes
  against the same ids. Under the stream transport (Docker-out-of-Docker, a remote engine) the container never sees
  the host's turn dir: runner connects to its own sockets, and the volume's files are made for the container's uid.
"""

from __future__ import annotations

import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path

IMAGE_UID = IMAGE_GID = 1000  # the user every image is built for (base-cli: `runner`)
FILE_MODE, DIR_MODE = 0o600, 0o700
TURN_DIR_MODE_SHARED = 0o750  # root's turn dir: the container's group may list it and pass through, not write


@dataclass(frozen=True)
class ContainerUser:
    """The uid and gid the CLI's container runs as (:func:`container_user`)."""

    uid: int
    gid: int

    def __str__(self) -> str:
        """As the engine takes it (``user`` of a container or an exec)."""
        return f"{self.uid}:{self.gid}"

    @property
    def is_runners(self) -> bool:
        """Whether it is this process's own uid (runner is not root): then everything is runner's already."""
        return self.uid == os.geteuid()


def container_user() -> ContainerUser:
    """The images' ``1000:1000`` when runner is root, else runner's own uid and gid (see the module)."""
    if os.geteuid() == 0:
        return ContainerUser(IMAGE_UID, IMAGE_GID)
    return ContainerUser(os.geteuid(), os.getegid())


def close_turn_dir(path: Path, user: ContainerUser) -> None:
    """Make ``path`` (a directory runner just made) the turn dir's root: ``0700`` when the container runs as runner,
    else runner's with the container's group and ``0750``."""
    if user.is_runners:
        os.chmod(path, DIR_MODE)
    else:
        os.chown(path, os.geteuid(), user.gid)
        os.chmod(path, TURN_DIR_MODE_SHARED)


def give(path: Path, user: ContainerUser) -> None:
    """Hand ``path`` (a file, directory or socket runner made, never a link) to the container's uid: owned by it,
    ``0600`` (a directory ``0700``); reachable by that uid and by runner alone."""
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        raise ValueError(f"{path}: a link is never handed to the container")
    if not user.is_runners:
        os.lchown(path, user.uid, user.gid)
    os.chmod(path, DIR_MODE if stat.S_ISDIR(mode) else FILE_MODE)


def remove_tree(root: Path) -> list[str]:
    """Remove ``root`` and everything in it, the CLI's files included whatever their modes; what could not be
    removed (none: all of it went). A non-root runner owns every file the CLI made (it ran as runner's uid) but may
    not write in a directory the CLI made ``0500``: each such directory is opened without following a link and given
    back ``u+rwx`` first. Call it once nothing writes under ``root`` any more (the container is gone)."""
    if os.geteuid() != 0:
        _writable_dirs(root)
    failures: list[str] = []

    def failed(_fn: object, path: str, info: tuple[type[BaseException], BaseException, object]) -> None:
        if not isinstance(info[1], FileNotFoundError):
            failures.append(f"{path}: {info[1]}")

    shutil.rmtree(root, onerror=failed)
    return failures


def _writable_dirs(root: Path) -> None:
    """``u+rwx`` on every directory under ``root`` this process owns: each one before it is entered, every one
    reached from its parent's descriptor, no link followed (``os.fwalk``). Nothing is read but names; a walk for
    removing, not for taking anything in (what is taken in goes through :mod:`runner.intake.files`)."""
    _owner_rwx(root, None)
    for _path, subdirs, _files, parent in os.fwalk(root, follow_symlinks=False):
        for name in subdirs:
            _owner_rwx(Path(name), parent)


def _owner_rwx(path: Path, parent: int | None) -> None:
    """``u+rwx`` on the directory ``path`` (in ``parent``'s descriptor, when given), if this process owns it."""
    try:
        handle = os.open(path, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=parent)
    except OSError:
        return
    try:
        found = os.fstat(handle)
        if found.st_uid == os.geteuid() and found.st_mode & 0o700 != 0o700:
            # through the descriptor's own link: the directory it holds, whatever its modes (fchmod refuses O_PATH)
            os.chmod(f"/proc/self/fd/{handle}", stat.S_IMODE(found.st_mode) | 0o700)
    except OSError:
        pass
    finally:
        os.close(handle)
