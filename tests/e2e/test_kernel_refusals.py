"""End to end: each refusal the kernel parts of issue 19 make reaches a real vendor CLI in band, as a tool result,
and the turn ends as its row expects. The scripted model makes the calls the row declares; the real CLI, installed
from its registry into its pinned image, carries them over MCP through the mounted socket. No fake CLI, engine or
SDK. Two vendor columns (Codex and Claude Code), as the issue asks; a row refused at admission starts no container
on any column.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import docker
import pytest

from runner.images import ImageSettings, ensure_image
from tests.support import no_containers_left, record_of, runner_exec

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

VENDORS = ["codex", "claude-code"]

# case -> (the tool whose refusal is the point, its status and code in band, the turn's status and reason code)
REFUSALS: dict[str, tuple[str, str, str, str, str | None]] = {
    "host-policy-denied": ("files.read", "denied", "host_policy_denied", "succeeded", None),
    "usage-store-unavailable": ("files.append", "denied", "usage_store_unavailable", "succeeded", None),
    "over-broad-delegation": ("files.replace", "denied", "delegation_chain_invalid", "succeeded", None),
    "catalogue-moved-mid-turn": ("notion.search", "denied", "no_matching_grant", "succeeded", None),
    "route-lease-revoked": ("messages.request", "failed", "message_request_not_accepted", "succeeded", None),
    "audit-unavailable": ("files.replace", "failed", "audit_unavailable", "failed", "audit_unavailable"),
    "turn-draining": ("files.replace", "denied", "turn_draining", "cancelled", "turn_cancelled"),
    "revoked-mid-turn": ("files.read", "denied", "no_matching_grant", "succeeded", None),  # on turn 2
}


def answered(report: dict[str, Any]) -> list[dict[str, Any]]:
    """What the MCP server answered each ``tools/call`` with: a tool result (status, code), never a JSON-RPC error."""
    events = [json.loads(line) for line in Path(report["files"]["mcpEvents"]).read_text().splitlines()]
    return [e for e in events if e["event"] == "tool.called"]


@pytest.fixture(scope="module", params=VENDORS)
def vendor(request: pytest.FixtureRequest, engine: docker.DockerClient, image_settings: ImageSettings) -> str:
    harness: str = request.param
    ensure_image(engine, harness, image_settings)
    return harness


@pytest.mark.parametrize("case", list(REFUSALS))
def test_the_refusal_arrives_in_band_and_the_turn_ends_as_the_row_expects(
    tmp_path: Path, engine: docker.DockerClient, vendor: str, case: str
) -> None:
    tool, status, code, turn_status, turn_code = REFUSALS[case]
    report = runner_exec(tmp_path, "--harness", vendor, "--case", case, "--model", "scripted")
    assert report["infrastructureError"] is None
    tail = report["outcome"]["metadata"].get("transcriptTail")
    assert (report["status"], report["reasonCode"]) == (turn_status, turn_code), tail
    calls = answered(report)
    assert {"tool": tool, "status": status, "code": code}.items() <= next(
        (c for c in calls if c["tool"] == tool and c["code"] == code), {}
    ).items(), calls
    assert all(c["status"] != "error" for c in calls)  # every answer was a tool result
    assert report["grade"]["status"] == "pass", report["grade"]["evidence"]
    if case == "revoked-mid-turn":
        assert report["grade"]["turns"] == 2 and report["executionId"].endswith(".turn-2")
    if case == "route-lease-revoked":
        assert report["grade"]["causes"] == ["route_lease_revoked"]
        ops = record_of(report)["execution"]["operations"]
        assert any(o.get("cause") == "route_lease_revoked" for o in ops)
    no_containers_left(engine, report)


def test_a_turn_refused_at_admission_starts_no_container(tmp_path: Path, engine: docker.DockerClient,
                                                          vendor: str) -> None:
    cell = f"authority-unavailable.outage-at-turn-boundary.{vendor}"
    since = int(time.time()) - 1
    report = runner_exec(tmp_path, "--harness", vendor, "--case", "authority-unavailable", "--model", "scripted")
    until = int(time.time()) + 1
    assert report["grade"]["status"] == "pass", report["grade"]["evidence"]
    assert "before the runtime was started" in report["grade"]["evidence"]
    assert report["pins"].get("imageId") is None and "containerId" not in report  # no image, no container
    # the engine's own account: no container was created for this cell (others may share the engine: the filter
    # is this cell's label, which every container runner starts carries)
    created = list(engine.events(since=since, until=until, decode=True,
                                 filters={"type": "container", "event": "create", "label": f"runner.cell={cell}"}))
    assert created == []
