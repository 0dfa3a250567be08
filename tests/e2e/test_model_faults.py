"""End to end: real vendor CLIs (Codex, Claude Code) in their pinned images, through ``runner exec
--json``, while the scripted model fails on purpose (``--model-fault``): an HTTP 500, a stall, a
stream cut short -- before the ask and after it. What the user gets must be what the CLI did: before
the ask the CLI's own outcome (failed with its own code, or cancelled by the deadline), never
``escalated``; after the ask ``escalated`` with the CLI's failure kept as ``harnessOutcome``. The
measured reactions are in ``runner/harnesses/codex`` and ``runner/harnesses/claude_code``; Copilot CLI
and Cline (``runner/harnesses/copilot``, ``runner/harnesses/cline``) are checked on one fault, a model
that keeps failing before the ask.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import docker
import pytest

from runner.sandbox.container import OWNER_LABEL
from tests.support import (
    RUNNER,
    assert_faulted_exchanges,
    conversation,
    exchanges,
    faulted_exec,
    meta,
    no_containers_left,
)

pytestmark = [pytest.mark.docker, pytest.mark.timeout(300)]

STALL_DEADLINE = "8"  # enough for either CLI to reach the ask under load; short enough to keep this file quick
DSH_STALL_DEADLINE = "25"
# how each CLI reports a model API that keeps failing (measured; see the harness packages)
FAILURE = {
    "codex": {"code": "harness_failed", "terminal": "turn.failed"},
    "claude-code": {"code": "api_error", "terminal": "result"},
}
CLIS = list(FAILURE)


def terminal_frame(report: dict[str, Any]) -> dict[str, Any]:
    """The CLI's last stdout frame, whole (the transcript tail cuts long lines)."""
    lines = Path(report["files"]["stdout"]).read_text(encoding="utf-8").splitlines()
    frame: dict[str, Any] = json.loads([line for line in lines if line.strip()][-1])
    return frame


def gone(engine: docker.DockerClient, report: dict[str, Any]) -> None:
    """The turn's container is removed, and no runner-owned container carries its id."""
    no_containers_left(engine, report)
    owned = engine.containers.list(all=True, sparse=True, filters={"label": f"{OWNER_LABEL}=runner"})
    assert report["containerId"] not in {c.id for c in owned}


# --- before the ask: the CLI's own outcome ----------------------------------------------------------


def cli_words(report: dict[str, Any], frame_type: str, field: str) -> str:
    """The message the CLI itself printed in its first frame of ``frame_type``."""
    lines = Path(report["files"]["stdout"]).read_text(encoding="utf-8").splitlines()
    frame = next(f for f in map(json.loads, filter(str.strip, lines)) if f["type"] == frame_type)
    for key in field.split("."):
        frame = frame[key]
    return str(frame)


# the columns that retry a failing model by themselves and then give up (measured: Copilot CLI 1.0.102
# retries 5 times in ~14 s, Cline 3.0.65 makes 6 attempts in ~65 s): (last frame, frame with the words)
GIVES_UP = {"copilot": ("result", "session.error", "data.message"), "cline": ("run_result", "run_result", "text")}


@pytest.mark.parametrize("harness", list(GIVES_UP))
def test_a_failing_model_before_the_ask_fails_the_turn_after_the_clis_own_retries(
    tmp_path: Path, engine: docker.DockerClient, harness: str
) -> None:
    report = faulted_exec(tmp_path, harness, "error@1")
    assert report["exitCode"] == 1 and report["deadlineHit"] is False
    assert report["status"] == "failed" and report["escalation"] is None
    assert report["reasonCode"] == "harness_failed" == report["error"]["code"]
    assert "escalationAsked" not in meta(report) and "harnessOutcome" not in meta(report)
    last, words_in, field = GIVES_UP[harness]
    assert terminal_frame(report)["type"] == last
    assert report["error"]["message"] == cli_words(report, words_in, field)  # the CLI's words, not runner's
    assert_faulted_exchanges(report, "error@1", "complete")
    assert len(conversation(exchanges(report))) > 1, "the CLI retried the failing request by itself"
    gone(engine, report)



