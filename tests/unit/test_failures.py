"""A cause for every failure: every kind of the vocabulary produced from the evidence a turn leaves, the order the
classifier reads it in, and the rules each kind carries."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import runner.engine.connection
import runner.images.archive
import runner.images.errors
import runner.images.lock
import runner.images.registry
import runner.sandbox.container
import runner.sandbox.probe
from runner.conformance.failures import (
    INFRASTRUCTURE_KINDS,
    KINDS,
    MCP_NOT_CONNECTED,
    Cause,
    Failure,
    TurnEvidence,
    classify,
    toolless,
)
from runner.harnesses.stream import MALFORMED_OUTPUT

ROOT = Path(__file__).resolve().parents[2]
RAN = {"mcp_sessions": 1, "model_requests": 3, "tool_requests": 3, "exit_code": 0}  # a turn that reached its tools

CASES: dict[str, TurnEvidence] = {
    "engine_unavailable": TurnEvidence(infrastructure_kind="EngineUnavailable", infrastructure_detail="no socket"),
    "engine_call_failed": TurnEvidence(infrastructure_kind="engine_failed", infrastructure_detail="wait: 500"),
    "container_not_started": TurnEvidence(infrastructure_kind="container_not_started",
                                          infrastructure_detail="OCI runtime create failed"),
    "container_removed": TurnEvidence(infrastructure_kind="ContainerRemoved",
                                      infrastructure_detail="the container was removed while its turn ran"),
    "wiring_failed": TurnEvidence(infrastructure_kind="MountsNotVisible", infrastructure_detail="the mount is empty"),
    "image_build_failed": TurnEvidence(infrastructure_kind="ImageBuildError", infrastructure_detail="npm ERR!"),
    "image_unavailable": TurnEvidence(infrastructure_kind="ImageMissing", infrastructure_detail="runner/x:abc"),
    "oom_killed": TurnEvidence(**RAN | {"exit_code": 137}, oom_killed=True, grade="fail"),
    "pids_exhausted": TurnEvidence(**RAN | {"exit_code": 1}, pids_exhausted=True, grade="fail"),
    "disk_budget_exceeded": TurnEvidence(infrastructure_kind="disk_budget_exceeded",
                                         infrastructure_detail="the turn dir passed its budget of 64 MiB"),
    "vendor_rate_limited": TurnEvidence(**RAN | {"exit_code": 1}, model_mode="live", last_model_status=429,
                                        model_error_statuses={429: 3}, grade="fail"),
    "vendor_error": TurnEvidence(**RAN | {"exit_code": 1}, model_mode="live", last_model_status=529,
                                 model_error_statuses={529: 1}, grade="not_exercised"),
    "vendor_unreachable": TurnEvidence(**RAN | {"exit_code": 1}, model_mode="live", last_model_status=502,
                                       upstream_errors=2, grade="fail"),
    "vendor_timeout": TurnEvidence(**RAN | {"exit_code": 143}, model_mode="live", deadline_hit=True,
                                   model_pending_at_end=True, last_model_status=200, grade="fail"),
    "vendor_refused": TurnEvidence(**RAN | {"exit_code": 1}, model_mode="live", last_model_status=401,
                                   grade="fail"),
    "scripted_fault": TurnEvidence(**RAN | {"exit_code": 1}, model_mode="scripted", model_faults=1,
                                   last_model_status=500, grade="fail"),
    "replay_diverged": TurnEvidence(infrastructure_kind="replay_diverged", infrastructure_detail="step 2: the tools"),
    "mcp_never_opened": TurnEvidence(mcp_sessions=0, model_requests=2, tool_requests=0, exit_code=0,
                                     grade="not_exercised"),
    "mcp_startup_failed": TurnEvidence(infrastructure_kind=MCP_NOT_CONNECTED, mcp_sessions=1,
                                       infrastructure_detail="the CLI reported its MCP server not connected"),
    "tools_never_offered": TurnEvidence(mcp_sessions=1, model_requests=2, tool_requests=0, exit_code=0,
                                        grade="not_exercised"),
    "malformed_output": TurnEvidence(**RAN | {"exit_code": 0}, malformed_frames=2,
                                     harness_error_code=MALFORMED_OUTPUT, grade="fail"),
    "crashed": TurnEvidence(**RAN | {"exit_code": 3}, harness_error_code="harness_exited_without_outcome",
                            grade="fail"),
    "reported_failure": TurnEvidence(**RAN | {"exit_code": 1}, harness_error_code="harness_failed", grade="fail"),
    "conduct": TurnEvidence(**RAN, grade="fail"),
    "deadline": TurnEvidence(**RAN | {"exit_code": 143}, deadline_hit=True,
                             harness_error_code="harness_wind_down_timeout", grade="not_exercised"),
    "runner_error": TurnEvidence(infrastructure_kind="KeyError", infrastructure_detail="'turn'"),
}


def test_every_kind_of_the_vocabulary_has_a_case_here() -> None:
    assert set(CASES) == set(KINDS)


@pytest.mark.parametrize("kind", sorted(CASES))
def test_each_kind_is_produced_from_its_evidence(kind: str) -> None:
    found = classify(CASES[kind])
    assert found is not None and found.kind.name == kind, found
    assert found.evidence and "\n" not in found.evidence
    assert found.line.startswith(f"{found.cause.value} ({kind}): ")
    assert Failure.from_json(found.to_json()) == found


def test_the_rules_an_infrastructure_cause_is_retried_and_the_clis_conduct_never() -> None:
    for kind in KINDS.values():
        if kind.cause in (Cause.CLI, Cause.DEADLINE):
            assert not kind.retried and kind.counts, kind
            assert not kind.cause.infrastructure
        if kind.retried:
            assert kind.cause.infrastructure and not kind.counts, kind
        if kind.cause.infrastructure and kind.name != "scripted_fault":
            assert not kind.counts, kind  # the infrastructure's ending says nothing about the CLI
    assert KINDS["scripted_fault"].counts and not KINDS["scripted_fault"].retried  # the row asked for it
    assert [k.name for k in KINDS.values() if k.cause is Cause.RUNNER] == ["runner_error"]


def test_the_silent_toolless_cli_is_named_even_when_the_judge_passed_it() -> None:
    never = TurnEvidence(mcp_sessions=0, model_requests=1, tool_requests=0, exit_code=0, grade="pass")
    hid = TurnEvidence(mcp_sessions=2, model_requests=4, tool_requests=0, exit_code=0, grade="pass")
    assert (found := classify(never)) is not None and found.kind.name == "mcp_never_opened"
    assert (found := classify(hid)) is not None and found.kind.name == "tools_never_offered"
    assert found.evidence == ("the CLI opened 2 MCP sessions and made 4 model requests, none of which offered its "
                              "model the catalogue's tools")
    # it beats the deadline it ran into: the root cause, not the symptom
    stuck = TurnEvidence(mcp_sessions=1, model_requests=1, tool_requests=0, deadline_hit=True, grade="fail")
    assert (found := classify(stuck)) is not None and found.kind.name == "tools_never_offered"


def test_what_the_evidence_cannot_say_is_not_called_toolless() -> None:
    assert toolless(TurnEvidence(**RAN)) is None
    assert toolless(TurnEvidence(mcp_sessions=None, model_requests=1, tool_requests=0)) is None  # no MCP count
    assert toolless(TurnEvidence(mcp_sessions=1, model_requests=None)) is None  # a column with no model endpoint
    assert toolless(TurnEvidence(mcp_sessions=1, model_requests=0, tool_requests=0)) is None  # it never asked
    assert toolless(TurnEvidence(mcp_sessions=0, mcp_required=False, model_requests=1)) is None
    # stopped at the deadline before it asked its model anything: the deadline, not the MCP session
    slow = TurnEvidence(mcp_sessions=0, model_requests=0, deadline_hit=True, exit_code=143, grade="not_exercised")
    assert toolless(slow) is None and (found := classify(slow)) is not None and found.kind.name == "deadline"


def test_an_attempt_that_did_not_fail_has_no_cause() -> None:
    assert classify(TurnEvidence(**RAN, grade="pass")) is None
    assert classify(TurnEvidence(**RAN, grade="not_applicable")) is None
    assert classify(TurnEvidence(grade="not_implemented")) is None
    # a pass through a fault the CLI recovered from, or past a deadline it hit after asking (hang-after-ask)
    assert classify(TurnEvidence(**RAN, model_faults=1, model_mode="scripted", grade="pass")) is None
    assert classify(TurnEvidence(**RAN, deadline_hit=True, grade="pass")) is None


def test_mcp_not_connected_is_told_apart_by_the_session_count() -> None:
    never = TurnEvidence(infrastructure_kind=MCP_NOT_CONNECTED, mcp_sessions=0, model_requests=0,
                         infrastructure_detail="the CLI never opened an MCP session on the mounted socket")
    assert (found := classify(never)) is not None and found.kind.name == "mcp_never_opened"
    assert not found.retried  # today a retried infrastructure error: a CLI cannot buy itself another try
    unknown = TurnEvidence(infrastructure_kind=MCP_NOT_CONNECTED, infrastructure_detail="never reported")
    assert (found := classify(unknown)) is not None and found.kind.name == "mcp_never_opened"
    assert found.evidence == "never reported"


def test_the_order_infrastructure_then_box_then_model_api_then_deadline_then_the_cli() -> None:
    evidence: dict[str, object] = dict(
        RAN | {"exit_code": 137}, infrastructure_kind="engine_failed", model_mode="live", last_model_status=429,
        deadline_hit=True, harness_error_code="harness_exited_without_outcome", grade="fail")
    steps = [("engine_call_failed", {}), ("oom_killed", {"infrastructure_kind": None, "oom_killed": True}),
             ("vendor_rate_limited", {"oom_killed": None}), ("deadline", {"last_model_status": 200}),
             ("crashed", {"deadline_hit": False})]
    for expected, change in steps:
        evidence.update(change)
        found = classify(TurnEvidence(**evidence))  # type: ignore[arg-type]
        assert found is not None and found.kind.name == expected, (expected, found)


def test_an_oom_kill_is_named_even_when_the_engine_failed_after_it() -> None:
    found = classify(TurnEvidence(infrastructure_kind="engine_failed", infrastructure_detail="wait failed",
                                  oom_killed=True, exit_code=137))
    assert found is not None and found.kind.name == "oom_killed" and "wait failed" in found.evidence


def test_a_cli_killed_by_a_signal_says_so_and_that_an_oom_kill_was_not_ruled_out() -> None:
    found = classify(TurnEvidence(**RAN | {"exit_code": 137}, grade="fail"))
    assert found is not None and found.kind.name == "crashed"
    assert found.evidence == ("the CLI was killed by signal 9 (exit code 137); OOM not ruled out (the engine's "
                              "OOMKilled was not read)")
    checked = classify(TurnEvidence(**RAN | {"exit_code": 137}, oom_killed=False, grade="fail"))
    assert checked is not None and checked.evidence == "the CLI was killed by signal 9 (exit code 137)"


def test_a_vendor_error_the_cli_recovered_from_is_not_the_cause() -> None:
    found = classify(TurnEvidence(**RAN, model_mode="live", last_model_status=200, model_error_statuses={429: 2},
                                  grade="fail"))
    assert found is not None and found.kind.name == "conduct"
    scripted = classify(TurnEvidence(**RAN, model_mode="scripted", last_model_status=500, grade="fail"))
    assert scripted is not None and scripted.kind.name == "conduct"  # a 500 in scripted mode is only a fault's


def test_every_infrastructure_kind_runner_writes_has_its_cause() -> None:
    """The kinds ``runner.turn.settle`` writes, and every engine error class runner raises, are in the map; an
    exception class it does not know is runner's own error."""
    settle = (ROOT / "runner" / "turn" / "settle.py").read_text(encoding="utf-8")
    written = set(re.findall(r'"kind": "([a-z_]+)"', settle))
    assert written and written <= set(INFRASTRUCTURE_KINDS) | {MCP_NOT_CONNECTED}, written
    engine = runner.engine.connection.EngineError
    modules = (runner.engine.connection, runner.sandbox.container, runner.sandbox.probe, runner.images.errors,
               runner.images.lock, runner.images.archive, runner.images.registry)
    raised = {name for module in modules for name, value in vars(module).items()
              if isinstance(value, type) and issubclass(value, Exception)
              and (issubclass(value, engine) or name == "RegistryError")}
    assert raised and raised <= set(INFRASTRUCTURE_KINDS), raised - set(INFRASTRUCTURE_KINDS)
    assert set(INFRASTRUCTURE_KINDS.values()) <= set(KINDS)


