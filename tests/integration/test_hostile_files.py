"""A hostile CLI through the real box: what it leaves in its HOME and writes on the relay's stream never gets out.

Each attack is a profile of the tests' own on the reference image (tests/hostile/files-*.yaml, running
tests/hostile/hostile_cli.py as uid 1000 in the hardened container), run by the product's own command
(``runner exec --profile ... --json``, a subprocess) on both transports and both runtimes where the attack touches
them. The host side holds what must stay in: a secret file and a directory with an ``id_rsa`` outside the turn dir,
a neighbour's directory in runner's TMPDIR, and a canary in runner's own environment (``/proc/self/environ``). After
each turn: no byte of any of them is in any artifact under the output directory, the session copy holds no link, no
connection reached the socket the test listens on outside the turn dir, and the turn settled with a ``result.json``
(the CLI's failure, or an infrastructure error that says why), never a crash of runner.

The attacks: the session path itself a link (to the file, the directory, ``/proc/self/environ``, a climb out of the
turn dir), links below a real session directory beside a forged ``result.json``, a link swapped in by a background
process for as long as the container lives, forged stream frames opening channels named by a ``../`` climb and an
absolute path (stream transport: the mount has no relay), and a CLI filling ``/run/runner`` (the per-file cap on both
transports; the turn dir's disk budget on the mount, whose turn dir is on the host's disk).
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import docker
import pytest
import yaml

from runner.images import ImageRecord
from runner.sandbox.interface import ResourceLimits, Runtime, Transport
from tests.support import _PEAK_OF as PEAK_OF
from tests.support import RUNNER, peak_mib

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

HOSTILE = Path(__file__).resolve().parents[1] / "hostile"
MiB = 1024 * 1024
BOXES = [pytest.param(t, r, id=f"{t.value}-{r.value}") for t in Transport for r in Runtime]


@dataclass
class Host:
    """What the host holds that the CLI must never get out, and where the turn runs."""

    root: Path  # short: a unix socket's path holds at most 107 bytes
    secret: bytes = field(default_factory=lambda: b"host-secret-" + secrets.token_hex(16).encode())
    key: bytes = field(default_factory=lambda: b"-----BEGIN OPENSSH PRIVATE KEY----- " + secrets.token_hex(24).encode())
    canary: str = field(default_factory=lambda: "runner-env-canary-" + secrets.token_hex(12))

    def __post_init__(self) -> None:
        (self.root / "host" / "ssh").mkdir(parents=True)
        self.secret_file.write_bytes(self.secret)
        (self.secret_dir / "id_rsa").write_bytes(self.key)
        (self.tmpdir / "neighbour").mkdir(parents=True)  # another turn's, another user's files in runner's TMPDIR
        (self.tmpdir / "neighbour" / "id_rsa").write_bytes(self.key)

    @property
    def secret_file(self) -> Path:
        return self.root / "host" / "secret.txt"

    @property
    def secret_dir(self) -> Path:
        return self.root / "host" / "ssh"

    @property
    def tmpdir(self) -> Path:
        return self.root / "tmp"

    @property
    def out(self) -> Path:
        return self.root / "out"

    def needles(self) -> dict[str, bytes]:
        return {"the secret file": self.secret, "the id_rsa": self.key, "runner's environment": self.canary.encode()}


@pytest.fixture
def host() -> Iterator[Host]:
    with tempfile.TemporaryDirectory(prefix="rh-", dir="/tmp") as root:
        yield Host(Path(root))


def render(host: Host, name: str, **markers: str) -> Path:
    """tests/hostile/<name>.yaml with the hostile CLI as its HOME's hostile.py and each @MARKER@ of its argv filled."""
    profile = yaml.safe_load((HOSTILE / f"{name}.yaml").read_text())
    (script,) = profile["config_files"]
    script["content"] = (HOSTILE / "hostile_cli.py").read_text()
    for marker, value in markers.items():
        profile["argv"] = [arg.replace(f"@{marker}@", value) for arg in profile["argv"]]
    assert not any("@" in arg for arg in profile["argv"]), f"a marker left unfilled: {profile['argv']}"
    path = host.root / "profiles" / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(profile, sort_keys=False))
    return path


