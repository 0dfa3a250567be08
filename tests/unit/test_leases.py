"""A run's lease (runner.sandbox.lease), the output directory's lock (runner.turn.preflight), the turn dir's modes and
the sweep of dead runs' turn dirs (runner.turn.turndir): each held by one process and tried by another, as gc and a
second run try them. No engine."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from socket import gethostname

import pytest

from runner.harnesses.profile import Profile
from runner.sandbox import lease
from runner.sandbox.leftovers import RunState, judge
from runner.sandbox.ownership import IMAGE_GID, IMAGE_UID, ContainerUser
from runner.turn.preflight import OutputDirBusy, hold_output_dir
from runner.turn.turndir import create_turn_dir, placeholder_values, sweep_turn_dirs, token_of_turn_dir

# a process that holds run R's lease in directory D until its stdin closes
HOLDER = ("import sys; from pathlib import Path; from runner.sandbox.lease import hold_run; "
          "hold_run(sys.argv[1], Path(sys.argv[2])); print('held', flush=True); sys.stdin.read()")


@contextmanager
def held_elsewhere(run_id: str, directory: Path) -> Iterator[None]:
    """``run_id``'s lease held by another process for the length of the ``with``."""
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, run_id, str(directory)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)


def test_a_lease_is_live_while_held_dead_once_its_holder_is_gone_and_dead_when_missing(tmp_path: Path) -> None:
    path = lease.lease_path("run-a", tmp_path)
    assert lease.liveness(path) is lease.Liveness.DEAD  # no file: nobody made it, nobody holds it
    with held_elsewhere("run-a", tmp_path):
        assert lease.liveness(path) is lease.Liveness.LIVE
        assert not lease.remove_if_dead(path) and path.exists()
    # the holder let go and was the last: it removed the file
    assert not path.exists() and lease.liveness(path) is lease.Liveness.DEAD


