"""The wiring probe: an engine whose bind mounts do not reach the container, and an image without the relay,
are named infrastructure errors with their fix, never a turn graded as the CLI's conduct."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
from pathlib import Path

import docker
import pytest

from runner.images import ImageRecord
from runner.sandbox import probe
from runner.sandbox.interface import ContainerSpec
from tests.support import RUNNER

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]


def run_label(tmp_path: Path) -> str:
    """This test's own run label (pytest's temporary directory is unique), so its containers are told apart from
    those of another run of the same test on the same engine."""
    return f"wiring-test-{tmp_path.name}-{os.getpid()}"


def spec(image_id: str, tmp_path: Path) -> ContainerSpec:
    return ContainerSpec(image_id, ["true"], tmp_path, {"runner.run": run_label(tmp_path), "runner.cell": "probe"})


def test_the_probe_passes_here_and_remembers_it(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    # a fresh probe, as a newly connected backend holds: one that probed before remembers its pass, and would then
    # neither probe nor write this cache (runner's cache directory, handed down from the edge)
    probe.WiringProbe().check(engine, spec(reference_image.image_id, tmp_path), cache=tmp_path / "cache")
    [remembered] = (tmp_path / "cache" / "probes").glob("*.json")
    assert json.loads(remembered.read_text())["passed"] is True
    left = engine.containers.list(all=True, sparse=True, filters={"label": f"runner.run={run_label(tmp_path)}"})
    assert not left, "the probe is removed"


def test_an_image_without_the_relay_is_named(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    dockerfile = f"FROM {reference_image.image_id}\nUSER root\nRUN rm -f /usr/bin/socat\n".encode()
    image, _ = engine.images.build(fileobj=io.BytesIO(dockerfile), network_mode="none", rm=True,
                                   labels={"runner.test": "no-relay"})
    try:
        with pytest.raises(probe.RelayMissing, match="socat"):
            probe.WiringProbe().check(engine, spec(image.id, tmp_path), cache=tmp_path / "cache")
        assert not (tmp_path / "cache" / "probes").exists(), "a failure is not remembered"
    finally:
        engine.images.remove(image.id, force=True)


def in_private_tmp(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """runner in a private mount namespace with its own tmpfs at TMPDIR: the engine sees the host's empty
    directory at that path, exactly as under Docker-out-of-Docker or a remote engine."""
    private = tmp_path / "private"
    private.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(private), "RUNNER_CACHE_DIR": str(tmp_path / "cache")}
    script = f'mount -t tmpfs tmpfs "{private}" && exec "$@"'
    return subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", RUNNER, "exec", "--harness",
         "reference", "--case", "escalation", "--json", "--out", str(tmp_path / "out"), *args],
        capture_output=True, text=True, env=env, timeout=240,
    )


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("unshare") is None, reason="needs root and unshare(1)")
def test_an_engine_that_does_not_share_runners_files_is_named_not_graded_and_auto_streams_instead(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    mounted = in_private_tmp(tmp_path, "--transport", "mount")
    assert mounted.returncode == 5, mounted.stderr
    body = json.loads(mounted.stdout)
    assert body["infrastructureError"]["kind"] == "MountsNotVisible", body
    assert "TMPDIR" in body["infrastructureError"]["detail"], "the message says how to fix it"
    assert body["grade"] is None, "a turn that could not work is not graded"
    shutil.rmtree(tmp_path / "out")
    auto = in_private_tmp(tmp_path)
    assert auto.returncode == 0, auto.stderr
    body = json.loads(auto.stdout)
    assert (body["transport"], body["status"], body["grade"]["status"]) == ("stream", "escalated", "pass")