def hostile_exec(host: Host, profile: Path, transport: Transport, runtime: Runtime,
                 *extra: str, expect_exit: int = 0, peak_to: Path | None = None) -> tuple[dict[str, Any], str]:
    """``runner exec --json`` of a hostile profile, as a user runs it; the report and runner's stderr. Whatever the
    CLI did, the turn settles: exit 0 (5: an infrastructure error, said on stderr), one JSON object, a result.json.
    ``peak_to``: where runner's peak RSS is written (tests.support.peak_mib reads it)."""
    env = {**os.environ, "TMPDIR": str(host.tmpdir), "RUNNER_TEST_CANARY": host.canary}
    measured = [sys.executable, "-c", PEAK_OF, str(peak_to)] if peak_to is not None else []
    proc = subprocess.run(
        [*measured, RUNNER, "exec", "--json", "--out", str(host.out), "--profile", str(profile), "--case", "escalation",
         "--transport", transport.value, "--runtime", runtime.value, *extra],
        capture_output=True, text=True, env=env, timeout=400,
    )
    assert proc.returncode == expect_exit, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"exactly one JSON object on stdout, got: {proc.stdout[:2000]}"
    result = json.loads((host.out / "result.json").read_text())
    assert result.get("grade") is not None or result.get("infrastructureError") is not None
    assert sorted(p.name for p in host.tmpdir.iterdir()) == ["neighbour"], "no turn dir is left in TMPDIR"
    return json.loads(lines[0]), proc.stderr


def nothing_got_out(host: Host) -> dict[str, bytes]:
    """No byte the host keeps in is in any file under the output directory, and no file there is a link; every file
    of the session copy, by path relative to it."""
    session: dict[str, bytes] = {}
    for directory, dirs, names in os.walk(host.out):
        for name in dirs + names:
            path = Path(directory) / name
            assert not path.is_symlink(), f"{path} is a link in the artifacts"
        for name in names:
            path = Path(directory) / name
            data = path.read_bytes()
            for what, needle in host.needles().items():
                assert needle not in data, f"{what} got out into {path.relative_to(host.out)}"
            if (host.out / "session") in path.parents:
                session[str(path.relative_to(host.out / "session"))] = data
    return session


# --- links at and below the session path ---------------------------------------------------------------------------

TARGETS = {
    "a-host-file": lambda host: str(host.secret_file),
    "a-host-directory": lambda host: str(host.secret_dir),
    "proc-self-environ": lambda host: "/proc/self/environ",
    "a-climb-out-of-the-turn-dir": lambda host: "../..",  # from <turn>/home: runner's TMPDIR, the neighbour in it
}


@pytest.mark.parametrize("target", list(TARGETS))
@pytest.mark.parametrize(("transport", "runtime"), BOXES)
def test_a_link_at_the_session_path_is_never_followed(
    host: Host, reference_image: ImageRecord, transport: Transport, runtime: Runtime, target: str
) -> None:
    report, _stderr = hostile_exec(host, render(host, "files-link", TARGET=TARGETS[target](host)), transport, runtime)
    assert report["exitCode"] == 0 and report["transport"] == transport.value
    assert json.loads(Path(report["files"]["stdout"]).read_text().splitlines()[0])["planted"].endswith("/sessions")
    assert nothing_got_out(host) == {}, "nothing of the host is a session transcript"
    assert "session" not in report["files"]