def test_a_killed_holder_leaves_its_lease_unheld_and_the_sweep_removes_it(tmp_path: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-c", HOLDER, "run-k", str(tmp_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    path = lease.lease_path("run-k", tmp_path)
    assert lease.liveness(path) is lease.Liveness.LIVE
    proc.kill()
    proc.wait(timeout=30)
    assert path.exists() and lease.liveness(path) is lease.Liveness.DEAD
    assert sweep_turn_dirs(tmp_path).leases == [str(path)] and not path.exists()


def test_two_holders_of_one_run_keep_it_live_until_the_last_lets_go(tmp_path: Path) -> None:
    path = lease.lease_path("run-b", tmp_path)
    with held_elsewhere("run-b", tmp_path):
        mine = lease.RunLease(path)
        try:
            assert lease.liveness(path) is lease.Liveness.LIVE
        finally:
            mine.release()
        assert path.exists() and lease.liveness(path) is lease.Liveness.LIVE  # the other still holds it
    assert lease.liveness(path) is lease.Liveness.DEAD


def test_a_lease_that_is_not_a_file_is_never_judged_dead(tmp_path: Path) -> None:
    path = lease.lease_path("run-c", tmp_path)
    os.mkfifo(path)  # opening a fifo could hang: it is refused without waiting
    assert lease.liveness(path) is lease.Liveness.UNKNOWN
    path.unlink()
    path.symlink_to(tmp_path / "elsewhere")
    assert lease.liveness(path) is lease.Liveness.UNKNOWN


def test_a_container_is_judged_by_its_lease_only_in_the_scope_it_names(tmp_path: Path) -> None:
    here = lease.scope()
    assert here, "this machine has a boot id and a mount namespace"
    path = lease.lease_path("run-d", tmp_path)
    labels = {lease.LEASE_LABEL: str(path), lease.SCOPE_LABEL: here}
    assert judge(labels, here) is RunState.DEAD
    with held_elsewhere("run-d", tmp_path):
        assert judge(labels, here) is RunState.LIVE
    machine, boot, mounts = here.split(" ")
    assert judge({**labels, lease.SCOPE_LABEL: f"another-machine {boot} {mounts}"}, here) is RunState.ELSEWHERE
    assert judge({**labels, lease.SCOPE_LABEL: f"{machine} {boot} mnt:[1]"}, here) is RunState.ELSEWHERE
    with held_elsewhere("run-d", tmp_path):  # this machine before its last boot: dead, whatever its lease says
        earlier = {**labels, lease.SCOPE_LABEL: f"{machine} earlier-boot {mounts}", lease.HOST_LABEL: gethostname()}
        assert judge(earlier, here) is RunState.DEAD
        assert judge({**earlier, lease.HOST_LABEL: "another-host"}, here) is RunState.ELSEWHERE
        assert judge({**earlier, lease.SCOPE_LABEL: f" earlier-boot {mounts}"}, here) is RunState.ELSEWHERE
    assert judge({}, here) is RunState.UNMARKED
    # a label that names anything but a lease is not tried
    assert judge({**labels, lease.LEASE_LABEL: "/etc/passwd"}, here) is RunState.UNMARKED
    assert judge({**labels, lease.LEASE_LABEL: "runner-run-12345678.lock"}, here) is RunState.UNMARKED


PROFILE = {
    "id": "vendor", "label": "Vendor", "image": "vendor", "argv": ["cli"], "home": "turn",
    "config_files": [{"path": ".cli/config.json", "content": '{"url": "${model_url}"}'}],
    "model": {"dialect": "openai-chat", "port": 8899},
}


def modes(root: Path) -> dict[str, tuple[int, int, int]]:
    found = {".": (stat.S_IMODE(root.stat().st_mode), root.stat().st_uid, root.stat().st_gid)}
    for path in sorted(root.rglob("*")):
        info = path.lstat()
        found[str(path.relative_to(root))] = (stat.S_IMODE(info.st_mode), info.st_uid, info.st_gid)
    return found


@pytest.mark.skipif(os.geteuid() != 0, reason="root's turn dir (chowned to the images' uid) is made only by root")
def test_roots_turn_dir_is_readable_by_the_containers_group_alone_and_everything_in_it_the_containers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    old = os.umask(0)  # whatever the umask, the modes below
    try:
        turn = create_turn_dir(Profile.model_validate(PROFILE), {"actions": []},
                               placeholder_values(Profile.model_validate(PROFILE), "hi", None, None), "run-e")
    finally:
        os.umask(old)
    box = IMAGE_UID, IMAGE_GID
    assert modes(turn.host) == {
        ".": (0o750, 0, IMAGE_GID), "script.json": (0o600, *box), "home": (0o700, *box),
        "home/.cli": (0o700, *box), "home/.cli/config.json": (0o600, *box), "home/work": (0o700, *box),
    }
    assert token_of_turn_dir(turn.host.name) == lease.run_token("run-e")
    assert turn.remove() == [] and not turn.host.exists()


def test_a_turn_dir_for_runners_own_uid_is_runners_alone(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What a non-root runner makes (the container runs as runner's uid), here as this process's uid."""
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    me = ContainerUser(os.geteuid(), os.getegid())
    old = os.umask(0)
    try:
        profile = Profile.model_validate(PROFILE)
        turn = create_turn_dir(profile, {"actions": []}, placeholder_values(profile, "hi", None, None), "run-f", me)
    finally:
        os.umask(old)
    assert {mode for mode, _, _ in modes(turn.host).values()} == {0o700, 0o600}
    assert {(uid, gid) for _, uid, gid in modes(turn.host).values()} == {(me.uid, me.gid)}
    # what a CLI leaves: a directory it made 0500 holding a 0000 file, all runner's; still removed
    made = turn.host / "home" / "session"
    made.mkdir()
    (made / "log.jsonl").write_text("x")
    (made / "log.jsonl").chmod(0)
    made.chmod(0o500)
    assert turn.remove() == [] and not turn.host.exists()


def test_the_sweep_removes_dead_runs_turn_dirs_and_leaves_live_and_unnamed_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    profile = Profile.model_validate(PROFILE)
    values = placeholder_values(profile, "hi", None, None)
    me = ContainerUser(os.geteuid(), os.getegid())
    dead, live = create_turn_dir(profile, {}, values, "run-dead", me), create_turn_dir(profile, {}, values,
                                                                                        "run-live", me)
    lease.release_all()  # this process's leases: run-dead's is now held by nobody, as a killed runner's
    old = tmp_path / "runner-turn-abcdefgh"  # a turn dir of a runner from before the run tokens: whose is unknown
    old.mkdir()
    with held_elsewhere("run-live", tmp_path):
        swept = sweep_turn_dirs(tmp_path)
        assert swept.removed == [str(dead.host)] and swept.left == {str(live.host): "live"}
        assert live.host.is_dir() and old.is_dir()
    assert sweep_turn_dirs(tmp_path, runs={"another-run"}).removed == []
    assert sweep_turn_dirs(tmp_path, runs={"run-live"}).removed == [str(live.host)]
    assert sorted(p.name for p in tmp_path.iterdir()) == [old.name]


def test_a_second_holder_of_an_output_directory_is_refused_naming_the_first(tmp_path: Path) -> None:
    code = ("import sys; from pathlib import Path; from runner.turn.preflight import hold_output_dir; "
            "hold_output_dir(Path(sys.argv[1]), 'first-run'); print('held', flush=True); sys.stdin.read()")
    proc = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        with pytest.raises(OutputDirBusy, match=rf"{tmp_path}: another runner is writing there \(run first-run, "
                                                rf"pid {proc.pid} on "):
            hold_output_dir(tmp_path, "second-run")
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=30)
    held = hold_output_dir(tmp_path, "second-run")  # the first is gone: taken, and given back without a trace
    held.release()
    assert list(tmp_path.iterdir()) == []
