"""End to end: each real vendor CLI, installed from its registry into its pinned image, runs a whole
turn against the scripted model, reaches SharedOS over MCP through the mounted socket, and the turn
settles exactly as ADR 0018 says. No fake CLI, no fake engine, no fake SDK.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import docker
import pytest

from runner.sandbox.images import ImageRecord, ensure_image
from tests.support import no_containers_left, record_of, runner_exec

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

VENDORS = ["codex", "claude-code", "pi", "pi-direct", "gemini", "qwen", "opencode", "kilo", "kimi", "droid"]
IMAGE_OF = {"pi-direct": "pi"}


@pytest.fixture(scope="module", params=VENDORS)
def vendor(request: pytest.FixtureRequest, engine: docker.DockerClient) -> tuple[str, ImageRecord]:
    harness = request.param
    return harness, ensure_image(engine, IMAGE_OF.get(harness, harness))


def calls_seen(report: dict[str, Any]) -> list[str]:
    events = [json.loads(line) for line in Path(report["files"]["mcpEvents"]).read_text().splitlines()]
    return [e["tool"] for e in events if e["event"] == "tool.called"]


def test_cooperative_turn_escalates_and_the_cli_completes(
    tmp_path: Path, engine: docker.DockerClient, vendor: tuple[str, ImageRecord]
) -> None:
    harness, image = vendor
    report = runner_exec(tmp_path, "--harness", harness, "--case", "escalation", "--model", "scripted")
    assert report["infrastructureError"] is None
    assert report["model"]["mode"] == "scripted"
    assert report["status"] == "escalated", report["outcome"]["metadata"].get("transcriptTail")
    meta = report["outcome"]["metadata"]
    assert meta["harnessOutcome"] == "complete"
    assert meta["callsAfterEscalation"] == 0
    assert meta["imageId"] == image.image_id and meta["cliVersion"] == image.cli_version
    # the MCP server saw the control call and the ask, under their canonical names
    assert calls_seen(report)[:2] == ["files.read", "sharedos.escalate"]
    ops = record_of(report)["execution"]["operations"]
    assert [(o["tool"], o["outcome"]) for o in ops] == [("files.read", "succeeded")]
    assert "session" in report["files"], "the CLI's own session transcript was copied out"
    no_containers_left(engine, report)


def test_persistent_calls_after_the_ask_are_refused_and_counted(
    tmp_path: Path, engine: docker.DockerClient, vendor: tuple[str, ImageRecord]
) -> None:
    harness, _ = vendor
    report = runner_exec(
        tmp_path, "--harness", harness, "--case", "escalation", "--behaviour", "persistent", "--model", "scripted"
    )
    assert report["status"] == "escalated"
    assert report["outcome"]["metadata"]["callsAfterEscalation"] == 3
    no_containers_left(engine, report)


def test_escalation_refused_never_ends_escalated(
    tmp_path: Path, engine: docker.DockerClient, vendor: tuple[str, ImageRecord]
) -> None:
    harness, _ = vendor
    report = runner_exec(tmp_path, "--harness", harness, "--case", "escalation-refused", "--model", "scripted")
    assert report["infrastructureError"] is None
    assert report["status"] != "escalated"
    no_containers_left(engine, report)