@pytest.mark.parametrize(("transport", "runtime"), BOXES)
def test_links_below_a_real_session_are_skipped_and_a_forged_verdict_stays_the_clis(
    host: Host, reference_image: ImageRecord, transport: Transport, runtime: Runtime
) -> None:
    profile = render(host, "files-below", SECRET_FILE=str(host.secret_file), SECRET_DIR=str(host.secret_dir))
    report, _stderr = hostile_exec(host, profile, transport, runtime)
    session = nothing_got_out(host)
    assert sorted(session) == ["result.json", "transcript.jsonl"], "the CLI's regular files, and no link's target"
    assert b"an honest line" in session["transcript.jsonl"]
    # the forged verdict is a file of the CLI's transcript, never runner's: the cell's own result is the real one
    assert json.loads(session["result.json"])["forgedBy"] == "the CLI"
    result = json.loads((host.out / "result.json").read_text())
    assert result["cell"]["harness"] == "files-below" and "forgedBy" not in result
    assert report["files"]["session"] == str(host.out / "session")


@pytest.mark.parametrize(("transport", "runtime"), BOXES)
def test_a_link_swapped_in_while_the_container_lives_is_never_followed(
    host: Host, reference_image: ImageRecord, transport: Transport, runtime: Runtime
) -> None:
    report, _stderr = hostile_exec(host, render(host, "files-swap", SECRET_DIR=str(host.secret_dir)), transport,
                                   runtime)
    said = [json.loads(line) for line in Path(report["files"]["stdout"]).read_text().splitlines()]
    assert said == [{"swapping": "/run/runner/home/sessions", "target": str(host.secret_dir)}]
    assert nothing_got_out(host) == {}


# --- forged stream channels ----------------------------------------------------------------------------------------


