"""The reaper's lease: it reaps when the runner's end of the pipe closes without a word, and leaves when told."""

from __future__ import annotations

import io
import os
import subprocess
import sys

import pytest

from runner.sandbox import reaper


def test_a_lease_that_ends_without_done_means_the_runner_died() -> None:
    assert reaper.should_reap(io.BytesIO(b""))
    assert reaper.should_reap(io.BytesIO(b"do"))


def test_done_means_the_runner_cleaned_up_itself() -> None:
    assert not reaper.should_reap(io.BytesIO(reaper.DONE))


def test_released_reaper_exits_without_touching_the_engine() -> None:
    # no engine at this address: a reaper that tried to reap would spend its sweeps failing to connect
    env = {**os.environ, "DOCKER_HOST": "unix:///nonexistent/docker.sock"}
    proc = subprocess.Popen([sys.executable, "-m", "runner.sandbox.reaper", "run-x"], stdin=subprocess.PIPE, env=env)
    assert proc.stdin is not None
    proc.stdin.write(reaper.DONE)
    proc.stdin.close()
    assert proc.wait(timeout=30) == 0


def test_disabled_by_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(reaper.DISABLE_ENV, "0")
    lease = reaper.Reaper("run-x").start()
    assert lease.proc is None
    lease.release()
