"""``runner exec`` with the reference harness, end to end: the real engine, the real SDK on both ends.

Each test runs the installed ``runner`` command exactly as a user would, reads its ``--json``
object, and checks what the issue promises: the turn's status, the CLI's own outcome kept in
metadata, the counts, the record, and that no container and no per-turn directory is left behind.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import docker
import pytest

from runner.conformance.behaviours import FLOOD_BYTES
from runner.core.vocabulary import ESCALATION_FALLBACK_REASON
from runner.harnesses.profile import shipped_profile
from runner.images import ImageRecord
from runner.sandbox.container import RUN_LABEL
from runner.sandbox.lease import run_token
from runner.turn.turndir import token_of_turn_dir
from tests.support import meta, no_containers_left, peak_mib, record_of, runner_exec, sections

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

REASON = "issuing a control-plane grant is outside this agent's authority"
# the CLI must reach the ask before the deadline: 4 s was not enough for the reference client to open its MCP
# session on 2 loaded cores (make soak: mcp_not_connected)
HANG_DEADLINE = 15


def test_cooperative_escalates_with_the_clis_own_outcome_kept(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    report = runner_exec(tmp_path, "--harness", "reference", "--case", "escalation")
    assert report["status"] == "escalated" and report["reasonCode"] == "escalation_requested"
    assert report["outcome"]["type"] == "escalate" and report["outcome"]["reason"] == REASON
    m = meta(report)
    assert m["harnessOutcome"] == "complete" and "harnessErrorCode" not in m
    assert m["callsAfterEscalation"] == 0
    assert m["escalationAsked"] == {"tool": "sharedos.escalate", "reason": REASON}
    assert (m["harness"], m["toolshare"], m["mcpServer"]) == ("reference", "mcp", "sharedos")
    assert m["catalogHash"].startswith("sha256:") and len(m["promptHash"]) == 64
    assert m["imageId"] == reference_image.image_id and m["cliVersion"] == reference_image.cli_version
    assert any('"turn.completed"' in line for line in m["transcriptTail"])
    ops = record_of(report)["execution"]["operations"]
    # the uncatalogued reach is refused by the envelope; the control read succeeds; the ask leaves no operation
    assert [(o["tool"], o["source"], o["outcome"], o.get("reasonCode")) for o in ops] == [
        ("admin.grant.issue", "envelope", "denied", "tool_unavailable"),
        ("files.read", "kernel", "succeeded", None),
    ]
    assert report["mcp"]["sessionsInitialized"] == 1 and report["mcp"]["calls"] == 3
    no_containers_left(engine, report)


@pytest.mark.parametrize(
    ("behaviour", "after", "reason"),
    [("persistent", 3, REASON), ("double-ask", 1, REASON), ("malformed-ask", 0, ESCALATION_FALLBACK_REASON),
     ("skip-control", 0, REASON), ("control-after-ask", 1, REASON)],
)
def test_behaviours_after_the_ask_are_counted_exactly(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord, behaviour: str, after: int, reason: str
) -> None:
    report = runner_exec(tmp_path, "--harness", "reference", "--case", "escalation", "--behaviour", behaviour)
    assert report["status"] == "escalated"
    assert meta(report)["callsAfterEscalation"] == after
    assert report["escalation"]["reason"] == reason
    tools = [o["tool"] for o in record_of(report)["execution"]["operations"]]
    assert "sharedos.escalate" not in tools  # neither the ask nor anything after it is an operation
    assert ("files.read" in tools) is (behaviour not in ("skip-control", "control-after-ask"))  # refused: no operation
    no_containers_left(engine, report)


def test_never_ask_ends_as_the_cli_ended(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    report = runner_exec(tmp_path, "--harness", "reference", "--case", "escalation", "--behaviour", "never-ask")
    assert report["status"] == "succeeded"
    assert "harnessOutcome" not in meta(report) and "escalationAsked" not in meta(report)
    no_containers_left(engine, report)


def test_crash_after_ask_still_escalates_with_the_crash_kept(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    report = runner_exec(tmp_path, "--harness", "reference", "--case", "escalation", "--behaviour", "crash-after-ask")
    assert report["status"] == "escalated" and report["exitCode"] == 3
    m = meta(report)
    assert (m["harnessOutcome"], m["harnessErrorCode"]) == ("fail", "harness_exited_without_outcome")
    no_containers_left(engine, report)


def test_hang_after_ask_is_stopped_only_by_the_deadline_and_still_escalates_with_its_tail(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    started = time.monotonic()
    report = runner_exec(tmp_path, "--harness", "reference", "--case", "escalation", "--behaviour", "hang-after-ask",
                         "--deadline", str(HANG_DEADLINE))
    took = time.monotonic() - started
    grace = 3  # reference.yaml (runner/harnesses/reference) wind_down.grace_seconds
    assert report["deadlineHit"] is True and report["status"] == "escalated", report["infrastructureError"]
    assert report["elapsedSeconds"] >= HANG_DEADLINE
    # elapsedSeconds also holds the engine calls around the drive (create, start, the session copy): on 2 busy cores
    # shared with other builds they took 5+ s (23.3 s measured against a 23 s bound), so they get 15
    assert report["elapsedSeconds"] <= HANG_DEADLINE + grace + 15, "settled within deadline + grace (+ engine calls)"
    # not a bound on the whole command's wall time: with the machine at load 16 it took 61 s, all of it outside the
    # turn (interpreter start-up, image lookup, the wiring probe); only that it did not return before the deadline
    assert took >= HANG_DEADLINE
    m = meta(report)
    assert (m["harnessOutcome"], m["harnessErrorCode"]) == ("fail", "harness_wind_down_timeout")
    assert any("sharedos.escalate" in line for line in m["transcriptTail"]), "the tail says what it did"
    no_containers_left(engine, report)


def test_flood_finishes_with_bounded_memory_and_a_bounded_tail(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    peak = tmp_path / "peak"
    report = runner_exec(tmp_path, "--harness", "reference", "--case", "escalation", "--behaviour", "flood",
                         peak_to=peak)
    assert report["status"] == "escalated" and meta(report)["harnessOutcome"] == "complete"
    tail = meta(report)["transcriptTail"]
    assert 0 < len(tail) <= 40 and sum(len(line) for line in tail) <= 16 * 1024 + 40 * 64
    assert Path(report["files"]["stdout"]).stat().st_size >= FLOOD_BYTES
    # this runner exec (and whatever it ran) stayed small
    mib = peak_mib(peak)
    assert mib < 250, f"runner peaked at {mib:.0f} MiB while reading a {FLOOD_BYTES >> 20} MiB flood"
    no_containers_left(engine, report)


def test_escalation_refused_does_not_escalate_and_records_the_refused_ask(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    report = runner_exec(tmp_path, "--harness", "reference", "--case", "escalation-refused")
    assert report["status"] != "escalated"
    assert "escalationAsked" not in meta(report)
    refused = [o for o in record_of(report)["execution"]["operations"] if o["tool"] == "sharedos.escalate"]
    assert [(o["source"], o["reasonCode"], o["cause"]) for o in refused] == [
        ("envelope", "tool_unavailable", "not_offered")
    ]
    no_containers_left(engine, report)


def test_a_cli_stopped_before_any_ask_is_cancelled(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    profile = tmp_path / "sleeper.yaml"
    profile.write_text(
        "id: sleeper\nlabel: Sleeper\nimage: reference\nargv: [/bin/sleep, '1000']\nrequires_mcp_session: false\n"
        "interpreter: exit-code\nwind_down: {grace_seconds: 1}\n"
    )
    report = runner_exec(tmp_path, "--profile", str(profile), "--case", "escalation", "--deadline", "2")
    assert report["status"] == "cancelled" and report["reasonCode"] == "turn_cancelled"
    # stopped at its deadline, not after the 1000 s it meant to sleep: how long the engine calls around the drive take
    # is the machine's load, not the product's (see the hang test above), so the bound only tells the two apart
    assert report["deadlineHit"] is True and report["elapsedSeconds"] < 60
    no_containers_left(engine, report)


def test_the_container_is_hardened(tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord) -> None:
    report = runner_exec(tmp_path, "--harness", "reference", "--case", "escalation", "--keep")
    container = engine.containers.get(report["containerId"])
    try:
        attrs = container.attrs
        host = attrs["HostConfig"]
        assert attrs["Config"]["User"] == "1000:1000"
        assert host["CapDrop"] == ["ALL"] and not host.get("CapAdd")
        assert host["SecurityOpt"] == ["no-new-privileges"]
        assert host["ReadonlyRootfs"] is True and host["NetworkMode"] == "none"
        assert host["PidsLimit"] and host["Memory"] and host["Init"] is True
        assert not host.get("Privileged")
        mounts = attrs["Mounts"]
        assert [(m["Type"], m["Destination"]) for m in mounts] == [("bind", "/run/runner")]
        assert "docker.sock" not in json.dumps(mounts)
        labels = attrs["Config"]["Labels"]
        assert labels["runner.owner"] == "runner" and labels["runner.cell"] == "escalation.baseline.reference"
        assert labels["runner.run"]
    finally:
        container.remove(force=True)


# Run inside the turn's container by a profile of its own (same image, same hardened spec as every
# CLI): what a CLI there can see of the host. Sections are introduced by "== name" lines; "$$" is a
# "$" to the profile's template.
PROBE = r"""
echo '== sockets'; find / \( -path /proc -o -path /sys \) -prune -o -type s -print 2>/dev/null
echo '== unix'; tail -n +2 /proc/net/unix
echo '== interfaces'; ls /sys/class/net
echo '== routes'; tail -n +2 /proc/net/route
echo '== mounts'; cat /proc/self/mountinfo
echo '== engine'; for p in /var/run/docker.sock /run/docker.sock "$TURN_HOST_PATH"; do [ -e "$$p" ] && echo "$$p"; done
env | grep -i '^docker' || true
echo '== self'; id -u; grep -E '^(CapEff|NoNewPrivs):' /proc/self/status
"""


def test_inside_the_container_the_turn_dir_is_the_only_host_path_and_its_sockets_the_only_ones(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    """The per-turn socket is reachable only through the mount: no engine socket, no other unix
    socket anywhere the CLI can look, no interface but loopback, and the only host directory mounted
    is the turn dir at /run/runner (the engine adds its own read-only init binary and /etc files)."""
    profile = tmp_path / "probe.yaml"
    probe = json.dumps(PROBE.replace("$TURN_HOST_PATH", str(tmp_path / "tmp")))
    profile.write_text(
        f"id: probe\nlabel: Probe\nimage: reference\nargv: [/bin/sh, -c, {probe}]\n"
        "requires_mcp_session: false\ninterpreter: exit-code\n"
        "model: {dialect: anthropic-messages}\n"  # so the turn dir holds model.sock too
    )
    report = runner_exec(tmp_path, "--profile", str(profile), "--case", "escalation", "--keep")
    container = engine.containers.get(report["containerId"])
    try:
        attrs = container.attrs
        assert attrs["HostConfig"]["NetworkMode"] == "none"
        [mount] = attrs["Mounts"]
        assert (mount["Type"], mount["Destination"], mount["RW"]) == ("bind", "/run/runner", True)
        turn_host = Path(mount["Source"])
        assert turn_host.parent == tmp_path / "tmp"
        assert token_of_turn_dir(turn_host.name) == run_token(attrs["Config"]["Labels"][RUN_LABEL]), "named for its run"
        assert not attrs["HostConfig"].get("Binds") and not attrs["HostConfig"].get("VolumesFrom")
    finally:
        container.remove(force=True)
    assert report["exitCode"] == 0, Path(report["files"]["stderr"]).read_text()
    seen = sections(Path(report["files"]["stdout"]).read_text())

    assert sorted(seen["sockets"]) == ["/run/runner/mcp.sock", "/run/runner/model.sock"]
    # sockets bound in the container's own network namespace: none with a path outside the mount
    paths = [line.split()[7] for line in seen["unix"] if len(line.split()) > 7]
    assert all(p.startswith("/run/runner/") for p in paths), paths
    assert seen["interfaces"] == ["lo"] and seen["routes"] == []
    assert seen["engine"] == []  # no engine socket, no DOCKER_* variable, the host's turn path absent

    # every mount from the host's disk: the turn dir, and the engine's own read-only plumbing
    host_mounts = {}
    for line in seen["mounts"]:
        fields = line.split()
        fstype = fields[fields.index("-") + 1]
        if fstype not in {"overlay", "proc", "tmpfs", "devpts", "sysfs", "cgroup", "cgroup2", "mqueue"}:
            host_mounts[fields[4]] = (fields[3], fields[5].split(",")[0])
    assert host_mounts.pop("/run/runner") == (str(turn_host), "rw")
    engine_files = {"/usr/sbin/docker-init", "/etc/resolv.conf", "/etc/hostname", "/etc/hosts"}
    assert set(host_mounts) <= engine_files, host_mounts
    assert all(option == "ro" for _, option in host_mounts.values()), host_mounts
    assert all(root == "/usr/bin/tini-static" or "/containers/" in root for root, _ in host_mounts.values())

    uid, cap_eff, no_new_privs = seen["self"]
    assert uid == "1000" and cap_eff.split() == ["CapEff:", "0000000000000000"]
    assert no_new_privs.split() == ["NoNewPrivs:", "1"]


def test_a_cli_whose_mcp_server_never_connected_is_an_infrastructure_error(
    tmp_path: Path, engine: docker.DockerClient, reference_image: ImageRecord
) -> None:
    shipped = shipped_profile("reference").read_text()
    profile = tmp_path / "lost.yaml"
    lost = shipped.replace("id: reference", "id: lost").replace("${mcp_socket}", "/run/runner/nowhere.sock")
    profile.write_text(lost)
    report = runner_exec(tmp_path, "--profile", str(profile), "--case", "escalation", expect_exit=5)
    problem = report["infrastructureError"]
    assert problem["kind"] == "mcp_not_connected"
    assert "not connected" in problem["detail"] and "nowhere.sock" in problem["detail"]  # the CLI's own words
    assert report["mcp"]["sessionsInitialized"] == 0
    # the CLI's conduct, named as such (issue 31): never retried, and counted against its rate
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert (result["failure"]["cause"], result["failure"]["kind"]) == ("cli", "mcp_never_opened")
    assert result["failure"]["retried"] is False and result["failure"]["counts"] is True
    no_containers_left(engine, report)
