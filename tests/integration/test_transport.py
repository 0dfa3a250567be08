"""The stream transport (engine API only) keeps every promise of the mount transport: the same settlement, counts
and grade, on the host and from inside a container that shares no directory with the host (Docker-out-of-Docker),
and it leaves nothing behind."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest
from docker.types import Mount

from runner.images import ImageRecord, ImageSettings
from tests.dood import build_dood_image
from tests.support import runner_exec

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

BEHAVIOURS = ["cooperative", "persistent", "hang-after-ask"]
SOCKET = "/var/run/docker.sock"


def settled(body: dict[str, Any]) -> dict[str, Any]:
    """What must be the same whichever transport ran."""
    meta = body["outcome"]["metadata"]
    return {"status": body["status"], "reasonCode": body["reasonCode"], "grade": body["grade"]["status"],
            "calls": body["mcp"]["calls"], "sessions": body["mcp"]["sessionsInitialized"],
            "modelRequests": body["mcp"].get("modelRequests"), "deadlineHit": body["deadlineHit"],
            "callsAfterEscalation": meta.get("callsAfterEscalation"), "harnessOutcome": meta.get("harnessOutcome")}


def gone(engine: docker.DockerClient, body: dict[str, Any]) -> bool:
    try:
        engine.containers.get(body["containerId"])
    except docker.errors.NotFound:
        return True
    return False


_host: dict[tuple[str, ...], dict[str, Any]] = {}


def on_host(tmp_path: Path, *args: str) -> dict[str, Any]:
    if args not in _host:
        (tmp_path / "host").mkdir()
        _host[args] = runner_exec(tmp_path / "host", *args, "--transport", "mount")
    return _host[args]


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_stream_settles_the_turn_as_mount_does(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord, behaviour: str
) -> None:
    args = ("--harness", "reference", "--case", "escalation", "--behaviour", behaviour)
    (tmp_path / "stream").mkdir()
    streamed = runner_exec(tmp_path / "stream", *args, "--transport", "stream")
    mounted = on_host(tmp_path, *args)
    assert (streamed["transport"], mounted["transport"]) == ("stream", "mount")
    assert settled(streamed) == settled(mounted)
    assert gone(engine, streamed)


@pytest.fixture(scope="module")
def dood_image(
    engine: docker.DockerClient, reference_image: ImageRecord, codex_image: ImageRecord, image_settings: ImageSettings
) -> str:
    """Built once the images its turns use exist on the host: the runner inside cannot build them (no network, no
    npm trees), it finds them by recipe hash from the stage digests the image carries."""
    return build_dood_image(engine, image_settings)


def in_dood(engine: docker.DockerClient, image: str, *args: str) -> dict[str, Any]:
    """``runner exec --json`` inside a container with the host's engine socket and no host directory, network none."""
    container = engine.containers.run(
        image, ["exec", "--json", "--out", "/tmp/out", *args], detach=True, network_mode="none",
        mounts=[Mount(SOCKET, SOCKET, type="bind")], labels={"runner.test": "dood"},
    )
    try:
        status = container.wait(timeout=600)
        stdout = container.logs(stdout=True, stderr=False).decode()
        stderr = container.logs(stdout=False, stderr=True).decode()
    finally:
        container.remove(force=True)
    assert status["StatusCode"] == 0, stderr[-4000:]
    return dict(json.loads(stdout.strip().splitlines()[-1]))


@pytest.mark.parametrize("args", [
    *[("--harness", "reference", "--case", "escalation", "--behaviour", b) for b in BEHAVIOURS],
    ("--harness", "codex", "--case", "escalation", "--model", "scripted"),
], ids=[*BEHAVIOURS, "codex"])
def test_docker_out_of_docker_runs_the_same_turns_over_the_stream_and_leaves_nothing(
    tmp_path: Path, engine: docker.DockerClient, dood_image: str, args: tuple[str, ...]
) -> None:
    inside = in_dood(engine, dood_image, *args)
    assert inside["transport"] == "stream", "auto found the mount not reaching the container and chose the stream"
    assert settled(inside) == settled(on_host(tmp_path, *args))
    assert gone(engine, inside)
