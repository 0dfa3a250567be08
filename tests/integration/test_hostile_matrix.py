"""One bad cell never sinks a matrix: every hostile CLI the integration tests know, in one ``runner run -j 2`` beside
ordinary reference cells, through the product's own command (issue 29: done when a ``runner run -j 2`` of every
hostile behaviour beside ordinary cells finishes with a report in which every ordinary cell is graded as without
them, with runner's peak RSS stated).

The hostile columns are the profiles under ``tests/hostile/`` (the ``cell-*``, ``streams-*`` and ``output-*`` ones
as they are, the ``files-*`` ones rendered as ``test_hostile_files.render`` does, the session link once per target)
and two of this test's own (a CLI that dies by a signal, one that ignores SIGTERM and hangs past its deadline), in
one profiles directory handed to ``runner run --profiles-dir``: they run on the reference image, no build needed.
(``live-proxy.yaml`` is not among them: it needs live mode and an upstream, tests/e2e/test_live_mode.py.)
The host holds a secret file, a directory with an ``id_rsa``, a neighbour's ``id_rsa`` in runner's TMPDIR and a
canary in runner's environment, and (stream transport) a unix socket listening outside the turn dir.

After the run: the exit code is the one for cells with infrastructure errors (5, and the summary line counts them),
else the failed gate's (1: the hostile cells' failures are new, no expected failures being given), never a crash;
every ordinary cell has the grade the golden matrix run holds; every hostile cell has its own
``result.json`` (its CLI's failure, or an infrastructure error with runner's own kind and cause); ``runner report``
over the run dir counts exactly the run's cells (the forged ``result.json`` files copied under ``session/`` are not
cells); not one byte of the host's secrets is in any file under the output directory; no container of the run is
left, no turn dir either; and runner's peak RSS over the whole run is printed and bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import docker
import pytest
import yaml

from runner.images import ImageRecord
from runner.sandbox.lease import LEASE_LABEL
from tests.integration.test_hostile_files import Host, Outside, nothing_got_out
from tests.support import _PEAK_OF as PEAK_OF
from tests.support import RUNNER, peak_mib

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

TESTS = Path(__file__).resolve().parents[1]
HOSTILE = TESTS / "hostile"
GOLDEN = TESTS / "golden" / "runs" / "matrix"
CASES = ["escalation", "hidden-tool"]
ORDINARY = ["reference"]
RSS_BOUND_MIB = 1024
MiB = 1024 * 1024

# the hostile profiles taken as they are
AS_THEY_ARE = ["cell-nested", "cell-surrogate", "cell-flood", "cell-forger", "streams-frames", "streams-surrogates",
               "streams-requests", "streams-session", "output-escapes"]

# this test's own: a CLI that dies by a signal, and one that ignores SIGTERM and never ends before its deadline
OWN = {
    "hostile-crash": {"argv": ["/opt/venv/bin/python", "-c",
                               "import ctypes; print('about to crash', flush=True); ctypes.string_at(0)"],
                      "default_deadline_seconds": 30},
    "hostile-hang": {"argv": ["/bin/sh", "-c", "trap '' TERM; echo hanging; while :; do sleep 1; done"],
                     "default_deadline_seconds": 5},
}

# the hostile columns that play the reference client's script (after their attack): graded as the reference is
PLAYS_THE_REFERENCE = {"cell-forger", "output-escapes"}
# how each other hostile column's turn ends, by its CLI's doing (status, reason code), the same on both rows: an
# ending of the CLI's own, never one of runner's failures. Not listed: the turn succeeded, with no reason code.
TURN_ENDS = {
    "hostile-crash": ("failed", "harness_exited_without_outcome"),
    "hostile-hang": ("cancelled", "turn_cancelled"),
    "streams-frames": ("failed", "harness_malformed_output"),
    "streams-surrogates": ("failed", "hostile_\ufffd"),
}
# what a CLI that plays no script earns on each row: it never asked (escalation); it issues no uncatalogued name
NOT_PLAYED = {"escalation": "not_exercised", "hidden-tool": "not_applicable"}


def expected_turn(column: str, transport: str) -> tuple[str, str | None] | str:
    """How the hostile column's turn ends under ``transport``: (status, reason code), or an infrastructure error's
    kind (runner stopped the CLI for what it did to the host's disk)."""
    if column == "files-fill" and transport == "mount":
        return "disk_budget_exceeded"  # its turn dir is on the host's disk: stopped at the budget
    if column == "files-channels" and transport == "mount":
        return ("failed", "harness_exited_without_outcome")  # no relay to forge frames for: it exits 3
    return TURN_ENDS.get(column, ("succeeded", None))


@pytest.fixture
def host() -> Iterator[Host]:
    with tempfile.TemporaryDirectory(prefix="rm-", dir="/tmp") as root:  # short: a socket's path is under 108 bytes
        yield Host(Path(root))


def rendered(host: Host, name: str, column: str, **markers: str) -> dict[str, Any]:
    """tests/hostile/<name>.yaml as the column ``column``: the hostile CLI as its HOME's hostile.py, each @MARKER@
    of its argv filled (as test_hostile_files.render does)."""
    profile: dict[str, Any] = yaml.safe_load((HOSTILE / f"{name}.yaml").read_text())
    (script,) = profile["config_files"]
    script["content"] = (HOSTILE / "hostile_cli.py").read_text()
    for marker, value in markers.items():
        profile["argv"] = [arg.replace(f"@{marker}@", value) for arg in profile["argv"]]
    assert not any("@" in arg for arg in profile["argv"]), f"a marker left unfilled: {profile['argv']}"
    return {**profile, "id": column, "label": f"{column} (hostile, tests only)"}


def hostile_profiles(host: Host, transport: str) -> Path:
    """Every hostile column, one profile file each (the file's name is the column's id), in one directory."""
    profiles: dict[str, dict[str, Any]] = {name: yaml.safe_load((HOSTILE / f"{name}.yaml").read_text())
                                           for name in AS_THEY_ARE}
    links = {"file": str(host.secret_file), "dir": str(host.secret_dir), "environ": "/proc/self/environ",
             "climb": "../.."}
    for what, target in links.items():
        profiles[f"files-link-{what}"] = rendered(host, "files-link", f"files-link-{what}", TARGET=target)
    profiles["files-below"] = rendered(host, "files-below", "files-below", SECRET_FILE=str(host.secret_file),
                                       SECRET_DIR=str(host.secret_dir))
    profiles["files-swap"] = rendered(host, "files-swap", "files-swap", SECRET_DIR=str(host.secret_dir))
    # the turn dir is <TMPDIR>/runner-turn-*: two levels up is the host's root, where Outside listens
    profiles["files-channels"] = rendered(host, "files-channels", "files-channels", ESCAPE_RELATIVE="../../outside",
                                          ESCAPE_ABSOLUTE=str(host.root / "outside"))
    # mount: the turn dir is on the host's disk, and the CLI is stopped at its budget (it means to write 4 times
    # that); stream: a session far over the copy's bound, read as it streams in
    fill = (["2048", "wait"] if transport == "mount" else ["256", "exit"])
    profiles["files-fill"] = rendered(host, "files-fill", "files-fill", TOTAL_MIB=fill[0], THEN=fill[1])
    for column, own in OWN.items():
        profiles[column] = {"id": column, "label": f"{column} (hostile, tests only)", "image": "reference",
                            "interpreter": "exit-code", "requires_mcp_session": False,
                            "wind_down": {"grace_seconds": 1}, **own}
    directory = host.root / "profiles"
    directory.mkdir()
    for column, profile in profiles.items():
        (directory / f"{column}.yaml").write_text(yaml.safe_dump(profile, sort_keys=False))
    return directory


def containers_of(engine: docker.DockerClient, tmpdir: Path) -> set[str]:
    """The containers on the engine of a runner whose lease is in ``tmpdir`` (this test's runner's TMPDIR alone:
    other runs on the shared engine are never looked at twice)."""
    found = engine.containers.list(all=True, sparse=True, filters={"label": LEASE_LABEL})
    return {c.id for c in found if str((c.attrs.get("Labels") or {}).get(LEASE_LABEL, "")).startswith(f"{tmpdir}/")}


def results(out: Path) -> dict[str, dict[str, Any]]:
    return {p.parent.name: json.loads(p.read_text()) for p in out.glob("*/result.json")}


def status_of(result: dict[str, Any]) -> str:
    if result.get("infrastructureError"):
        return f"infrastructure_error ({result['infrastructureError']['kind']})"
    return str(result["grade"]["status"])


# both transports and both runtimes in two runs: the readers are runner's, on the host, whatever the runtime (each
# other pairing passed as well when this test was written; the suite runs two to keep its time down)
@pytest.mark.parametrize(("transport", "runtime"), [("mount", "runc"), ("stream", "runsc")],
                         ids=["mount-runc", "stream-runsc"])
def test_a_matrix_of_every_hostile_cli_beside_ordinary_cells_grades_them_and_lets_nothing_out(
    host: Host, engine: docker.DockerClient, reference_image: ImageRecord, transport: str, runtime: str
) -> None:
    profiles = hostile_profiles(host, transport)
    hostile = sorted(p.stem for p in profiles.glob("*.yaml"))
    columns = [*ORDINARY, *hostile]
    peak = host.root / "peak"
    env = {**os.environ, "TMPDIR": str(host.tmpdir), "RUNNER_TEST_CANARY": host.canary}
    env.pop("RUNNER_PROFILES_DIR", None)
    outside = Outside(host.root / "outside.sock")
    seen: set[str] = set()
    started = time.monotonic()
    with open(host.root / "stdout", "wb") as stdout, open(host.root / "stderr", "wb") as stderr:
        proc = subprocess.Popen(
            [sys.executable, "-c", PEAK_OF, str(peak), RUNNER, "run", "--harness", ",".join(columns), "--case",
             ",".join(CASES), "-j", "2", "--retries", "0", "--transport", transport, "--runtime", runtime,
             "--profiles-dir", str(profiles), "--out", str(host.out)],
            stdout=stdout, stderr=stderr, env=env, start_new_session=True)
        try:
            while proc.poll() is None:  # the run's containers, as they come and go (in no order assumed)
                seen |= containers_of(engine, host.tmpdir)
                time.sleep(0.5)
        finally:
            if proc.poll() is None:  # the test failed while runner ran: stop it, and its turns (SIGTERM: cleaned up)
                os.killpg(proc.pid, signal.SIGTERM)
            proc.wait()
            outside.close()
    wall = time.monotonic() - started
    said, complaints = (host.root / "stdout").read_text(), (host.root / "stderr").read_text()
    found = results(host.out)
    cells = {f"{case}.baseline.{column}" for case in CASES for column in columns}
    print(f"\n{transport}-{runtime}: {len(cells)} cells in {wall:.0f} s, runner's peak RSS {peak_mib(peak):.0f} MiB")
    for cell_id in sorted(found):
        turn = found[cell_id].get("turn") or {}
        print(f"  {cell_id}: {status_of(found[cell_id])} (turn {turn.get('status')}, {turn.get('reasonCode')}, "
              f"exit {turn.get('exitCode')}, deadline {turn.get('deadlineHit')})")

    # the run finished, and said so: no traceback, nothing interrupted, its infrastructure errors counted
    assert "Traceback" not in complaints and "interrupted" not in said + complaints, complaints[-3000:]
    assert set(found) == cells, "every cell, and only the run's cells, has its own result.json"
    broken = sorted(k for k, v in found.items() if v.get("infrastructureError"))
    # an infrastructure error is exit 5; else the gate's verdict on the hostile cells' failures, exit 1
    assert proc.returncode == (5 if broken else 1), complaints[-3000:]
    assert f"ran {len(cells) - len(broken)}, resumed 0, infrastructure errors {len(broken)};" in said
    for name in ("report.md", "manifest.json", "junit.xml"):
        assert (host.out / name).is_file(), name

    # every ordinary cell is graded as the golden matrix run (reference, scripted model) grades it
    for case in CASES:
        for column in ORDINARY:
            cell_id = f"{case}.baseline.{column}"
            golden = json.loads((GOLDEN / cell_id / "result.json").read_text())["grade"]["status"]
            assert status_of(found[cell_id]) == golden, (cell_id, found[cell_id])

    # every hostile cell ends as its own: graded from its CLI's ending, or an infrastructure error of runner's own
    # kind with its cause, never a Python exception caught at the cell's edge (a reader that broke on its input)
    for cell_id, result in found.items():
        case, _, column = cell_id.split(".")
        assert result["cell"]["id"] == cell_id and not result.get("interrupted"), cell_id
        assert not (host.out / cell_id / "traceback.txt").exists(), cell_id
        if column in ORDINARY:
            continue
        golden = json.loads((GOLDEN / f"{case}.baseline.reference" / "result.json").read_text())["grade"]["status"]
        expected = expected_turn(column, transport)
        if column in PLAYS_THE_REFERENCE:
            assert status_of(result) == golden, (cell_id, result.get("grade"))
        elif isinstance(expected, str):
            problem = result["infrastructureError"]
            assert problem["kind"] == expected and problem["detail"], (cell_id, problem)
        else:
            assert (result["turn"]["status"], result["turn"]["reasonCode"]) == expected, (cell_id, result["turn"])
            assert status_of(result) == NOT_PLAYED[case], (cell_id, result["grade"])
    crash = found["escalation.baseline.hostile-crash"]["turn"]
    assert crash["exitCode"] == 128 + signal.SIGSEGV, crash
    assert found["escalation.baseline.hostile-hang"]["turn"]["deadlineHit"] is True
    # each attack was made: what the files-* CLIs said they did, on their first line
    first = {column: json.loads((host.out / f"escalation.baseline.{column}" / "stdout.log").read_text().splitlines()[0])
             for column in hostile if column.startswith("files-")}
    assert all(said["planted"].endswith("/sessions") for c, said in first.items() if c.startswith("files-link"))
    assert first["files-swap"]["swapping"].endswith("/sessions")
    assert first["files-fill"] == {"big": 128 * MiB, "error": 27}, "the 200 MiB file stopped at the per-file cap"
    if transport == "stream":
        assert first["files-channels"]["forged"] == "../../outside", "the forged frames were written"

    # the report counts runner's own results alone: the forged ones the CLIs left in their session dirs are data
    forged = [p for p in host.out.glob("*/session/**/result.json")]
    assert forged, "the forgers' files were copied, as the CLI's data"
    manifest = host.root / "manifest.json"
    report = subprocess.run([RUNNER, "report", str(host.out), "--manifest", str(manifest), "--markdown",
                             str(host.root / "report.md")], capture_output=True, text=True, env=env, timeout=120)
    assert report.returncode == 1, report.stderr  # the gate fails on the hostile cells' failures, and says so
    assert "Traceback" not in report.stderr
    reported = {f"{row['caseId']}.{row['conditionId']}.{c['harnessId']}": c["status"]
                for row in json.loads(manifest.read_text())["rows"] for c in row["cells"]}
    assert set(reported) == cells
    assert reported["escalation.baseline.reference"] == "pass"  # the forged failing reference cell is not read

    # nothing of the host got out, whatever any CLI did; nothing of the run is left
    nothing_got_out(host)
    assert outside.connections == [], "runner connected outside the turn dir"
    assert seen, "the run's containers were seen while it ran"
    assert containers_of(engine, host.tmpdir) == set(), "a container of the run is left"
    assert sorted(p.name for p in host.tmpdir.iterdir()) == ["neighbour"], "a turn dir is left in TMPDIR"
    assert peak_mib(peak) < RSS_BOUND_MIB, f"runner peaked at {peak_mib(peak):.0f} MiB"
