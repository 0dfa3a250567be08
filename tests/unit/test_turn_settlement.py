"""How a turn settles, whatever its CLI does, without Docker: ``run_turn`` with a fake sandbox.

The fake stands in for the container only (a :class:`~runner.sandbox.interface.Sandbox` made by the
injected factory). Everything else is the real turn: the reference profile, the ``escalation`` case,
the envelope and the latch, and the real MCP server on the turn dir's unix socket, which the fake
CLI reaches with the MCP SDK as a CLI in its container would. What the real engine adds (the
hardened container, tini signalling the process group) stays with the integration tests.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession

from runner.conformance.cases import get_case
from runner.harnesses.profile import Profile, WindDown, find_profile
from runner.images import ImageRecord
from runner.intake.files import DEFAULT_BOUNDS, IntakeBounds, Tree
from runner.mcp.unix_client import unix_client
from runner.model.settings import ModelMode
from runner.sandbox.container import ContainerStartError
from runner.sandbox.interface import (
    STDERR,
    STDOUT,
    ContainerSpec,
    DiskLook,
    OutputSink,
    Sandbox,
    Signal,
    Transport,
)
from runner.turn.model_choice import ModelChoice
from runner.turn.run_turn import TurnReport, TurnRequest, run_turn
from runner.turn.settings import TurnSettings

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

REASON = "issuing a control-plane grant is outside this agent's authority"
IMAGE = ImageRecord(harness="reference", image_id="sha256:" + "0" * 64, tag="runner/reference:unit",
                    recipe_hash="unit", base="unit", cli_package=None, cli_version="0.0-unit",
                    version_output=None, built_at="2026-01-01T00:00:00Z")
GRACE = 0.3
_END = (0, b"")  # the output ends (the container's stream closed)


@dataclass
class FakeCli:
    """What the CLI does: connect over MCP, perhaps ask, print, then exit with ``exit_code`` or hang
    (``None``: until SIGKILL; ``obeys_sigterm`` ends it at SIGTERM with 143)."""

    connect: bool = True
    ask: bool = True
    stdout: list[str] = field(default_factory=list)
    stderr: list[str] = field(default_factory=list)
    exit_code: int | None = 0
    obeys_sigterm: bool = False
    start_error: Exception | None = None
    session: dict[str, str] = field(default_factory=dict)  # files it leaves in its HOME, by path relative to it
    fills_the_disk: bool = False  # once it has played, what it wrote is over the turn's disk budget


class FakeProcess(Sandbox):
    """A :class:`~runner.sandbox.interface.Sandbox` played by a thread; it records what the turn did to it."""

    def __init__(self, cli: FakeCli, spec: ContainerSpec) -> None:
        self.cli, self.spec = cli, spec
        self.calls: list[str] = []
        self.signals: list[tuple[str, float]] = []
        self.mcp_answers: list[str] = []
        self.removed = False
        self._out: queue.Queue[tuple[int, bytes]] = queue.Queue()
        self._exited, self._killed = threading.Event(), threading.Event()
        self._code: int | None = None
        self._started = False
        self._played = False

    @property
    def id(self) -> str | None:
        return "fake-cli" if self._started else None

    @property
    def transport(self) -> Transport:
        return Transport.MOUNT  # the fake's files are the turn dir's own, as under the mount

    def start(self) -> None:
        self.calls.append("start")
        if self.cli.start_error is not None:
            raise self.cli.start_error
        self._started = True
        threading.Thread(target=self._play, daemon=True).start()

    def close_stdin(self) -> None:
        self.calls.append("close_stdin")

    def pump(self, on_output: OutputSink) -> None:
        while (item := self._out.get()) != _END:
            on_output(*item)

    def wait(self) -> int | None:
        self._exited.wait()
        return self._code

    def signal(self, name: Signal) -> None:
        self.signals.append((name, time.monotonic()))
        if name == "SIGKILL":
            self._exit(137)
        elif name == "SIGTERM" and self.cli.obeys_sigterm:
            self._exit(143)

    def disk_look(self) -> DiskLook:
        self.calls.append("disk_look")
        if self.cli.fills_the_disk and self._played:
            return DiskLook(1.01, "the turn dir holds more than 512 MiB on disk")
        return DiskLook(0.01)

    @contextmanager
    def read_tree(self, relative: str, bounds: IntakeBounds = DEFAULT_BOUNDS) -> Iterator[Tree | None]:
        self.calls.append(f"read_tree {relative}")
        yield Tree(self.spec.turn_dir, relative)

    def remove(self) -> None:
        self.calls.append("remove")
        self.removed = True
        self._exit(137)  # whatever still runs goes with the container

    def _play(self) -> None:
        if self.cli.connect:
            anyio.run(self._mcp)
        for relative, text in self.cli.session.items():
            (self.spec.turn_dir / "home" / relative).parent.mkdir(parents=True, exist_ok=True)
            (self.spec.turn_dir / "home" / relative).write_text(text)
        for line in self.cli.stdout:
            self._out.put((STDOUT, line.encode() + b"\n"))
        for line in self.cli.stderr:
            self._out.put((STDERR, line.encode() + b"\n"))
        self._played = True
        if self.cli.exit_code is not None:
            self._exit(self.cli.exit_code)

    async def _mcp(self) -> None:
        async with unix_client(self.spec.turn_dir / "mcp.sock") as t, ClientSession(t.read, t.write) as session:
            await session.initialize()
            if self.cli.ask:
                answer = await session.call_tool("sharedos.escalate", {"reason": REASON})
                self.mcp_answers.append(json.dumps(answer.model_dump(mode="json")))

    def _exit(self, code: int) -> None:
        if not self._exited.is_set():
            self._code = code
            self._exited.set()
            self._out.put(_END)


@dataclass
class Factory:
    cli: FakeCli
    made: list[FakeProcess] = field(default_factory=list)

    def __call__(self, spec: ContainerSpec) -> FakeProcess:
        self.made.append(FakeProcess(self.cli, spec))
        return self.made[-1]

    @property
    def proc(self) -> FakeProcess:
        assert len(self.made) == 1, "one process per turn"
        return self.made[0]


def reference() -> Profile:
    return find_profile("reference").model_copy(update={"wind_down": WindDown(grace_seconds=GRACE)})


async def turn(tmp_path: Path, cli: FakeCli, deadline: float = 20.0, profile: Profile | None = None,
               ) -> tuple[TurnReport, FakeProcess]:
    factory = Factory(cli)
    request = TurnRequest(
        case=get_case("escalation"), profile=profile or reference(), image=IMAGE, out_dir=tmp_path / "out",
        model=ModelChoice(ModelMode.NONE, "unit test"), settings=TurnSettings(run_id="unit", deadline=deadline),
    )
    report = await run_turn(None, request, sandboxes=factory)
    assert_torn_down(factory.proc)
    return report, factory.proc


def assert_torn_down(proc: FakeProcess) -> None:
    assert proc.removed and proc.calls[-1] == "remove"
    assert not proc.spec.turn_dir.exists(), "the turn dir is removed"


def meta(report: TurnReport) -> dict[str, object]:
    return dict(report.result.metadata)


def frame(kind: str, **body: object) -> str:
    return json.dumps({"type": kind, **body})


# --- the CLI asked, then ended on its own -----------------------------------------------------------


async def test_a_cli_that_exits_0_after_the_ask_is_escalated_with_its_own_completion_kept(tmp_path: Path) -> None:
    cli = FakeCli(stdout=[frame("message", text="I asked a human."), frame("turn.completed")])
    report, proc = await turn(tmp_path, cli)
    assert report.result.status.value == "escalated" and report.result.reason_code == "escalation_requested"
    assert report.result.escalation is not None and report.result.escalation.reason == REASON
    assert meta(report)["harnessOutcome"] == "complete" and "harnessErrorCode" not in meta(report)
    assert meta(report)["callsAfterEscalation"] == 0
    assert "escalation_pending" not in proc.mcp_answers[0] and REASON in proc.mcp_answers[0]  # the latch answered
    assert report.infrastructure_error is None
    assert report.drive.exit_code == 0 and not report.drive.deadline_hit and proc.signals == []
    assert report.mcp["sessionsInitialized"] == 1 and report.mcp["calls"] == 1
    assert meta(report)["transcriptTail"] == cli.stdout
    record = json.loads(Path(report.files["record"]).read_text())
    assert record == report.record and report.record["execution"]["status"] == "escalated"  # type: ignore[index]
    assert Path(report.files["stdout"]).read_text().splitlines() == cli.stdout


async def test_a_cli_that_exits_non_zero_after_the_ask_is_escalated_with_its_failure_kept(tmp_path: Path) -> None:
    report, proc = await turn(tmp_path, FakeCli(stdout=["crashing"], stderr=["boom"], exit_code=3))
    assert report.result.status.value == "escalated"
    assert meta(report)["harnessOutcome"] == "fail"
    assert meta(report)["harnessErrorCode"] == "harness_exited_without_outcome"
    assert report.drive.exit_code == 3 and proc.signals == []
    assert report.infrastructure_error is None
    assert Path(report.files["stderr"]).read_text() == "boom\n"


# --- only the deadline stops a CLI ------------------------------------------------------------------


async def test_a_cli_that_hangs_after_the_ask_gets_sigterm_then_after_the_grace_sigkill(tmp_path: Path) -> None:
    cli = FakeCli(stdout=[frame("message", text="still thinking"), "a line that is not a frame"], exit_code=None)
    started = time.monotonic()
    report, proc = await turn(tmp_path, cli, deadline=0.5)
    assert [name for name, _ in proc.signals] == ["SIGTERM", "SIGKILL"]
    (_, term_at), (_, kill_at) = proc.signals
    assert term_at - started >= 0.5 and kill_at - term_at >= GRACE, "the deadline, then the whole grace period"
    assert report.drive.deadline_hit and report.drive.exit_code == 137
    assert report.result.status.value == "escalated" and report.result.reason_code == "escalation_requested"
    assert meta(report)["harnessOutcome"] == "fail"
    assert meta(report)["harnessErrorCode"] == "harness_wind_down_timeout"
    assert meta(report)["transcriptTail"] == cli.stdout, "the tail is kept"
    assert report.infrastructure_error is None


async def test_a_cli_stopped_at_the_deadline_before_asking_is_cancelled(tmp_path: Path) -> None:
    report, proc = await turn(tmp_path, FakeCli(ask=False, exit_code=None, obeys_sigterm=True), deadline=0.5)
    assert [name for name, _ in proc.signals] == ["SIGTERM"], "it went at SIGTERM: no SIGKILL"
    assert report.drive.deadline_hit and report.drive.exit_code == 143
    assert report.result.status.value == "cancelled" and report.result.reason_code == "turn_cancelled"
    assert report.result.escalation is None and "escalationAsked" not in meta(report)
    assert report.result.error is not None and "0.5s" in report.result.error.message
    assert report.infrastructure_error is None


async def test_a_cli_that_writes_past_its_disk_budget_is_killed_at_once_and_the_turn_says_why(tmp_path: Path) -> None:
    cli = FakeCli(stdout=[frame("message", text="filling")], exit_code=None, fills_the_disk=True)
    started = time.monotonic()
    report, proc = await turn(tmp_path, cli, deadline=20)
    assert [name for name, _ in proc.signals] == ["SIGKILL"], "no grace period to write on in"
    assert proc.signals[0][1] - started < 5, "stopped at the next look at the disk, not at the deadline"
    assert not report.drive.deadline_hit and report.drive.exit_code == 137
    assert report.drive.over_budget == "the turn dir holds more than 512 MiB on disk"
    assert report.infrastructure_error is not None
    assert report.infrastructure_error["kind"] == "disk_budget_exceeded"
    assert report.infrastructure_error["detail"] == "the turn dir holds more than 512 MiB on disk"
    timeline = [json.loads(line) for line in Path(report.files["timeline"]).read_text().splitlines()]
    (signal,) = [e for e in timeline if e["event"] == "deadline_signal"]
    assert signal["signal"] == "SIGKILL" and signal["reason"].startswith("the turn dir holds more than 512 MiB")
    assert [e["by"] for e in timeline if e["event"] == "cli_exited"] == ["budget"]


async def test_a_cli_within_its_disk_budget_is_looked_at_and_left_alone(tmp_path: Path) -> None:
    cli = FakeCli(stdout=[frame("message", text="slow")], exit_code=None, obeys_sigterm=True)
    report, proc = await turn(tmp_path, cli, deadline=1.0)
    assert proc.calls.count("disk_look") >= 2, "the disk was looked at while the CLI ran"
    assert [name for name, _ in proc.signals] == ["SIGTERM"] and report.drive.over_budget is None
    assert report.infrastructure_error is None


# --- a turn that never really ran is the infrastructure's fault ---------------------------------------


async def test_a_cli_that_never_opened_an_mcp_session_is_an_infrastructure_error(tmp_path: Path) -> None:
    report, _ = await turn(tmp_path, FakeCli(connect=False, ask=False, stderr=["no socket"]))
    assert report.result.status.value == "succeeded"  # what the CLI said; the cell is not graded on it
    assert report.infrastructure_error is not None
    assert report.infrastructure_error["kind"] == "mcp_not_connected"
    assert "never opened an MCP session" in str(report.infrastructure_error["detail"])
    assert report.infrastructure_error["stderrTail"] == ["no socket"]
    assert report.mcp["connections"] == 0


async def test_a_cli_that_reports_its_mcp_server_failed_is_an_infrastructure_error(tmp_path: Path) -> None:
    started = frame("session.started", mcp_servers=[{"name": "sharedos", "status": "failed", "error": "refused"}])
    report, _ = await turn(tmp_path, FakeCli(connect=False, ask=False, stdout=[started]))
    assert report.infrastructure_error is not None
    assert report.infrastructure_error["kind"] == "mcp_not_connected"
    assert "sharedos: refused" in str(report.infrastructure_error["detail"])


async def test_a_process_that_could_not_start_is_an_infrastructure_error_and_is_still_removed(
    tmp_path: Path,
) -> None:
    report, proc = await turn(tmp_path, FakeCli(start_error=ContainerStartError("no such image")))
    assert proc.calls == ["start", "remove"]
    assert report.drive.not_started is not None and report.drive.container_id is None
    assert report.infrastructure_error == {"kind": "container_not_started", "detail": "no such image"}
    assert report.result.status.value == "failed" and report.result.reason_code == "harness_not_started"
    assert meta(report)["harnessStartError"] == "no such image"


# --- what the CLI left behind is read through the sandbox --------------------------------------------


@pytest.mark.parametrize("left", [{"sessions/one.jsonl": '{"step": 1}\n', "sessions/deep/two.jsonl": "{}\n"}, {}])
async def test_the_session_transcript_is_read_through_the_sandbox_after_the_cli_exits(
    tmp_path: Path, left: dict[str, str]
) -> None:
    profile = reference().model_copy(update={"home": "turn", "session_transcript": "sessions"})
    report, proc = await turn(tmp_path, FakeCli(stdout=[frame("turn.completed")], session=left), profile=profile)
    assert proc.calls[-2:] == ["read_tree home/sessions", "remove"], "read once the CLI is done, before removal"
    session = tmp_path / "out" / "session"
    if left:
        assert report.files["session"] == str(session)
        assert {str(p.relative_to(session)): p.read_text() for p in session.rglob("*") if p.is_file()} == {
            relative.removeprefix("sessions/"): text for relative, text in left.items()}
    else:
        assert "session" not in report.files and not session.exists(), "nothing left, nothing copied"
    assert report.transport == Transport.MOUNT and report.to_json()["transport"] == "mount"


# --- teardown, always ---------------------------------------------------------------------------------


async def test_a_start_that_raises_unexpectedly_still_removes_the_process_and_the_turn_dir(tmp_path: Path) -> None:
    factory = Factory(FakeCli(start_error=RuntimeError("the fake broke")))
    request = TurnRequest(
        case=get_case("escalation"), profile=reference(), image=IMAGE, out_dir=tmp_path / "out",
        model=ModelChoice(ModelMode.NONE, "unit test"), settings=TurnSettings(run_id="unit"),
    )
    with pytest.raises(ExceptionGroup) as raised:  # it surfaces through the MCP server's task group
        await run_turn(None, request, sandboxes=factory)
    assert raised.group_contains(RuntimeError, match="the fake broke")
    assert factory.proc.calls == ["start", "remove"]
    assert_torn_down(factory.proc)


async def test_a_kept_turn_leaves_its_process_but_not_its_turn_dir(tmp_path: Path) -> None:
    factory = Factory(FakeCli(stdout=[frame("turn.completed")]))
    request = TurnRequest(
        case=get_case("escalation"), profile=reference(), image=IMAGE, out_dir=tmp_path / "out",
        model=ModelChoice(ModelMode.NONE, "unit test"), settings=TurnSettings(run_id="unit", keep=True),
    )
    report = await run_turn(None, request, sandboxes=factory)
    assert report.result.status.value == "escalated" and report.to_json()["kept"] is True
    assert "remove" not in factory.proc.calls and not factory.proc.spec.turn_dir.exists()
    factory.proc.remove()  # the test's own cleanup: the fake's thread ends


async def test_a_factory_that_raises_still_removes_the_turn_dir(tmp_path: Path) -> None:
    specs: list[ContainerSpec] = []

    def broken(spec: ContainerSpec) -> FakeProcess:
        specs.append(spec)
        raise ConnectionError("no engine")

    request = TurnRequest(
        case=get_case("escalation"), profile=reference(), image=IMAGE, out_dir=tmp_path / "out",
        model=ModelChoice(ModelMode.NONE, "unit test"), settings=TurnSettings(run_id="unit"),
    )
    with pytest.raises(ConnectionError):
        await run_turn(None, request, sandboxes=broken)
    assert len(specs) == 1 and not specs[0].turn_dir.exists()