@pytest.mark.parametrize("harness", CLIS)
@pytest.mark.parametrize(("kind", "ended"), [("error", "complete"), ("early-close", "closed_early")])
def test_a_failing_model_before_the_ask_fails_the_turn_as_the_cli_says(
    tmp_path: Path, engine: docker.DockerClient, harness: str, kind: str, ended: str
) -> None:
    report = faulted_exec(tmp_path, harness, f"{kind}@1")
    # the CLI gave up by itself, with its own failure, and the turn says exactly that
    assert report["exitCode"] == 1 and report["deadlineHit"] is False
    assert report["status"] == "failed" and report["escalation"] is None
    assert report["reasonCode"] == FAILURE[harness]["code"] == report["error"]["code"]
    assert "escalationAsked" not in meta(report) and "harnessOutcome" not in meta(report)
    frame = terminal_frame(report)
    assert frame["type"] == FAILURE[harness]["terminal"]
    cli_message = frame["error"]["message"] if harness == "codex" else frame["result"]
    assert report["error"]["message"] == cli_message  # the CLI's words, not runner's
    assert_faulted_exchanges(report, f"{kind}@1", ended)
    gone(engine, report)


@pytest.mark.parametrize("harness", CLIS)
def test_a_stalled_model_before_the_ask_is_cancelled_by_the_deadline(
    tmp_path: Path, engine: docker.DockerClient, harness: str
) -> None:
    report = faulted_exec(tmp_path, harness, "stall", "--deadline", STALL_DEADLINE)
    assert report["deadlineHit"] is True and report["exitCode"] == 143  # SIGTERM at the deadline
    assert report["status"] == "cancelled" and report["reasonCode"] == "turn_cancelled"
    assert report["escalation"] is None and "escalationAsked" not in meta(report)
    assert report["elapsedSeconds"] < float(STALL_DEADLINE) + 10
    assert_faulted_exchanges(report, "stall@1")
    assert conversation(exchanges(report))[0]["response"]["stalled"] is True
    gone(engine, report)


# --- after the ask: escalated, the CLI's failure kept -------------------------------------------------


@pytest.mark.parametrize("harness", CLIS)
@pytest.mark.parametrize(("kind", "ended"), [("error", "complete"), ("early-close", "closed_early")])
def test_a_failing_model_after_the_ask_keeps_the_turn_escalated(
    tmp_path: Path, engine: docker.DockerClient, harness: str, kind: str, ended: str
) -> None:
    report = faulted_exec(tmp_path, harness, f"{kind}@after-ask")
    assert report["exitCode"] == 1 and report["deadlineHit"] is False
    assert report["status"] == "escalated" and report["reasonCode"] == "escalation_requested"
    assert report["escalation"]["reason"]
    m = meta(report)
    assert m["harnessOutcome"] == "fail" and m["harnessErrorCode"] == FAILURE[harness]["code"]
    assert m["callsAfterEscalation"] == 0
    assert terminal_frame(report)["type"] == FAILURE[harness]["terminal"]
    assert_faulted_exchanges(report, f"{kind}@after-ask", ended)
    # the fault began exactly at the first conversation request after the ask (its step is past the ask's call)
    talk = conversation(exchanges(report))
    first = next(r for r in talk if "fault" in r)
    assert first["step"] == 2 and [r["step"] for r in talk[: talk.index(first)]] == [0, 1]
    gone(engine, report)


