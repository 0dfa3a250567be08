"""``runner setup engine|tools``: what a host needs to carry a turn, provisioned by the same scripts the checkout's
``make engine`` and ``make base-tools`` run (``runner/engine/host/``, shipped in the package), so an installed runner
needs no checkout. Each script installs only as root on Debian and otherwise names what is missing with the command
that installs it; its messages and exit code are the command's."""

from __future__ import annotations

import subprocess
from enum import StrEnum
from typing import Annotated

import typer

app = typer.Typer(help="Provision what a host needs to carry a turn: an engine, gVisor, the host tools a step needs.",
                  no_args_is_help=True)


# the tools ensure-tools.sh knows (tests/unit/test_host_scripts.py holds this the script's own list)
TOOLS = "mmdebstrap, socat, sudo, chromium, chromedriver"


class EngineKind(StrEnum):
    docker = "docker"
    podman = "podman"


class RuntimeName(StrEnum):
    runc = "runc"
    runsc = "runsc"


def _run(script: str, *args: str, environ: dict[str, str] | None = None) -> None:
    """``bash <script> args``, its output the user's, its exit code the command's."""
    from runner.cli.settings import host_script_environ
    from runner.engine.host import host_script  # imported when used: runner.engine loads docker-py

    done = subprocess.run(["bash", str(host_script(script)), *args], env=host_script_environ(**(environ or {})),
                          check=False)
    if done.returncode:
        raise typer.Exit(done.returncode)


@app.command("engine")
def setup_engine(
    runtime: Annotated[RuntimeName, typer.Option(
        help="Also the OCI runtime a turn may ask for: runsc installs gVisor and registers it with the engine "
             "(as root on Debian); runc is the engine's own.")] = RuntimeName.runc,
    engine: Annotated[EngineKind, typer.Option(
        help="docker: a Docker Engine that answers (DOCKER_HOST, else the default socket; as root on Debian one is "
             "installed and started). podman: rootless Podman's Docker-compatible socket, run as that user; it "
             "prints the DOCKER_HOST to export.")] = EngineKind.docker,
) -> None:
    """An engine that answers (and, with --runtime runsc, gVisor registered with it); nothing else.

    Exit 0 when it answers; 1 with the command that fixes what is missing (a user outside the docker group, no
    engine where only root may install one).
    """
    _run("ensure-docker.sh", environ={"RUNNER_ENGINE": engine.value})
    if runtime is RuntimeName.runsc:
        _run("ensure-runtime.sh", runtime.value)


@app.command("tools")
def setup_tools(
    tools: Annotated[list[str], typer.Argument(
        help=f"The host tools to make sure of: {TOOLS}.", show_default=False)],
    if_possible: Annotated[bool, typer.Option(
        "--if-possible", help="Install where it can be (root on Debian), and say nothing where it cannot: a tool "
                              "only some runs need is then named by runner at the moment one needs it.")] = False,
    needed_for: Annotated[str | None, typer.Option(
        "--for", help="What the tools are for, said in the message that names a missing one.")] = None,
) -> None:
    """Make sure of host tools: mmdebstrap (to bootstrap a Debian base when no saved one exists), socat, sudo,
    chromium and chromedriver (the tests).

    As root on Debian each missing one is installed; anywhere else a missing one is named with the command that
    installs it (exit 1). An unknown name is exit 2.
    """
    flags = [*(["--if-possible"] if if_possible else []), *(["--for", needed_for] if needed_for else [])]
    _run("ensure-tools.sh", *flags, *tools)
