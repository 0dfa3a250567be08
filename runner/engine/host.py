"""What a host needs to carry a turn, as the shell scripts that provide it (``runner/engine/host/``): an engine that
answers (``ensure-docker.sh``, rootless Podman's in ``ensure-podman.sh``), the OCI runtime gVisor registered with it
(``ensure-runtime.sh``), and the host tools a step needs (``ensure-tools.sh``). They are package data, so the checkout's
``make`` targets and the installed tool's ``runner setup`` run the same files."""

from __future__ import annotations

from pathlib import Path

HOST_SCRIPTS = Path(__file__).resolve().parent / "host"


def host_script(name: str) -> Path:
    """The path of the host script ``name`` (``ensure-docker.sh``, ``ensure-podman.sh``, ``ensure-runtime.sh``,
    ``ensure-tools.sh``)."""
    return HOST_SCRIPTS / name


def setup_hint(what: str = "engine") -> str:
    """The command that provisions ``what`` (``engine``, ``runsc``, or a tool's name), as a user types it."""
    if what == "engine":
        return "runner setup engine"
    if what == "runsc":
        return "runner setup engine --runtime runsc"
    return f"runner setup tools {what}"
