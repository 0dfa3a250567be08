"""Every runnable column's escalation turn, with runner run as GitHub's hosted runner user does: not root, uid 1001
(not the images' 1000), in the ``docker`` group (issue 29). Each CLI's files (its config, its session, ``0600`` or
not) are read and removed by runner, and nothing is left in TMPDIR. The columns are what ``runner harnesses --json``
says is runnable here."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import docker
import pytest

from runner.harnesses.profile import find_profile
from runner.images import ImageSettings, ensure_image
from tests.hosted_runner import UID
from tests.local_users import LocalUser, docker_user, image_cache_for, shared_tmp
from tests.support import RUNNER

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]


def runnable_harnesses() -> list[str]:
    listed = subprocess.run([RUNNER, "harnesses", "--json"], capture_output=True, text=True, timeout=120, check=True)
    return [harness["harness"] for harness in json.loads(listed.stdout) if harness["state"] == "ok"]


@pytest.fixture(scope="module")
def user() -> LocalUser:
    return docker_user(UID)


@pytest.fixture(scope="module")
def place(user: LocalUser) -> Iterator[Path]:
    path = shared_tmp("runner-non-root-")
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.mark.parametrize("harness", runnable_harnesses())
def test_every_runnable_columns_escalation_turn_passes_as_a_non_root_runner_of_githubs_uid(
    harness: str, engine: docker.DockerClient, image_settings: ImageSettings, user: LocalUser, place: Path
) -> None:
    ensure_image(engine, find_profile(harness).image, image_settings)  # built (or found) here first, as root
    work = user.mkdir(place / harness)
    cache = image_cache_for(user, image_settings, user.mkdir(place / "cache"))
    tmp = shared_tmp("tmp-", work)
    proc = user.popen(["runner", "exec", "--harness", harness, "--case", "escalation", "--json", "--out",
                       str(work / "out")], user.env(tmp, cache), work)
    stdout, stderr = proc.communicate(timeout=840)
    assert proc.returncode == 0, f"{harness} as uid {user.uid}:\n{stderr[-3000:]}"
    report = json.loads(stdout)
    assert report["infrastructureError"] is None and report["status"] == "escalated", report["outcome"]
    assert report["outcome"]["metadata"]["harnessOutcome"] == "complete"
    assert report["grade"]["status"] == "pass", report["grade"]["detail"]
    left = sorted(map(str, tmp.rglob("*")))
    assert left == [], f"{harness} as uid {user.uid} left in TMPDIR: {left[:8]}"
