"""A CLI that misbehaves, and an output directory that cannot take the artifacts: what the user gets.

The misbehaving CLIs are real programs in the real reference image, given by a profile of the user's
own (``--profile``): one that crashes before any ask, one that floods stdout and stderr with hundreds
of MB, one that prints a single line with no newline until the deadline stops it.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import docker
import pytest

from runner.images import ImageRecord
from runner.turn.transcript import MAX_FILE_BYTES
from tests.engine_proxy import EngineProxy
from tests.support import RUNNER, no_containers_left, peak_mib, runner_exec

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

FLOOD_DEADLINE = 200  # within runner_exec's 240 s


def shell_profile(tmp_path: Path, name: str, script: str, deadline: int = 60) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(
        f"id: {name}\nlabel: {name}\nimage: reference\nargv: [/bin/sh, -c, {json.dumps(script)}]\n"
        f"interpreter: exit-code\nrequires_mcp_session: false\ndefault_deadline_seconds: {deadline}\n"
        "wind_down: {grace_seconds: 1}\n"
    )
    return path


def test_a_cli_that_crashes_before_asking_fails_with_its_exit_code(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    profile = shell_profile(tmp_path, "crasher", "echo starting; echo oops >&2; exit 7")
    report = runner_exec(tmp_path, "--profile", str(profile), "--case", "escalation")
    assert report["status"] == "failed" and report["exitCode"] == 7
    assert report["error"]["code"] == "harness_exited_without_outcome"
    assert "starting" in report["outcome"]["metadata"]["transcriptTail"]
    no_containers_left(engine, report)


def test_floods_on_both_streams_keep_memory_files_and_tail_bounded(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    script = "yes 'flood line' | head -c 300000000; yes 'err line' | head -c 100000000 >&2"
    # the bounds are what is tested, not the speed: 400 MB took 20-50 s here, and past 60 s on 2 loaded cores
    # (make soak), where the default 60 s deadline cancelled the turn before the flood was over
    profile = shell_profile(tmp_path, "flooder", script, deadline=FLOOD_DEADLINE)
    peak = tmp_path / "peak"
    report = runner_exec(tmp_path, "--profile", str(profile), "--case", "escalation", peak_to=peak)
    assert report["status"] == "succeeded" and report["deadlineHit"] is False
    out = Path(report["files"]["stdout"])
    assert MAX_FILE_BYTES <= out.stat().st_size <= MAX_FILE_BYTES + 4096
    assert out.read_bytes().rstrip().endswith(b"the rest is not kept]")
    tail = report["outcome"]["metadata"]["transcriptTail"]
    assert 0 < len(tail) <= 40 and sum(len(line) for line in tail) <= 16 * 1024 + 40 * 64
    assert peak_mib(peak) < 250, f"runner peaked at {peak_mib(peak):.0f} MiB reading a 400 MB flood"
    no_containers_left(engine, report)


def test_one_endless_line_is_stopped_by_the_deadline_with_a_bounded_tail(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    profile = shell_profile(tmp_path, "oneliner", "tr '\\0' x < /dev/zero", deadline=4)
    report = runner_exec(tmp_path, "--profile", str(profile), "--case", "escalation")
    assert report["deadlineHit"] is True and report["status"] == "cancelled"
    tail = report["outcome"]["metadata"]["transcriptTail"]
    assert sum(len(line) for line in tail) <= 16 * 1024 + 200
    assert Path(report["files"]["stdout"]).stat().st_size <= MAX_FILE_BYTES + 4096
    no_containers_left(engine, report)


def test_an_unwritable_or_full_output_directory_stops_before_any_container_starts(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    # every engine request of these runs goes through a recording proxy: "no container started" is read from what
    # they asked the engine, not from the engine's container list, which other users of the engine change meanwhile
    with EngineProxy(tmp_path / "engine.sock", faults=[]).running() as proxy:
        via_proxy = {**os.environ, "DOCKER_HOST": proxy.docker_host}
        unwritable_or_full_output_directory(tmp_path, via_proxy)
    assert proxy.count("POST", "/containers/create") == 0, proxy.seen


def unwritable_or_full_output_directory(tmp_path: Path, env: dict[str, str]) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    proc = subprocess.run([RUNNER, "exec", "--harness", "reference", "--out", str(blocker / "cell"), "--json"],
                          capture_output=True, text=True, timeout=60, env=env)
    assert proc.returncode == 5
    # the whole message on one line, however long pytest's temporary path is (stderr is a pipe here)
    whole = f"runner: {blocker / 'cell'}: cannot write the run's files there (Not a directory)"
    assert whole in proc.stderr.splitlines()
    tiny = tmp_path / "tiny"
    tiny.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(tiny)], check=True)
    try:
        proc = subprocess.run([RUNNER, "exec", "--harness", "reference", "--out", str(tiny / "cell")],
                              capture_output=True, text=True, timeout=60, env=env)
        assert proc.returncode == 5 and "MiB free" in proc.stderr
        assert not any((tiny / "cell").glob("*.json")), "nothing half-written"
    finally:
        subprocess.run(["umount", str(tiny)], check=False)


def test_profile_values_reach_the_cli_verbatim_and_no_shell_interprets_them(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    hostile = "a; touch /tmp/pwned && `id -u` | cat $HOME > /tmp/x"
    spelled = hostile.replace("$", "$$")  # how a profile writes a literal dollar
    path = tmp_path / "verbatim.yaml"
    path.write_text(
        "id: verbatim\nlabel: verbatim\nimage: reference\ninterpreter: exit-code\nrequires_mcp_session: false\n"
        "argv: [/bin/sh, -c, 'printf \"%s|%s\\n\" \"$$1\" \"$$HOSTILE\"; test ! -e /tmp/pwned', sh, "
        f"{json.dumps(spelled)}]\n"
        f"env: {{HOSTILE: {json.dumps(spelled)}}}\n"
    )
    report = runner_exec(tmp_path, "--profile", str(path), "--case", "escalation")
    assert report["exitCode"] == 0, report["outcome"]["metadata"]["transcriptTail"]
    assert report["outcome"]["metadata"]["transcriptTail"] == [f"{hostile}|{hostile}"]
    no_containers_left(engine, report)


def test_a_cli_that_crashes_mid_turn_after_a_call_but_before_the_ask_fails_as_it_ended(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    report = runner_exec(tmp_path, "--harness", "reference", "--case", "runtime-crashed")
    assert report["mcp"]["calls"] == 1 and report["exitCode"] == 3  # it did work over MCP, then died
    assert report["status"] == "failed" and report["reasonCode"] == "harness_exited_without_outcome"
    assert report["escalation"] is None and "escalationAsked" not in report["outcome"]["metadata"]
    assert 0 < len(report["outcome"]["metadata"]["transcriptTail"]) <= 40
    no_containers_left(engine, report)
