"""End to end under protocol epoch 2 (``--protocol 2``, ADR 0027): every runnable column's escalation turn on the
scripted model, its CLI reading an MCP server that stamps ``_meta["sharedos/protocolVersion"]`` on ``initialize``,
``tools/list`` and every tool result (successes included), settles as under epoch 1, carries the epoch in its pins,
its record and its result, and leaves no container.

What each CLI does with the stamp is read from what it sent its model: a CLI that hands a result's ``_meta`` to the
model shows the key in a later model request. That is a finding, not a failure of the turn: the columns measured
doing so are listed in ``HANDS_META_TO_MODEL`` with the evidence, and the test holds each column to what was
measured (a CLI that starts or stops doing it fails here, and its harness's README.md is updated with it). A column
whose CLI cannot take the stamp at all would be in ``CHOKES`` with the measured reason (none, measured).
"""

from __future__ import annotations

import json
from pathlib import Path

import docker
import pytest

from runner.core.protocol import PROTOCOL_VERSION_META
from runner.harnesses.profile import find_profile
from runner.images import ImageRecord
from tests.support import exchanges, no_containers_left, record_of, runner_exec

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

CHOKES: dict[str, str] = {}  # column -> how its CLI fails on an epoch-2 server (none, measured)
# column -> where its CLI put the stamp in what it sent its model (measured 2026-12-02, runner exec --protocol 2)
HANDS_META_TO_MODEL: dict[str, str] = {
    "cline": 'the whole CallToolResult as JSON in the tool message: {"content":[...],"isError":false,'
             '"_meta":{"sharedos/protocolVersion":"2"}} (cline 3.0.65)',
    "kimi": 'after the result text in the tool message: <mcp-result-extras>{"_meta":{"sharedos/protocolVersion":'
            '"2"}}</mcp-result-extras> (kimi-code 2.1.0)',
}


def test_the_escalation_turn_under_epoch_2_escalates_as_under_epoch_1(
    tmp_path: Path, engine: docker.DockerClient, harness: tuple[str, ImageRecord]
) -> None:
    harness, image = harness
    args = ["--harness", harness, "--case", "escalation", "--protocol", "2"]
    talks_to_a_model = find_profile(harness).model is not None
    if talks_to_a_model:
        args += ["--model", "scripted"]
    report = runner_exec(tmp_path, *args)
    assert report["infrastructureError"] is None
    meta = report["outcome"]["metadata"]
    assert report["status"] == "escalated", meta.get("transcriptTail")
    assert meta["callsAfterEscalation"] == 0 and meta["runtime"]["protocolVersion"] == "2"
    assert report["pins"]["protocolVersion"] == "2" and report["pins"]["imageId"] == image.image_id
    record = record_of(report)
    assert record["version"] == "2" and record["result"]["version"] == "2"
    calls = [json.loads(line) for line in Path(report["files"]["mcpEvents"]).read_text().splitlines()]
    # the control read, then the ask, last (runner's own columns reach for the uncatalogued tool before them)
    assert [c["tool"] for c in calls if c["event"] == "tool.called"][-2:] == ["files.read", "sharedos.escalate"]
    assert not [c for c in calls if c["event"] == "protocol.refused"]  # no CLI pins an epoch
    if talks_to_a_model:
        seen = [e["request_seq"] for e in exchanges(report) if PROTOCOL_VERSION_META in json.dumps(e["request"])]
        assert bool(seen) == (harness in HANDS_META_TO_MODEL), f"{harness}: the stamp reached its model in {seen}"
    no_containers_left(engine, report)
