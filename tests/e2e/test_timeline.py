"""End to end: the timeline of a real vendor CLI's turn (Codex, installed in its pinned image, against the scripted
model), and its wind-down measured against a clock that is not the runner's: the Docker engine's own record of when
the container finished (``State.FinishedAt``).

What is asserted of the order is what must be so by cause (the CLI cannot call before its container started, the
model hears the ask's answer only after the latch gave it, the CLI exits after its last model request was answered),
read by ``t`` as every reader must.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import docker
import pytest

from runner.images import ImageRecord
from tests.support import runner_exec

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

HARNESS = "codex"
# The runner sees the CLI's exit when the engine's wait returns, after the engine recorded it finished: the two
# differ by the engine's notice of the exit and a worker thread's hand-over to the event loop (tens of milliseconds
# idle; a second on two cores shared with builds is already generous). The runner's time can never be earlier than
# the engine's beyond the two clocks' rounding (both read the host's one wall clock: milliseconds, nanoseconds).
TOLERANCE_SECONDS = 2.0
EARLIER_BY_ROUNDING = 0.01
HANG_DEADLINE = 30  # after the ask, which Codex reached 5.5 s into the turn (2 shared cores, 2026-12-02)
AFTER_ASK = 3  # the persistent behaviour's calls after the ask (runner.conformance.behaviours)


@pytest.fixture()
def kept(engine: docker.DockerClient) -> Iterator[list[str]]:
    """Containers a test keeps (``--keep``) to read the engine's record of them; removed after the test."""
    ids: list[str] = []
    yield ids
    for cid in ids:
        with contextlib.suppress(docker.errors.NotFound):
            engine.containers.get(cid).remove(force=True)


def timeline(report: dict[str, Any]) -> list[dict[str, Any]]:
    lines = Path(report["files"]["timeline"]).read_text().splitlines()
    return sorted((json.loads(line) for line in lines), key=lambda e: e["t"])  # by t, never by file order


def first(entries: list[dict[str, Any]], event: str, **fields: Any) -> dict[str, Any]:
    found = [e for e in entries if e["event"] == event and all(e.get(k) == v for k, v in fields.items())]
    assert found, f"no {event} {fields or ''} on the timeline: {[e['event'] for e in entries]}"
    return found[0]


def epoch(text: str) -> float:
    """An ISO-8601 UTC time (the runner's milliseconds, or the engine's nanoseconds) as seconds since the epoch."""
    head, _, fraction = text.rstrip("Z").partition(".")
    return datetime.fromisoformat(f"{head}.{(fraction + '000000')[:6]}+00:00").timestamp()


def test_an_escalation_turn_is_on_the_timeline_in_order_and_its_wind_down_agrees_with_the_engine(
    tmp_path: Path, engine: docker.DockerClient, codex_image: ImageRecord, kept: list[str]
) -> None:
    report = runner_exec(tmp_path, "--harness", HARNESS, "--case", "escalation", "--behaviour", "persistent",
                         "--model", "scripted", "--keep")
    kept.append(report["containerId"])
    assert report["status"] == "escalated" and report["infrastructureError"] is None, report["outcome"]
    entries = timeline(report)
    t = {name: first(entries, name)["t"] for name in (
        "turn_started", "container_created", "container_started", "ask_answered", "cli_exited", "teardown_done",
        "turn_ended")}
    requests = [e for e in entries if e["event"] == "model_request"]
    control = first(entries, "mcp_call", tool="files.read")
    ask = first(entries, "mcp_call", tool="sharedos.escalate")
    assert [(c["answer"], c["afterAsk"]) for c in (control, ask)] == [("ok", False), ("ok", False)]
    assert ask["t"] == t["ask_answered"], "the ask's call is the one that closed the latch"
    assert t["turn_started"] == 0.0 < t["container_created"] <= t["container_started"]
    assert t["container_started"] <= requests[0]["t"] < control["t"] <= ask["t"], "started, asked the model, called"
    assert requests[-1]["t"] > ask["t"], "the ask's answer went back to the model"
    assert requests[-1]["t"] < t["cli_exited"] <= t["teardown_done"] <= t["turn_ended"]
    assert [r["n"] for r in requests] == list(range(1, len(requests) + 1))
    exited = first(entries, "cli_exited")
    assert (exited["by"], exited["exitCode"]) == ("itself", 0)
    assert not [e for e in entries if e["event"] == "deadline_signal"]
    # each call after the ask: refused by the latch, in the order made, between the ask and the exit
    after = [e for e in entries if e["event"] == "mcp_call" and e["t"] > ask["t"]]
    refused = [e for e in entries if e["event"] == "refused_after_ask"]
    assert [(e["tool"], e["answer"], e["afterAsk"]) for e in after] == [
        ("files.read", "escalation_pending", True)] * AFTER_ASK == [(e["tool"], e["code"], True) for e in refused]
    assert [e["t"] for e in after] == [e["t"] for e in refused] and refused[-1]["t"] < t["cli_exited"]
    assert report["outcome"]["metadata"]["callsAfterEscalation"] == AFTER_ASK

    wind_down = report["windDownSeconds"]
    assert wind_down == round(t["cli_exited"] - t["ask_answered"], 3) and wind_down > 0
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert result["turn"]["windDownSeconds"] == wind_down and result["startedAt"] == entries[0]["at"]
    state = engine.containers.get(report["containerId"]).attrs["State"]
    assert state["Status"] == "exited" and state["ExitCode"] == 0
    by_engine = epoch(state["FinishedAt"]) - epoch(first(entries, "ask_answered")["at"])
    assert -EARLIER_BY_ROUNDING <= wind_down - by_engine <= TOLERANCE_SECONDS, (wind_down, by_engine)
    # the MCP events and the model exchanges carry their times on the same clock
    for name in ("mcpEvents", "modelExchanges"):
        stamped = [json.loads(line) for line in Path(report["files"][name]).read_text().splitlines()]
        assert stamped and all(0 <= e["t"] <= t["turn_ended"] and e["at"].endswith("Z") for e in stamped), name


def test_a_cli_that_hangs_after_the_ask_has_no_wind_down_and_the_deadlines_signals_on_the_timeline(
    tmp_path: Path, engine: docker.DockerClient, codex_image: ImageRecord
) -> None:
    report = runner_exec(tmp_path, "--harness", HARNESS, "--case", "escalation", "--behaviour", "hang-after-ask",
                         "--model", "scripted", "--deadline", str(HANG_DEADLINE))
    assert report["status"] == "escalated" and report["deadlineHit"] is True, report["outcome"]
    assert report["windDownSeconds"] is None
    result = json.loads((tmp_path / "out" / "result.json").read_text())
    assert result["turn"]["windDownSeconds"] is None
    entries = timeline(report)
    asked = first(entries, "ask_answered")
    signals = [e for e in entries if e["event"] == "deadline_signal"]
    assert signals and signals[0]["signal"] == "SIGTERM" and [s["signal"] for s in signals] in (
        ["SIGTERM"], ["SIGTERM", "SIGKILL"])
    assert asked["t"] < HANG_DEADLINE <= signals[0]["t"], "asked before the deadline; signalled at it"
    exited = first(entries, "cli_exited")
    assert exited["by"] == "deadline" and signals[-1]["t"] <= exited["t"]