class Outside:
    """A unix socket outside the turn dir, listening: every connection it gets and every byte sent on it."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.connections: list[bytes] = []
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(str(path))
        self._listener.listen(8)
        self._listener.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._listener.accept()
            except TimeoutError:
                continue
            conn.settimeout(2)
            data = b""
            try:
                while chunk := conn.recv(4096):
                    data += chunk
            except OSError:
                pass
            self.connections.append(data)
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(5)
        self._listener.close()


@pytest.mark.parametrize("runtime", list(Runtime))
def test_forged_channels_on_the_relays_stream_reach_nothing_outside_the_turn_dir(
    host: Host, reference_image: ImageRecord, runtime: Runtime
) -> None:
    outside = Outside(host.root / "outside.sock")
    try:
        # the turn dir is <TMPDIR>/runner-turn-*: two levels up is the test's root, where the socket listens
        profile = render(host, "files-channels", ESCAPE_RELATIVE="../../outside",
                         ESCAPE_ABSOLUTE=str(host.root / "outside"))
        report, stderr = hostile_exec(host, profile, Transport.STREAM, runtime)
    finally:
        outside.close()
    said = [json.loads(line) for line in Path(report["files"]["stdout"]).read_text().splitlines()]
    assert [s["forged"] for s in said] == ["../../outside", str(host.root / "outside")], "the frames were written"
    assert outside.connections == [], "runner connected outside the turn dir"
    for name in ("../../outside", str(host.root / "outside")):
        assert f"for {name!r}, not one of mcp, model: refused" in stderr
    nothing_got_out(host)


# --- filling /run/runner -------------------------------------------------------------------------------------------

LIMITS = ResourceLimits()


@pytest.mark.parametrize("runtime", list(Runtime))
def test_a_cli_filling_the_turn_dir_is_capped_per_file_and_stopped_at_the_disk_budget(
    host: Host, reference_image: ImageRecord, engine: docker.DockerClient, runtime: Runtime
) -> None:
    """Mount transport: the turn dir is on the host's disk. No file grows past the per-file cap, and the CLI is
    stopped once the turn dir holds more than its budget, long before the deadline; what it wrote before it was
    stopped is bounded by the budget and what it can write between two looks."""
    total = 4 * LIMITS.turn_dir_bytes // MiB
    profile = render(host, "files-fill", TOTAL_MIB=str(total), THEN="wait")
    report, stderr = hostile_exec(host, profile, Transport.MOUNT, runtime, "--deadline", "120", expect_exit=5)
    assert "runner: infrastructure error (disk_budget_exceeded): the turn dir holds more than" in stderr
    said = [json.loads(line) for line in Path(report["files"]["stdout"]).read_text().splitlines()]
    assert said[0] == {"big": LIMITS.file_bytes, "error": 27}, "the 200 MiB file stopped at the cap (EFBIG)"
    written = max(s["written"] for s in said if "written" in s)
    assert not any("done" in s for s in said), "the CLI was stopped before it wrote all it meant to"
    assert report["infrastructureError"]["kind"] == "disk_budget_exceeded"
    assert report["infrastructureError"]["detail"].startswith("the turn dir holds more than 512 MiB on disk")
    assert not report["deadlineHit"], "the budget stopped it, not the deadline"
    timeline = [json.loads(line) for line in Path(report["files"]["timeline"]).read_text().splitlines()]
    assert [e["by"] for e in timeline if e["event"] == "cli_exited"] == ["budget"]
    overshoot = written - LIMITS.turn_dir_bytes
    print(f"\n{runtime.value}: the CLI wrote {written / MiB:.0f} MiB before it was stopped "
          f"(budget {LIMITS.turn_dir_bytes // MiB} MiB, overshoot {overshoot / MiB:.0f} MiB)")
    # what passes the budget is what the CLI writes between two looks, and how long a look waits for a core is the
    # machine's load (the figures: docs/measurements.md; on runsc with both cores busy it was 376 MiB past 512):
    # so the test holds what the product promises, that it was stopped on the budget long before the 2 GiB it meant
    # to write, and prints the overshoot as a figure
    assert written < total * MiB, "the budget bounds what reaches the host's disk"
    nothing_got_out(host)


@pytest.mark.parametrize("runtime", list(Runtime))
def test_under_the_stream_transport_no_file_the_cli_writes_grows_past_the_per_file_cap(
    host: Host, reference_image: ImageRecord, runtime: Runtime
) -> None:
    """The stream transport's turn dir is the engine's volume, out of the host's sight: the per-file cap holds there
    (the total does not: the volume goes with the container, see ResourceLimits)."""
    profile = render(host, "files-fill", TOTAL_MIB="0", THEN="exit")
    report, _stderr = hostile_exec(host, profile, Transport.STREAM, runtime, "--deadline", "20")
    said = [json.loads(line) for line in Path(report["files"]["stdout"]).read_text().splitlines()]
    assert said[0] == {"big": LIMITS.file_bytes, "error": 27}, "the 200 MiB file stopped at the cap (EFBIG)"
    assert said[1] == {"done": LIMITS.file_bytes}
    nothing_got_out(host)


@pytest.mark.parametrize("runtime", list(Runtime))
def test_a_huge_session_under_the_stream_transport_is_read_as_it_streams_and_only_to_its_bound(
    host: Host, reference_image: ImageRecord, runtime: Runtime
) -> None:
    """The session's archive comes from the engine as the CLI left it: here more than 700 MiB. runner reads it as it
    streams in and stops at its bound; its memory stays far below the archive's size (it once held it whole)."""
    peak = host.root / "peak"
    report, stderr = hostile_exec(host, render(host, "files-fill", TOTAL_MIB="700", THEN="exit"), Transport.STREAM,
                                  runtime, "--deadline", "60", peak_to=peak)
    said = [json.loads(line) for line in Path(report["files"]["stdout"]).read_text().splitlines()]
    assert said[-1]["done"] >= 700 * MiB, "the CLI left it all"
    print(f"\n{runtime.value}: runner's peak RSS {peak_mib(peak):.0f} MiB for a {said[-1]['done'] / MiB:.0f} MiB "
          "session")
    assert peak_mib(peak) < 400, "runner held no more than its bound of the archive"
    assert "past the bound of 67108864 bytes" in stderr, "the copy stopped at its bound and said so"
    session = nothing_got_out(host)
    assert sum(len(data) for data in session.values()) <= 64 * MiB
