"""A whole turn's timeline, without Docker: ``run_turn`` with the fake sandbox of ``test_turn_settlement`` (the real
MCP server, latch and envelope; a thread plays the CLI). What happens in the fake happens in one order by cause
(the CLI calls, gets its answer, prints, exits), so the order asserted is the order things must have happened in.
The same with the real engine and vendor CLIs: ``tests/e2e/test_timeline.py``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import ClientSession

from runner.conformance.cases import get_case
from runner.matrix.timeline import read_cell_timeline
from runner.mcp.unix_client import unix_client
from runner.model.settings import ModelMode
from runner.sandbox.container import ContainerSpec
from runner.turn.model_choice import ModelChoice
from runner.turn.run_turn import TurnReport, TurnRequest, run_turn
from runner.turn.settings import TurnSettings
from tests.unit.test_turn_settlement import IMAGE, REASON, FakeCli, FakeProcess, frame, reference

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

AFTER_ASK = 2


class PersistentProcess(FakeProcess):
    """A CLI that reads a file, asks, then calls twice more (each refused by the latch)."""

    async def _mcp(self) -> None:
        async with unix_client(self.spec.turn_dir / "mcp.sock") as t, ClientSession(t.read, t.write) as session:
            await session.initialize()
            await session.call_tool("files.read", {"path": ["Workspace", "policy.md"]})
            await session.call_tool("sharedos.escalate", {"reason": REASON})
            for _ in range(AFTER_ASK):
                await session.call_tool("files.read", {"path": ["Workspace", "policy.md"]})


async def play(tmp_path: Path, cli: FakeCli, deadline: float = 20.0) -> tuple[TurnReport, list[dict[str, Any]]]:
    made: list[FakeProcess] = []

    def factory(spec: ContainerSpec) -> FakeProcess:
        made.append(PersistentProcess(cli, spec))
        return made[-1]

    request = TurnRequest(
        case=get_case("escalation"), profile=reference(), image=IMAGE, out_dir=tmp_path / "out",
        model=ModelChoice(ModelMode.NONE, "unit test"), settings=TurnSettings(run_id="unit", deadline=deadline),
    )
    report = await run_turn(None, request, sandboxes=factory)
    lines = Path(report.files["timeline"]).read_text().splitlines()
    return report, [json.loads(line) for line in lines]


def events(entries: list[dict[str, Any]]) -> list[str]:
    return [e["event"] for e in entries]


async def test_a_turn_that_asked_and_wound_down_has_its_moments_in_the_order_they_happened(tmp_path: Path) -> None:
    report, entries = await play(tmp_path, FakeCli(stdout=[frame("turn.completed")]))
    # its first output and its exit are seen by two threads (the output's pump, the exit's wait): their order is
    # not the CLI's, so only what follows from cause is asserted of them
    assert [e for e in events(entries) if e != "cli_first_output"] == [
        "turn_started", "container_created", "container_started",
        "mcp_call",  # files.read
        "mcp_call", "ask_answered",
        *["mcp_call", "refused_after_ask"] * AFTER_ASK,
        "cli_exited", "teardown_done", "turn_ended",
    ]
    names = events(entries)
    last_refusal = max(i for i, name in enumerate(names) if name == "refused_after_ask")
    assert last_refusal < names.index("cli_first_output") < names.index("teardown_done"), "it printed after its calls"
    ts = [e["t"] for e in entries]
    assert ts == sorted(ts) and ts[0] == 0.0, "one clock, written in the order recorded"
    calls = [(e["tool"], e["answer"], e["afterAsk"]) for e in entries if e["event"] == "mcp_call"]
    assert calls == [("files.read", "ok", False), ("sharedos.escalate", "ok", False),
                     *[("files.read", "escalation_pending", True)] * AFTER_ASK]
    asked = next(e for e in entries if e["event"] == "ask_answered")
    exited = next(e for e in entries if e["event"] == "cli_exited")
    assert exited["by"] == "itself" and exited["exitCode"] == 0
    assert report.wind_down_seconds == round(exited["t"] - asked["t"], 3)
    assert report.to_json()["windDownSeconds"] == report.wind_down_seconds
    assert report.started_at == entries[0]["at"] == report.to_json()["startedAt"]
    # every MCP event carries its time on the same clock; each tool.called is its mcp_call's instant
    mcp = [json.loads(line) for line in Path(report.files["mcpEvents"]).read_text().splitlines()]
    assert all(isinstance(e["t"], float) and e["at"].endswith("Z") for e in mcp)
    assert [e["t"] for e in mcp if e["event"] == "tool.called"] == [e["t"] for e in entries if e["event"] == "mcp_call"]
    merged = read_cell_timeline(tmp_path / "out")
    assert [m.t for m in merged.moments] == sorted(m.t for m in merged.moments)
    assert {m.event for m in merged.moments if m.source == "mcp"} >= {"connection.opened", "session.initialized"}


async def test_a_turn_stopped_by_the_deadline_has_no_wind_down_and_its_signals_on_the_timeline(
    tmp_path: Path
) -> None:
    report, entries = await play(tmp_path, FakeCli(exit_code=None), deadline=0.5)
    assert report.drive.deadline_hit and report.wind_down_seconds is None
    signals = [(e["signal"], e["reason"]) for e in entries if e["event"] == "deadline_signal"]
    assert signals == [("SIGTERM", "the turn deadline of 0.5s passed"),
                       ("SIGKILL", "the grace period of 0.3s after SIGTERM passed")]
    tail = events(entries)[events(entries).index("ask_answered"):]
    assert [e for e in tail if e in ("ask_answered", "deadline_signal", "cli_exited")] == [
        "ask_answered", "deadline_signal", "deadline_signal", "cli_exited"]
    exited = next(e for e in entries if e["event"] == "cli_exited")
    assert exited == {**exited, "by": "deadline", "exitCode": 137}
    term = next(e for e in entries if e["event"] == "deadline_signal")
    assert term["t"] >= 0.5, "not before the deadline"
