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

from runner.harnesses.deepseek.session import read_log, session_logs
from runner.harnesses.profile import find_profile
from runner.images import ImageRecord, ImageSettings, ensure_image
from runner.model.dialects.openai_chat import REASONING_TEXT
from tests import support
from tests.e2e.conftest import CLI_HARNESSES
from tests.support import no_containers_left, record_of, runner_exec

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

@pytest.fixture(scope="module", params=CLI_HARNESSES)
def vendor(
    request: pytest.FixtureRequest, engine: docker.DockerClient, image_settings: ImageSettings
) -> tuple[str, ImageRecord]:
    harness = request.param
    return harness, ensure_image(engine, find_profile(harness).image, image_settings)


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
    # what the turn cost, as the scripted model told the CLI (every answer carries usage), and what it offered its
    # model besides the catalogue (issue 31)
    usage = report["usage"]
    assert usage["answers"] >= 2 and usage["unreported"] == 0 and usage["total"]["input"] > 0, usage
    assert usage["conversation"]["input"] > 0 and usage["total"]["output"] > 0
    policy = report["toolPolicy"]
    assert policy["version"] == "2" and policy["managedMcp"] == [find_profile(harness).mcp_server_name]
    assert f"cli:{image.cli_version}" in policy["evidence"] and any("#seq=" in e for e in policy["evidence"])
    result = json.loads((Path(report["files"]["record"]).parent / "result.json").read_text())
    assert result["usage"] == usage and result["system"]["toolPolicy"] == policy and "failure" not in result
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


def test_deepseek_turn_is_read_from_its_session_log_with_the_dialect_quirks_met(
    tmp_path: Path, engine: docker.DockerClient
) -> None:
    """dsh prints plain text, so the outcome came from its zstd session log; its title side request, its
    thinking mode and its 12-hex tool names were all met by the scripted model (runner/harnesses/deepseek)."""
    report = runner_exec(tmp_path, "--harness", "deepseek", "--case", "escalation", "--model", "scripted")
    assert report["status"] == "escalated" and report["exitCode"] == 0
    meta = report["outcome"]["metadata"]
    assert meta["harnessOutcome"] == "complete" and meta["cliVersion"] == "0.1.0-rc.8"
    stdout = Path(report["files"]["stdout"]).read_text().strip()
    assert stdout and not stdout.startswith("{")  # the last assistant text, not JSON
    (log,) = session_logs(Path(report["files"]["session"]))
    kinds = [e["type"] for e in read_log(log)]
    assert kinds[0] == "session" and kinds[-1] == "turn/end" and "tool/call" in kinds
    exchanges = support.exchanges(report)  # in arrival order: the title request races the first conversation one
    bodies = [e["request"]["body"] for e in exchanges]
    assert all(b["stream"] is True for b in bodies)
    titles = [e for e in exchanges if e["decision"]["reply"] == "side"]
    assert len(titles) == 1 and titles[0]["request"]["body"]["thinking"] == {"type": "disabled"}
    turn = [b for b, e in zip(bodies, exchanges, strict=True) if e["decision"]["reply"] != "side"]
    assert all(b["thinking"] == {"type": "enabled"} for b in turn)
    names = [e["decision"]["call"]["name"] for e in exchanges if e["decision"]["reply"] == "call"]
    assert [n.rsplit("_", 1)[0] for n in names] == ["mcp__sharedos__files_read", "mcp__sharedos__sharedos_escalate"]
    # the reasoning the scripted model streamed came back on the assistant messages of later requests
    echoed = [m.get("reasoning_content") for m in turn[-1]["messages"] if m.get("role") == "assistant"]
    assert echoed == [REASONING_TEXT, REASONING_TEXT]
    no_containers_left(engine, report)
