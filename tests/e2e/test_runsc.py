"""End to end under gVisor: every runnable column's escalation turn (cooperative and persistent) on the scripted
model, with ``--runtime runsc``, settles as it does under runc, carries the runtime pin and leaves no container.

The columns are every shipped profile that is not declared unavailable here (a column that
cannot run under gVisor would be listed in ``CANNOT_RUN`` with the measured reason, and in
its harness's README.md). The images are the pinned ones the other e2e tests use (built on a fresh machine). The
engine must have runsc registered (``make engine RUNTIME=runsc``; ``make e2e`` does it).
"""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from runner.harnesses.profile import find_profile
from runner.images import ImageRecord
from tests.support import no_containers_left, runner_exec

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

CANNOT_RUN: dict[str, str] = {}  # column -> the measured reason it cannot run under gVisor (none, measured)


@pytest.mark.parametrize("behaviour, calls_after", [("cooperative", 0), ("persistent", 3)])
def test_the_escalation_turn_under_runsc_escalates_as_under_runc(
    tmp_path: Path, engine: docker.DockerClient, harness: tuple[str, ImageRecord],
    behaviour: str, calls_after: int,
) -> None:
    harness, image = harness
    args = ["--harness", harness, "--case", "escalation", "--behaviour", behaviour, "--runtime", "runsc"]
    if find_profile(harness).model is not None:
        args += ["--model", "scripted"]
    report = runner_exec(tmp_path, *args)
    assert report["infrastructureError"] is None
    assert report["pins"]["runtime"] == "runsc" and report["pins"]["imageId"] == image.image_id
    meta = report["outcome"]["metadata"]
    assert report["status"] == "escalated", meta.get("transcriptTail")
    assert meta["callsAfterEscalation"] == calls_after
    no_containers_left(engine, report)
