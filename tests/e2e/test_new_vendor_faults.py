"""End to end: Kilo Code, Kimi Code and Factory Droid in their pinned images while the scripted model fails its
first request (``--model-fault error@1``, an HTTP 500 with the Chat Completions error body) and every one after it.
Before the ask the turn is the CLI's own outcome, never ``escalated``: Kilo prints opencode's ``error`` event and
exits 1 (``harness_failed``, in the CLI's words); Kimi prints no terminal frame and exits 1 after its one attempt
(``harness_exited_without_outcome``); Droid retries with a growing backoff (no retry setting found) until the
deadline stops it (``cancelled``). Measured: ``runner/harnesses/kilo``, ``kimi``, ``droid``.
"""

from __future__ import annotations

from pathlib import Path

import docker
import pytest

from tests.support import assert_faulted_exchanges, exchanges, faulted_exec, meta, no_containers_left, runner_exec

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

FAILURE = {"kilo": "harness_failed", "kimi": "harness_exited_without_outcome"}
# Kilo retries a failing request 5 times with a growing backoff (~70 s) after a slow start: 134-181 s measured
# under load, so its deadline here is generous (KILO_SESSION_RETRY_LIMIT=0 did not change the retries)
FAULT_DEADLINE = {"kilo": "400", "kimi": "120"}
DROID_DEADLINE = "40"  # room for Droid's first retries (6 s, then 14 s apart, measured) under load


@pytest.mark.parametrize("harness", list(FAILURE))
def test_a_failing_model_before_the_ask_fails_the_turn_as_the_cli_says(
    tmp_path: Path, engine: docker.DockerClient, harness: str
) -> None:
    report = faulted_exec(tmp_path, harness, "error@1", "--deadline", FAULT_DEADLINE[harness])
    assert report["exitCode"] == 1 and report["deadlineHit"] is False
    assert report["status"] == "failed" and report["escalation"] is None
    assert report["reasonCode"] == FAILURE[harness] == report["error"]["code"]
    assert "escalationAsked" not in meta(report) and "harnessOutcome" not in meta(report)
    if harness == "kilo":  # the CLI's own words: opencode's error event carries the API's message
        assert "injected fault error@1" in report["error"]["message"]
    assert_faulted_exchanges(report, "error@1")
    no_containers_left(engine, report)


def test_droid_retries_a_failing_model_until_the_deadline_cancels_the_turn(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    report = runner_exec(tmp_path, "--harness", "droid", "--case", "escalation", "--model-fault", "error@1",
                         "--deadline", DROID_DEADLINE)
    assert report["infrastructureError"] is None, report["infrastructureError"]
    assert report["deadlineHit"] is True
    assert report["status"] == "cancelled" and report["reasonCode"] == "turn_cancelled"
    assert report["escalation"] is None and "escalationAsked" not in meta(report)
    faulted = [r for r in exchanges(report) if "fault" in r]
    assert len(faulted) >= 2, "Droid retried the failing request"
    assert all(r["fault"]["spec"] == "error@1" for r in faulted)
    no_containers_left(engine, report)
