"""The reaper's lease: it reaps when the runner's end of the pipe closes without a word, and leaves when told."""

from __future__ import annotations

import io
import os
import socket
import subprocess
import sys
import tempfile

import pytest

from runner.sandbox import reaper


def test_a_lease_that_ends_without_done_means_the_runner_died() -> None:
    assert reaper.should_reap(io.BytesIO(b""))
    assert reaper.should_reap(io.BytesIO(b"do"))


def test_done_means_the_runner_cleaned_up_itself() -> None:
    assert not reaper.should_reap(io.BytesIO(reaper.DONE))


def test_released_reaper_exits_without_touching_the_engine() -> None:
    # the "engine" is a socket this test listens on and never answers: a reaper that tried to reap would connect
    # (left in the backlog, which accept then returns) and hang on its unanswered ping past the wait
    with tempfile.TemporaryDirectory(dir="/tmp") as short, socket.socket(socket.AF_UNIX) as engine:
        path = f"{short}/engine.sock"  # /tmp, not tmp_path: a unix socket's path has at most 107 bytes
        engine.bind(path)
        engine.listen(8)
        env = {**os.environ, "DOCKER_HOST": f"unix://{path}"}
        proc = subprocess.Popen([sys.executable, "-m", "runner.sandbox.reaper", "run-x"], stdin=subprocess.PIPE,
                                env=env)
        assert proc.stdin is not None
        proc.stdin.write(reaper.DONE)
        proc.stdin.close()
        assert proc.wait(timeout=30) == 0
        engine.setblocking(False)
        with pytest.raises(BlockingIOError):
            engine.accept()  # nobody connected


def test_a_disabled_lease_starts_no_reaper() -> None:
    lease = reaper.Reaper("run-x", enabled=False).start()
    assert lease.proc is None
    lease.release()
