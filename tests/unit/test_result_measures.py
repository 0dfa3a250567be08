"""What a result of version 5 carries besides its grade (issue 31): usage per turn, attempt and cell, why an attempt
failed, and the tool policy measured from the CLI's requests; and the turn's reading of its own exchange log."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.conformance.failures import TurnEvidence, classify
from runner.core.usage import Usage, UsageTotals
from runner.matrix.artifact import load_result, write_cell
from runner.matrix.result import (
    MEASURED_VERSION,
    CellAttempt,
    CellResult,
    FailureRecord,
    ResultError,
    SystemRecord,
    ToolPolicyRecord,
    TurnSummary,
    UsageRecord,
    summed_usage,
)
from runner.model.tool_policy import measure_policy
from runner.turn.measure import exchanges_in, policy_of
from tests.unit.test_matrix_report import result_json

CELL = "escalation.baseline.model"
TOTALS = UsageTotals(Usage(1200, 1000, 80, 16), Usage(300, 0, 20, 0), answers=4, unreported=1)


def generation(seq: int, tools: list[str], ended: str = "complete") -> dict[str, object]:
    body = {"model": "m", "messages": [], "tools": [{"type": "function", "function": {"name": n}} for n in tools]}
    return {"seq": seq, "dialect": "openai-chat", "side_request": not any(n.startswith("sharedos") for n in tools),
            "request": {"method": "POST", "path": "/v1/chat/completions", "body": body}, "ended": ended}


def measured(**extra: object) -> CellResult:
    return CellResult.read({**result_json(CELL, "fail"), "version": MEASURED_VERSION, **extra})


def test_usage_is_written_with_its_split_and_read_back_the_same() -> None:
    record = UsageRecord.of(TOTALS)
    body = record.to_dict()
    assert body == {"total": {"input": 1500, "cachedInput": 1000, "output": 100, "reasoning": 16},
                    "conversation": {"input": 1200, "cachedInput": 1000, "output": 80, "reasoning": 16},
                    "side": {"input": 300, "cachedInput": 0, "output": 20, "reasoning": 0},
                    "answers": 4, "unreported": 1}
    assert UsageRecord.model_validate(body).totals() == TOTALS
    assert body == TOTALS.to_json()  # the same shape the model endpoint's totals are written in
    with pytest.raises(ValueError, match="usage total is not conversation"):
        UsageRecord.model_validate({**body, "total": {**body["total"], "input": 1}})  # type: ignore[dict-item]
    assert summed_usage([None, record, record]) == UsageRecord.of(TOTALS + TOTALS) and summed_usage([None]) is None


def test_a_version_5_result_carries_usage_failure_and_tool_policy_and_reads_back(tmp_path: Path) -> None:
    failure = classify(TurnEvidence(mcp_sessions=1, model_requests=3, tool_requests=0, grade="fail"))
    assert failure is not None
    policy, _ = measure_policy([generation(1, ["sharedos__read", "shell"])], extra_evidence=["image:sha256:x"])
    turn = TurnSummary(status="failed", usage=UsageRecord.of(TOTALS))
    result = measured().model_copy(update={
        "failure": FailureRecord.of(failure), "turns": (turn,), "usage": summed_usage([turn.usage]),
        "system": SystemRecord(tool_policy=ToolPolicyRecord.of(policy))})
    write_cell(tmp_path, result)
    body = json.loads((tmp_path / "result.json").read_text())
    assert body["version"] == 5
    assert body["failure"] == {"cause": "cli", "kind": "tools_never_offered", "evidence": failure.evidence,
                               "retried": False, "counts": True}
    assert body["usage"]["total"]["input"] == 1500 and body["turn"]["usage"]["side"]["output"] == 20
    assert body["system"]["toolPolicy"] == {
        "version": "2", "mode": "mixed", "inventory": "complete", "managedMcp": ["sharedos"],
        "harnessLocal": ["shell"], "externalDirect": [], "evidence": ["image:sha256:x", "model-exchanges.jsonl#seq=1"]}
    assert list(body).index("failure") == list(body).index("grade") + 1
    read = load_result(tmp_path / "result.json")
    assert read == result and read.why == result.failure and read.tool_policy is not None
    assert read.tool_policy.policy() == policy


def test_a_result_before_version_5_holds_no_measures_and_its_failure_is_its_infrastructure_errors() -> None:
    with pytest.raises(ResultError, match="version 4 holds no usage, failure or system; version 5 does"):
        CellResult.read({**result_json(CELL, "pass"), "version": 4, "usage": UsageRecord.of(TOTALS).to_dict()})
    old = CellResult.read({**result_json(CELL, "pass"), "version": 4,
                           "infrastructureError": {"kind": "mcp_not_connected", "detail": "never opened"}})
    assert old.why is not None and (old.why.cause, old.why.kind, old.why.retried) == ("cli", "mcp_never_opened", False)
    assert CellResult.read({**result_json(CELL, "fail"), "version": 4}).why is None  # never told apart


def test_a_failure_of_an_unknown_kind_and_a_policy_upstream_refuses_are_named() -> None:
    with pytest.raises(ResultError, match=r"field 'failure\.kind'.*unknown failure kind 'gremlins'"):
        measured(failure={"cause": "cli", "kind": "gremlins", "evidence": "", "retried": False, "counts": True})
    mixed_without_tools = {"version": "2", "mode": "mixed", "inventory": "complete", "managedMcp": ["sharedos"],
                           "evidence": ["x"]}
    with pytest.raises(ResultError, match="a mixed policy names at least one local tool"):
        measured(system={"toolPolicy": mixed_without_tools})


def test_an_attempt_says_why_it_failed_on_its_line() -> None:
    failure = FailureRecord(cause="engine", kind="container_not_started", evidence="no room", retried=True,
                            counts=False)
    attempt = CellAttempt(attempt=1, status="infrastructure_error", failure=failure, files="attempt-1")
    assert attempt.summary() == ("attempt 1: infrastructure error: engine (container_not_started): no room; its files "
                                 "in attempt-1/")


def test_the_turn_reads_its_exchange_log_bounded_and_skips_what_is_not_an_entry(tmp_path: Path) -> None:
    log = tmp_path / "model-exchanges.jsonl"
    lines = [json.dumps(generation(1, ["sharedos__read"])), "{not json", "[1, 2]",
             json.dumps(generation(2, ["sharedos__read", "web_fetch"], ended="client_disconnected"))]
    log.write_text("\n".join(lines) + "\n")
    entries = list(exchanges_in(log))
    assert [e["seq"] for e in entries] == [1, 2]
    assert list(exchanges_in(tmp_path / "missing.jsonl")) == []
    (tmp_path / "link.jsonl").symlink_to(log)
    assert list(exchanges_in(tmp_path / "link.jsonl")) == []  # never through a link
    assert list(exchanges_in(log, limit=10)) == []  # past the bound: nothing parses
    reading = exchanges_in(log)  # one entry at a time, none held by the reader once handed on
    assert next(reading)["seq"] == 1 and next(reading)["seq"] == 2 and next(reading, None) is None
    from runner.model.tool_policy import offered_in_log

    policy, inventory = policy_of(offered_in_log(entries), "sharedos", ["cli:1.0"])
    assert (policy.mode, policy.harness_local, inventory.requests) == ("mixed", ("web_fetch",), 2)
    assert policy.evidence[0] == "cli:1.0"


def test_show_says_why_the_cell_failed_what_it_cost_and_its_tool_policy(tmp_path: Path) -> None:
    import subprocess

    from tests.support import RUNNER

    failure = classify(TurnEvidence(mcp_sessions=1, model_requests=3, tool_requests=0, grade="fail"))
    assert failure is not None
    policy, _ = measure_policy([generation(1, ["sharedos__read", "shell"])], extra_evidence=["image:sha256:x"])
    attempt = CellAttempt(attempt=1, status="infrastructure_error", failure=FailureRecord(
        cause="engine", kind="container_not_started", evidence="no room", retried=True, counts=False),
        files="attempt-1")
    result = measured().model_copy(update={
        "failure": FailureRecord.of(failure), "usage": UsageRecord.of(TOTALS),
        "system": SystemRecord(tool_policy=ToolPolicyRecord.of(policy)),
        "cell_attempts": (attempt, CellAttempt(attempt=2, status="fail"))})
    write_cell(tmp_path, result)
    text = subprocess.run([RUNNER, "show", str(tmp_path)], capture_output=True, text=True, timeout=60, check=True)
    lines = text.stdout.splitlines()
    assert f"failure               cli (tools_never_offered, not retried): {failure.evidence}" in lines
    assert ("tokens                in 1,500 (cached 1,000) · out 100 (reasoning 16) · side requests 320 (20%) · 1 "
            "of 4 answers reported none (a lower bound)") in lines
    assert "toolPolicy            mixed (inventory complete); the CLI's own: shell" in lines
    assert ("attempt 1             attempt 1: infrastructure error: engine (container_not_started): no room; its "
            "files in attempt-1/") in lines
    shown = subprocess.run([RUNNER, "show", str(tmp_path), "--json"], capture_output=True, text=True, timeout=60,
                           check=True)
    verdict = json.loads(shown.stdout)["verdict"]
    assert verdict["failure"]["kind"] == "tools_never_offered" and verdict["usage"] == TOTALS.to_json()
    assert verdict["toolPolicy"]["mode"] == "mixed" and len(verdict["attempts"]) == 2
