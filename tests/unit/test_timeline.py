"""A turn's timeline: the one clock, the entries and their file, the wind-down computed from them, a cell's three
timed files merged back by ``t``, and ``runner show`` on a hand-built cell directory (malformed ones included)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from runner.core.scrub import Scrubber
from runner.core.timeline import (
    EVENT_FIELDS,
    Stamp,
    Timeline,
    TimelineEvent,
    TurnClock,
    answer_of,
    iso_utc,
    wind_down_seconds,
)
from runner.matrix.artifact import load_result
from runner.matrix.series import Group, findings
from runner.matrix.timeline import CellReadError, read_cell_timeline
from runner.turn.timeline import TIMELINE, TimelineFile

RUNNER = str(Path(sys.executable).parent / "runner")
GOLDEN = Path(__file__).resolve().parents[1] / "golden" / "runs"
GOLDEN_CELL = GOLDEN / "matrix" / "escalation.baseline.reference"
GOLDEN_TRIALS = GOLDEN / "trials" / "escalation.baseline.model"


class Ticks:
    """A time source that reads what the test sets."""

    def __init__(self, value: float) -> None:
        self.value = value

    def __call__(self) -> float:
        return self.value


# --- the clock ----------------------------------------------------------------------------------------------------


def test_the_clock_stamps_seconds_since_its_start_and_the_wall_time_of_that_same_instant() -> None:
    mono, wall = Ticks(5000.0), Ticks(1_796_209_323.456)  # 2026-12-02T11:02:03.456Z
    clock = TurnClock(mono, wall)
    assert clock.started == Stamp(0.0, "2026-12-02T11:02:03.456Z")
    mono.value = 5001.23449
    wall.value = 0.0  # the wall clock jumped: stamps go on from the start's wall time, on the monotonic clock
    assert clock.now() == Stamp(1.234, "2026-12-02T11:02:04.690Z")
    assert clock.now().to_json() == {"at": "2026-12-02T11:02:04.690Z", "t": 1.234}


def test_iso_utc_has_milliseconds_and_a_z() -> None:
    assert iso_utc(0) == "1970-01-01T00:00:00.000Z"
    assert iso_utc(1.9999) == "1970-01-01T00:00:01.999Z"


# --- the timeline -------------------------------------------------------------------------------------------------


def test_each_entry_is_stamped_kept_and_handed_to_the_sink_in_the_order_recorded() -> None:
    mono = Ticks(10.0)
    written: list[dict[str, Any]] = []
    timeline = Timeline(TurnClock(mono, Ticks(0.0)), written.append)
    timeline.record(TimelineEvent.TURN_STARTED, timeline.clock.started)
    mono.value = 10.5
    stamp = timeline.record(TimelineEvent.MCP_CALL, tool="sharedos.escalate", answer="ok", afterAsk=False)
    timeline.record(TimelineEvent.ASK_ANSWERED, stamp, tool="sharedos.escalate")  # the same instant, given
    assert written == timeline.entries == [
        {"t": 0.0, "at": "1970-01-01T00:00:00.000Z", "event": "turn_started"},
        {"t": 0.5, "at": "1970-01-01T00:00:00.500Z", "event": "mcp_call", "tool": "sharedos.escalate",
         "answer": "ok", "afterAsk": False},
        {"t": 0.5, "at": "1970-01-01T00:00:00.500Z", "event": "ask_answered", "tool": "sharedos.escalate"},
    ]


def test_an_event_carries_exactly_its_own_fields() -> None:
    timeline = Timeline(TurnClock(Ticks(0.0), Ticks(0.0)))
    with pytest.raises(ValueError, match="cli_exited carries"):
        timeline.record(TimelineEvent.CLI_EXITED, exitCode=0)
    assert set(EVENT_FIELDS) == set(TimelineEvent), "every event of the vocabulary says its fields"


def test_an_mcp_calls_answer_is_ok_or_its_refusal_code() -> None:
    assert answer_of("succeeded", None) == "ok"
    assert answer_of("denied", "escalation_pending") == "escalation_pending"
    assert answer_of("error", None) == "error"


def entry(event: str, t: float, **fields: Any) -> dict[str, Any]:
    return {"t": t, "at": iso_utc(t), "event": event, **fields}


@pytest.mark.parametrize(("entries", "expected"), [
    ([entry("ask_answered", 2.0, tool="sharedos.escalate"), entry("cli_exited", 3.234, exitCode=0, by="itself")],
     1.234),
    # read by t, not by the order given
    ([entry("cli_exited", 9.0, exitCode=3, by="itself"), entry("ask_answered", 4.5, tool="sharedos.escalate")], 4.5),
    ([entry("cli_exited", 3.0, exitCode=0, by="itself")], None),  # nobody asked
    ([entry("ask_answered", 2.0, tool="sharedos.escalate"), entry("cli_exited", 30.0, exitCode=137, by="deadline")],
     None),  # the deadline stopped it
    ([entry("ask_answered", 2.0, tool="sharedos.escalate")], None),  # its exit went unseen
], ids=["wound-down", "unordered", "no-ask", "deadline", "no-exit"])
def test_the_wind_down_is_the_ask_answered_to_the_cli_exiting_by_itself(
    entries: list[dict[str, Any]], expected: float | None
) -> None:
    assert wind_down_seconds(entries) == expected


def test_the_timeline_file_holds_one_scrubbed_object_a_line_and_nothing_after_it_is_closed(tmp_path: Path) -> None:
    secret = "sk-this-is-a-host-secret-value"
    sink = TimelineFile(tmp_path, Scrubber({"OPENAI_API_KEY": secret}))
    timeline = Timeline(TurnClock(Ticks(0.0), Ticks(0.0)), sink)
    timeline.record(TimelineEvent.MCP_CALL, tool=f"tool-{secret}", answer="tool_unavailable", afterAsk=False)
    sink.close()
    timeline.record(TimelineEvent.TURN_ENDED)
    lines = (tmp_path / TIMELINE).read_text().splitlines()
    assert len(lines) == 1 and secret not in lines[0]
    assert json.loads(lines[0])["event"] == "mcp_call"


def test_two_scripted_trials_that_wound_down_in_different_times_found_the_same() -> None:
    first, second = load_result(GOLDEN_TRIALS / "result.json"), load_result(GOLDEN_TRIALS / "trial-2" / "result.json")

    def timed(result: Any, seconds: float, status: str = "escalated") -> Any:
        turn = result.turn.model_copy(update={"wind_down_seconds": seconds, "status": status})
        return result.model_copy(update={"turns": (turn,)})

    def found(*runs: Any) -> list[str]:
        group = Group({})
        for run in runs:
            group.add(run)
        return findings([group])

    assert found(timed(first, 0.8), timed(second, 1.3)) == []
    assert found(timed(first, 0.8), timed(second, 0.8, status="failed")), "a different ending still is a finding"


# --- a cell's timeline, read back ---------------------------------------------------------------------------------


def jsonl(path: Path, lines: list[Any]) -> None:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def hand_built_cell(directory: Path) -> Path:
    """A cell directory as a persistent turn writes it: the golden result, and the three timed files."""
    directory.mkdir(parents=True)
    shutil.copy(GOLDEN_CELL / "result.json", directory / "result.json")
    ask = "sharedos.escalate"
    jsonl(directory / "timeline.jsonl", [
        entry("turn_started", 0.0), entry("container_created", 0.4), entry("container_started", 0.9),
        entry("model_request", 1.1, n=1),
        entry("cli_first_output", 1.2, stream="stdout"),
        entry("mcp_call", 1.5, tool="files.read", answer="ok", afterAsk=False),
        entry("model_request", 1.6, n=2),  # written before the call below, which is earlier
        entry("mcp_call", 1.55, tool=ask, answer="ok", afterAsk=False), entry("ask_answered", 1.55, tool=ask),
        entry("mcp_call", 2.0, tool="files.read", answer="escalation_pending", afterAsk=True),
        entry("refused_after_ask", 2.0, tool="files.read", code="escalation_pending"),
        entry("cli_exited", 2.8, exitCode=0, by="itself"), entry("teardown_done", 3.1), entry("turn_ended", 3.1),
    ])
    jsonl(directory / "mcp-events.jsonl", [
        {"event": "connection.opened", "at": iso_utc(1.0), "t": 1.0, "connection": 1},
        {"event": "tool.called", "at": iso_utc(1.5), "t": 1.5, "connection": 1, "callId": "a", "tool": "files.read",
         "alias": None, "status": "succeeded", "code": None},
        {"event": "connection.closed", "at": iso_utc(2.7), "t": 2.7, "connection": 1, "reason": "eof"},
    ])
    jsonl(directory / "model-exchanges.jsonl", [  # in completion order
        {"ts": iso_utc(1.7), "seq": 1, "at": iso_utc(1.6), "t": 1.6, "request_seq": 2, "dialect": "openai-chat",
         "step": 1, "response": {"status": 200}, "ended": "complete", "duration_s": 0.1},
        {"ts": iso_utc(1.8), "seq": 2, "at": iso_utc(1.1), "t": 1.1, "request_seq": 1, "dialect": "openai-chat",
         "step": 0, "response": {"status": 200}, "ended": "complete", "duration_s": 0.7},
    ])
    return directory


def test_a_cells_three_files_are_merged_by_t_each_thing_said_once(tmp_path: Path) -> None:
    read = read_cell_timeline(hand_built_cell(tmp_path / "cell"))
    assert [(m.t, m.source, m.event) for m in read.moments] == [
        (0.0, "turn", "turn_started"), (0.4, "turn", "container_created"), (0.9, "turn", "container_started"),
        (1.0, "mcp", "connection.opened"), (1.1, "turn", "model_request"), (1.2, "turn", "cli_first_output"),
        (1.5, "turn", "mcp_call"),  # the tool.called of that instant is not said again
        (1.55, "turn", "mcp_call"), (1.55, "turn", "ask_answered"), (1.6, "turn", "model_request"),
        (2.0, "turn", "mcp_call"), (2.0, "turn", "refused_after_ask"), (2.7, "mcp", "connection.closed"),
        (2.8, "turn", "cli_exited"), (3.1, "turn", "teardown_done"), (3.1, "turn", "turn_ended"),
    ]
    first = next(m for m in read.moments if m.event == "model_request")
    assert first.fields == {"n": 1, "dialect": "openai-chat", "step": 0, "status": 200, "ended": "complete",
                            "durationSeconds": 0.7}, "its exchange is folded into the request"
    assert read.untimed == {}


def test_files_from_a_runner_that_stamped_nothing_are_counted_not_placed(tmp_path: Path) -> None:
    cell = tmp_path / "cell"
    cell.mkdir()
    jsonl(cell / "mcp-events.jsonl", [{"event": "connection.opened", "connection": 1}] * 3)
    read = read_cell_timeline(cell)
    assert read.moments == [] and read.untimed == {"mcp-events.jsonl": 3}


@pytest.mark.parametrize(("name", "text", "words"), [
    ("timeline.jsonl", '{"t": 0, "at": "x", "event": "turn_started"}\n{not json\n', "line 2: not JSON"),
    ("timeline.jsonl", '[1, 2]\n', "line 1: expected a JSON object, got list"),
    ("timeline.jsonl", '{"t": "soon", "at": "x", "event": "turn_started"}\n', "line 1: field 't'"),
    ("timeline.jsonl", '{"t": 1, "at": 5, "event": "turn_started"}\n', "line 1: field 'at'"),
    ("timeline.jsonl", '{"t": 1, "at": "x"}\n', "line 1: field 'event'"),
    ("mcp-events.jsonl", '{"event": "a", "t": 1, "at": "x"}\n\n{"event": "b"}\n', "line 3: carries no 't' and 'at'"),
    ("model-exchanges.jsonl", '{"t": true, "at": "x"}\n', "line 1: field 't'"),
])
def test_a_malformed_line_is_named_by_file_and_line(tmp_path: Path, name: str, text: str, words: str) -> None:
    (tmp_path / name).write_text(text)
    with pytest.raises(CellReadError) as raised:
        read_cell_timeline(tmp_path)
    assert str(raised.value).startswith(f"{tmp_path / name}: {words}")


# --- runner show ----------------------------------------------------------------------------------------------------


def show(*args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run([RUNNER, "show", *args], capture_output=True, text=True, timeout=60, env=environ)


def test_show_prints_the_verdict_then_the_timeline_as_plain_aligned_lines(tmp_path: Path) -> None:
    cell = hand_built_cell(tmp_path / "cell")
    proc = show(str(cell))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert all(line == line.rstrip() for line in lines), "no line ends in a space"
    verdict = lines[:lines.index("")]
    assert verdict[:3] == ["cell                  escalation.baseline.reference",
                           "grade                 pass",
                           "status                escalated (escalation_requested)"]
    assert "windDownSeconds       -" in verdict and "callsAfterEscalation  0" in verdict
    timeline = lines[lines.index("timeline (t: seconds since the turn's start)") + 1:]
    assert timeline[0] == "0.000  turn  turn_started"
    assert timeline[6] == "1.500  turn  mcp_call           tool=files.read answer=ok afterAsk=false"
    assert timeline[8] == "1.550  turn  ask_answered       tool=sharedos.escalate"
    assert timeline[3] == "1.000  mcp   connection.opened  connection=1"
    events = [line.split()[2] for line in timeline]
    assert events.index("ask_answered") < events.index("refused_after_ask") < events.index("cli_exited")
    assert len(timeline) == 16


def test_show_json_is_one_object_with_the_verdict_and_the_merged_timeline(tmp_path: Path) -> None:
    cell = hand_built_cell(tmp_path / "cell")
    proc = show(str(cell), "--json")
    assert proc.returncode == 0, proc.stderr
    (line,) = proc.stdout.splitlines()
    body = json.loads(line)
    assert body["verdict"]["grade"] == "pass" and body["verdict"]["windDownSeconds"] is None
    assert body["verdict"]["harness"] == "reference" and body["verdict"]["behaviour"] == "cooperative"
    ts = [m["t"] for m in body["timeline"]]
    assert ts == sorted(ts) and len(ts) == 16
    assert body["timeline"][0] == {"t": 0.0, "at": "1970-01-01T00:00:00.000Z", "source": "turn",
                                   "event": "turn_started"}


def test_show_a_long_value_stays_one_unpadded_line(tmp_path: Path) -> None:
    cell = hand_built_cell(tmp_path / "cell")
    long_tool = "a-tool-name-long-enough-to-cross-any-terminal-" * 10
    before = show(str(cell)).stdout.splitlines()
    with (cell / "timeline.jsonl").open("a") as fh:
        fh.write(json.dumps(entry("mcp_call", 2.5, tool=long_tool, answer="tool_unavailable", afterAsk=True)) + "\n")
    lines = show(str(cell)).stdout.splitlines()
    (found,) = [line for line in lines if long_tool in line]
    assert found == f"2.500  turn  mcp_call           tool={long_tool} answer=tool_unavailable afterAsk=true"
    assert [line for line in lines if long_tool not in line] == before, "no other line is padded to it"


def test_show_exits_2_naming_what_is_not_a_cell(tmp_path: Path) -> None:
    missing = tmp_path / "no-such-cell"
    proc = show(str(missing))
    assert proc.returncode == 2 and f"runner: {missing}: not a cell directory (does not exist)" in proc.stderr
    proc = show(str(tmp_path))
    assert proc.returncode == 2 and f"runner: {tmp_path}: not a cell directory (holds no result.json)" in proc.stderr
    proc = show(str(tmp_path), "--json")
    assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["exitCode"] == 2


def test_show_exits_2_naming_the_malformed_file_and_line(tmp_path: Path) -> None:
    cell = hand_built_cell(tmp_path / "cell")
    with (cell / "model-exchanges.jsonl").open("a") as fh:
        fh.write("{half a line\n")
    proc = show(str(cell))
    assert proc.returncode == 2
    assert f"runner: {cell / 'model-exchanges.jsonl'}: line 3: not JSON" in proc.stderr
    (cell / "model-exchanges.jsonl").unlink()
    (cell / "result.json").write_text('{"version": 1, "cell": 3}')
    proc = show(str(cell))
    assert proc.returncode == 2 and f"{cell / 'result.json'}: not a cell result" in proc.stderr
