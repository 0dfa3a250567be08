"""The per-turn directory: the only host path a container sees, mounted at ``/run/runner``.

It holds ``mcp.sock`` (the MCP server), ``model.sock`` (the model endpoint, when the CLI has one),
``script.json`` (the reference harness's actions), and, for profiles with ``home: turn``, ``home/``:
the CLI's HOME with its rendered config files and ``work/`` as its working directory. HOME lives
here rather than on a tmpfs so that the CLI's own session transcript survives the container and can
be copied next to the stdout transcript.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from runner.harnesses.profile import Profile
from runner.sandbox.container import TURN_MOUNT
from runner.sandbox.interface import HOME as TMPFS_HOME

CONTAINER_UID = 1000


@dataclass(frozen=True)
class TurnDir:
    host: Path
    profile: Profile

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

    def remove(self) -> None:
        shutil.rmtree(self.host, ignore_errors=True)


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


def create_turn_dir(profile: Profile, script: Mapping[str, object], values: dict[str, str]) -> TurnDir:
    """Create the directory, readable (and for HOME writable) by the container's uid 1000."""
    host = Path(tempfile.mkdtemp(prefix="runner-turn-"))
    os.chmod(host, 0o755)
    turn = TurnDir(host, profile)
    _write(host / "script.json", json.dumps(script))
    if turn.home_host is not None:
        (turn.home_host / "work").mkdir(parents=True)
        for relative, content in profile.render_config_files(values).items():
            target = turn.home_host / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            _write(target, content)
        _give_to_container(turn.home_host)
    return turn


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    os.chmod(path, 0o644)


def _give_to_container(root: Path) -> None:
    """The CLI runs as uid 1000: hand HOME to it (chown as root, else open the modes)."""
    for path in [root, *root.rglob("*")]:
        if os.geteuid() == 0:
            os.lchown(path, CONTAINER_UID, CONTAINER_UID)
        else:
            os.chmod(path, 0o777 if path.is_dir() else 0o666)
