"""The per-turn directory: the only host path a container sees, mounted at ``/run/runner``.

It holds ``mcp.sock`` (the MCP server), ``model.sock`` (the model endpoint, when the CLI has one),
``script.json`` (the reference harness's actions), and, for profiles with ``home: turn``, ``home/``:
the CLI's HOME with its rendered config files and ``work/`` as its working directory. HOME lives
here rather than on a tmpfs so that the CLI's own session transcript survives the container and can
be copied next to the stdout transcript.

Only runner and the container's uid reach it (:mod:`runner.sandbox.ownership` says how, and why that way): runner's
own directory, everything the container uses in it handed to that uid, ``0600``/``0700``. Its name carries its run
(``runner-<run token><random>``, :func:`~runner.sandbox.lease.run_token`), and its maker holds that run's lease
(:mod:`runner.sandbox.lease`) from before it exists, so that ``runner gc`` can sweep the turn dirs a killed runner
left in the temporary directory (:func:`sweep_turn_dirs`) and never one whose run is live.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from runner.harnesses.profile import Profile
from runner.sandbox.container import TURN_MOUNT
from runner.sandbox.interface import HOME as TMPFS_HOME
from runner.sandbox.lease import (
    Liveness,
    hold_run,
    lease_of_token,
    liveness,
    remove_if_dead,
    run_token,
    token_of_lease,
)
from runner.sandbox.ownership import ContainerUser, close_turn_dir, container_user, give, remove_tree

PREFIX = "runner-"
# runner-<the run's token: 8 hex digits><5 hex digits of its own>: as long as the name it replaces (runner-turn- and
# mkdtemp's 8 characters), for the sockets' paths in it stay within AF_UNIX's 108 bytes wherever they did before
TURN_DIR_NAME = re.compile(r"runner-([0-9a-f]{8})[0-9a-f]{5}")


@dataclass(frozen=True)
class TurnDir:
    host: Path
    profile: Profile
    user: ContainerUser = field(default_factory=container_user)  # who the CLI runs as; owns what it uses here

    @property
    def mcp_socket(self) -> Path:
        return self.host / "mcp.sock"

    @property
    def model_socket(self) -> Path:
        return self.host / "model.sock"

    @property
    def home_host(self) -> Path | None:
        return self.host / "home" if self.profile.home == "turn" else None

    @property
    def home(self) -> str:
        return container_home(self.profile)

    @property
    def workdir(self) -> str:
        return f"{self.home}/work" if self.profile.home == "turn" else TMPFS_HOME

    def remove(self) -> list[str]:
        """Remove it, with whatever the CLI left in it; what could not be removed (nothing, normally)."""
        return remove_tree(self.host)


def container_home(profile: Profile) -> str:
    """HOME inside the container."""
    return f"{TURN_MOUNT}/home" if profile.home == "turn" else TMPFS_HOME


def placeholder_values(profile: Profile, prompt: str, model_id: str | None, api_key: str | None) -> dict[str, str]:
    """Everything a profile template may name (``profile.PLACEHOLDERS``)."""
    port = str(profile.model.port) if profile.model else ""
    return {
        "prompt": prompt,
        "prompt_json": json.dumps(prompt, ensure_ascii=False),
        "turn_dir": TURN_MOUNT,
        "mcp_socket": f"{TURN_MOUNT}/mcp.sock",
        "script": f"{TURN_MOUNT}/script.json",
        "home": container_home(profile),
        "model_url": f"http://127.0.0.1:{port}" if port else "",
        "model_port": port,
        "api_key": api_key or "",
        "model": model_id or "",
        "model_dialect": profile.model.dialect if profile.model else "",
    }


def create_turn_dir(
    profile: Profile, script: Mapping[str, object], values: dict[str, str], run_id: str = "run",
    user: ContainerUser | None = None,
) -> TurnDir:
    """Create the turn dir of a turn of ``run_id`` (holding the run's lease first), its script and HOME handed to
    ``user`` (the container's; :func:`~runner.sandbox.ownership.container_user` when None), reachable by that uid
    and runner alone."""
    user = user or container_user()
    hold_run(run_id)
    host = _new_dir(Path(tempfile.gettempdir()), f"{PREFIX}{run_token(run_id)}")
    turn = TurnDir(host, profile, user)
    _write(host / "script.json", json.dumps(script), user)
    if turn.home_host is not None:
        (turn.home_host / "work").mkdir(parents=True, mode=0o700)
        for relative, content in profile.render_config_files(values).items():
            target = turn.home_host / relative
            target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            _write(target, content, user)
        _give_tree(turn.home_host, user)
    close_turn_dir(host, user)
    return turn


def _write(path: Path, text: str, user: ContainerUser) -> None:
    """Write ``text`` at ``path``, made ``0600`` (never readable by anyone else, whatever the umask), for ``user``."""
    with os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600),
                   "w", encoding="utf-8") as fh:
        fh.write(text)
    give(path, user)


def _give_tree(root: Path, user: ContainerUser) -> None:
    """Hand ``root`` and everything under it to ``user``: HOME with its config files, as runner just made it (no
    container has seen it yet)."""
    for directory, _subdirs, files in os.walk(root):
        here = Path(directory)
        give(here, user)
        for name in files:
            give(here / name, user)


def _new_dir(parent: Path, prefix: str) -> Path:
    """A new directory ``<prefix><5 hex digits>`` in ``parent``, ``0700`` from the start (nobody else's)."""
    while True:
        path = parent / f"{prefix}{secrets.token_hex(3)[:5]}"
        try:
            path.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(path, 0o700)  # whatever the umask
        return path


def token_of_turn_dir(name: str) -> str | None:
    """The run token a turn dir's name carries (``runner-<token><random>``), or None for any other name (a turn dir
    of a runner from before the tokens included, ``runner-turn-<random>``: whose run nothing can tell)."""
    found = TURN_DIR_NAME.fullmatch(name)
    return found.group(1) if found else None


@dataclass
class Sweep:
    """What :func:`sweep_turn_dirs` did: the turn dirs it removed, those it left (with why), the leases it removed."""

    removed: list[str] = field(default_factory=list)
    left: dict[str, str] = field(default_factory=dict)  # path: live, unknown, or why it could not be removed
    leases: list[str] = field(default_factory=list)


def sweep_turn_dirs(directory: Path | None = None, runs: set[str] | None = None) -> Sweep:
    """Remove the turn dirs (and the leases) of dead runs from ``directory`` (the temporary directory by default);
    only those of ``runs`` (run ids) when given. A turn dir whose run is live, or whose lease this process cannot
    read, is left alone: its lease is made before it, so a live run's turn dir always has a held lease."""
    where = Path(directory or tempfile.gettempdir())
    tokens = {run_token(run_id) for run_id in runs} if runs is not None else None
    sweep = Sweep()
    judged: dict[str, Liveness] = {}

    def state(token: str) -> Liveness:
        if token not in judged:
            judged[token] = liveness(lease_of_token(token, where))
        return judged[token]

    try:
        names = sorted(os.listdir(where))
    except OSError:
        return sweep
    for name in names:
        path = where / name
        token = token_of_turn_dir(name)
        if token is None or (tokens is not None and token not in tokens) or path.is_symlink() or not path.is_dir():
            continue
        if (found := state(token)) is not Liveness.DEAD:
            sweep.left[str(path)] = found.value
            continue
        failures = remove_tree(path)
        if failures:
            sweep.left[str(path)] = f"could not be removed: {failures[0]}"
        else:
            sweep.removed.append(str(path))
    for name in names:
        token = token_of_lease(name)
        if token is not None and (tokens is None or token in tokens) and remove_if_dead(where / name):
            sweep.leases.append(str(where / name))
    return sweep