@pytest.mark.parametrize("harness", CLIS)
def test_a_stalled_model_after_the_ask_is_escalated_at_the_deadline(
    tmp_path: Path, engine: docker.DockerClient, harness: str
) -> None:
    report = faulted_exec(tmp_path, harness, "stall@after-ask", "--deadline", STALL_DEADLINE)
    assert report["deadlineHit"] is True and report["exitCode"] == 143
    assert report["status"] == "escalated" and report["reasonCode"] == "escalation_requested"
    m = meta(report)
    assert m["harnessOutcome"] == "fail" and m["harnessErrorCode"] == "harness_wind_down_timeout"
    assert_faulted_exchanges(report, "stall@after-ask")
    gone(engine, report)


# --- the fault travels with the cell ----------------------------------------------------------------


def test_runner_repro_replays_the_fault(tmp_path: Path, engine: docker.DockerClient) -> None:
    report = faulted_exec(tmp_path, "codex", "error@1")
    cell_dir = Path(report["files"]["record"]).parent
    result = json.loads((cell_dir / "result.json").read_text())
    assert result["pins"]["modelFault"] == "error@1" and result["model"]["fault"] == "error@1"
    assert "--model-fault error@1" in result["repro"] and "--model-fault error@1" in (cell_dir / "repro.sh").read_text()
    proc = subprocess.run([RUNNER, "repro", str(cell_dir), "--json", "--out", str(tmp_path / "again")],
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stderr
    again = json.loads(proc.stdout.strip().splitlines()[-1])
    assert again["recorded"] == again["reproduced"] and again["unmatchedPins"] == []
    rerun = json.loads((tmp_path / "again" / "result.json").read_text())
    assert rerun["turn"]["status"] == "failed" and rerun["pins"]["modelFault"] == "error@1"
    gone(engine, report)


# --- dsh: its outcome is in its session log, and SIGTERM exits 0 -------------------------------------


def test_deepseek_failing_model_before_the_ask_fails_with_its_own_code(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    """dsh retries a 500 five times (0.5-8 s apart), exits 1 and writes turn/end with code SERVER and the
    server's message: the turn says exactly that (runner/harnesses/deepseek)."""
    report = faulted_exec(tmp_path, "deepseek", "error@1")
    assert report["exitCode"] == 1 and report["deadlineHit"] is False
    assert report["status"] == "failed" and report["escalation"] is None
    assert report["reasonCode"] == "SERVER" == report["error"]["code"]
    assert "injected fault error@1" in report["error"]["message"]
    assert Path(report["files"]["stderr"]).read_text().startswith("dsh: SERVER: ")
    # dsh sends its title request about 1 ms after its first conversation request: either may reach the
    # endpoint first, and neither order changes what is faulted (runner.model.faults)
    logged = exchanges(report)
    talk = conversation(logged)
    assert len(talk) == 6 and all("fault" in r for r in talk)  # the request and its five retries, all faulted
    assert {r["step"] for r in talk} == {0}  # retries of the first request: the turn never got further
    assert_faulted_exchanges(report, "error@1", "complete")
    titles = [r for r in logged if r.get("decision", {}).get("reply") == "side"]
    assert all(r["response"]["status"] == 200 and "fault" not in r for r in titles)
    gone(engine, report)


def test_deepseek_stopped_by_sigterm_after_the_ask_exits_0_and_is_still_read_right(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    # dsh boots for 3-5 s before its first request: give it time to reach the ask under load
    report = faulted_exec(tmp_path, "deepseek", "stall@after-ask", "--deadline", DSH_STALL_DEADLINE)
    assert report["deadlineHit"] is True and report["exitCode"] == 0  # dsh exits 0 on SIGTERM
    assert report["status"] == "escalated" and report["reasonCode"] == "escalation_requested"
    m = meta(report)
    assert m["harnessOutcome"] == "fail" and m["harnessErrorCode"] == "harness_wind_down_timeout"
    from runner.harnesses.deepseek.session import read_session

    # and the session log alone says the same: no turn/end, so exit 0 is not a completed turn
    steps = read_session(Path(report["files"]["session"]), 0)
    assert [type(s).__name__ for s in steps][-1] == "Failed"
    gone(engine, report)