@pytest.mark.parametrize(("infrastructure", "detail", "evidence"), [
    # the settle kind is the failure's own kind: said once, by the line's "(kind)"
    ("container_not_started", "OCI runtime create failed", "OCI runtime create failed"),
    # a detail that already names its kind, at its start or after runner's own words
    ("ContainerStartError", "ContainerStartError: no room", "ContainerStartError: no room"),
    ("EngineError", "the build said EngineError: 500", "the build said EngineError: 500"),
    ("KeyError", "KeyError 'turn' while reading", "KeyError 'turn' while reading"),
    # a kind that says more than the failure's kind (the exception class) leads the evidence, once
    ("engine_failed", "wait: 500", "engine_failed: wait: 500"),
    ("KeyError", "'turn'", "KeyError: 'turn'"),
])
def test_an_infrastructure_kind_is_said_once_in_the_evidence(infrastructure: str, detail: str, evidence: str) -> None:
    found = classify(TurnEvidence(infrastructure_kind=infrastructure, infrastructure_detail=detail))
    assert found is not None and found.evidence == evidence
    assert found.line.count(found.kind.name) == 1 + evidence.count(found.kind.name)
    assert f"{found.kind.name}: {found.kind.name}" not in found.line


def test_a_container_removed_under_its_turn_is_named_so_and_retried() -> None:
    """runner.turn.settle names the removal (``Drive.container_removed``) apart from an engine call that kept
    failing: the vocabulary's own kind, not engine_call_failed."""
    found = classify(TurnEvidence(infrastructure_kind="container_removed", exit_code=137,
                                  infrastructure_detail="container abc was removed from the engine while its turn ran"))
    assert found is not None and (found.kind.name, found.cause, found.retried) == ("container_removed", Cause.ENGINE,
                                                                                  True)
    assert found.evidence == "container abc was removed from the engine while its turn ran"
