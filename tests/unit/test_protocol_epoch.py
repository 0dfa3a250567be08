"""``--protocol 1|2``: the SharedOS protocol epoch (ADR 0027). What a pin gets and what is stamped (the pure rules and
the SDK middleware on the real server's in-memory session), how the option is parsed at the edge, pinned by the
plan, repeated by repro and carried into the turn's record (the socket, with a raw SDK client:
tests/integration/test_mcp_epoch.py; every column's CLI under epoch 2: tests/e2e/test_protocol_epoch.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import MCPError
from typer.testing import CliRunner

from runner.cli import Exit, app
from runner.cli.settings import cell_options
from runner.conformance.cases import get_case
from runner.core.envelope import Envelope, ServerIdentity
from runner.core.latch import EscalationLatch
from runner.core.outcomes import Complete
from runner.core.protocol import (
    PROTOCOL_VERSION_META,
    RELEASED_EPOCH,
    UNSUPPORTED_PROTOCOL_VERSION,
    ProtocolEpoch,
    unsupported_pin,
)
from runner.core.world import build_world
from runner.harnesses.profile import find_profile
from runner.matrix.artifact import ALWAYS_COMPARED, load_result, reusable
from runner.matrix.cells import MatrixCell
from runner.matrix.plan import CellOptions, CellPlan, plan_cells
from runner.matrix.repro import repro_plan
from runner.matrix.result import CellPins, CellResult
from runner.mcp.epoch import PINNED_METHODS, STAMPED_METHODS, pin_error, stamp
from runner.mcp.memory import memory_session
from runner.turn.settings import Host, SettingError, parse_protocol

CASE = get_case("escalation")
TWO = ProtocolEpoch.TWO
POLICY = {"path": ["Workspace", "policy.md"]}
GOLDEN = Path(__file__).resolve().parents[1] / "golden/runs/matrix/escalation.baseline.reference/result.json"


# --- the rules ------------------------------------------------------------------------------------


def test_the_default_is_the_released_epoch_1() -> None:
    # 1.0.0-preview is upstream's newest release and speaks "1"; "2" is in its CHANGELOG's Unreleased section
    assert RELEASED_EPOCH is ProtocolEpoch.ONE
    assert CellOptions().protocol is RELEASED_EPOCH
    assert cell_options({}, run_id="r").protocol is RELEASED_EPOCH
    assert ServerIdentity("x", "0").protocol_version == "1"


@pytest.mark.parametrize("pin", ["1", "3", "99", 2, None, "", " 2"])
def test_under_epoch_2_any_pin_but_the_string_2_is_refused_with_its_stable_code(pin: Any) -> None:
    refusal = unsupported_pin(pin, TWO)
    assert refusal is not None
    assert refusal["data"] == {
        "code": UNSUPPORTED_PROTOCOL_VERSION, "supportedVersion": "2", "receivedVersion": pin,
    }
    assert 'supported version is "2".' in str(refusal["message"])
    assert unsupported_pin("2", TWO) is None


def test_the_diagnostic_is_upstreams_assert_protocol_version_text() -> None:
    refusal = unsupported_pin("1", TWO)
    assert refusal is not None
    assert refusal["message"] == 'Unsupported SharedOS protocol version "1"; supported version is "2".'


@pytest.mark.parametrize("pin", ["1", "2", 7])
def test_epoch_1_knows_no_pin_and_stamps_nothing(pin: Any) -> None:
    assert unsupported_pin(pin, ProtocolEpoch.ONE) is None
    assert pin_error("tools/call", {"_meta": {PROTOCOL_VERSION_META: pin}}, ProtocolEpoch.ONE) is None
    answer = {"tools": [], "_meta": {"sharedos/catalogHash": "h"}}
    assert stamp("tools/list", answer, ProtocolEpoch.ONE) is answer


@pytest.mark.parametrize("method", sorted(PINNED_METHODS))
def test_a_pin_of_another_epoch_is_a_json_rpc_invalid_params_error(method: str) -> None:
    error = pin_error(method, {"name": "files.read", "_meta": {PROTOCOL_VERSION_META: "1", "other": 1}}, TWO)
    assert isinstance(error, MCPError)
    assert error.code == types.INVALID_PARAMS == -32602
    assert error.data["code"] == UNSUPPORTED_PROTOCOL_VERSION and error.data["supportedVersion"] == "2"


@pytest.mark.parametrize("params", [
    None, {}, {"name": "files.read"}, {"_meta": None}, {"_meta": "2"}, {"_meta": {"other": "1"}},
    {"_meta": {PROTOCOL_VERSION_META: "2"}},
])
def test_no_pin_or_the_servers_own_pin_goes_on(params: dict[str, Any] | None) -> None:
    for method in PINNED_METHODS:
        assert pin_error(method, params, TWO) is None


def test_a_pin_on_a_method_that_is_not_checked_is_not_refused() -> None:
    # tools/list: [inferred] not checked upstream (runner.mcp.epoch.PINNED_METHODS)
    assert "tools/list" not in PINNED_METHODS
    assert pin_error("tools/list", {"_meta": {PROTOCOL_VERSION_META: "1"}}, TWO) is None


def test_the_stamp_is_added_beside_the_meta_already_there() -> None:
    refusal = {"content": [], "isError": True, "_meta": {"sharedos/status": "denied", "sharedos/code": "x"}}
    assert stamp("tools/call", refusal, TWO)["_meta"] == {  # type: ignore[index]
        "sharedos/status": "denied", "sharedos/code": "x", PROTOCOL_VERSION_META: "2",
    }
    assert refusal["_meta"] == {"sharedos/status": "denied", "sharedos/code": "x"}  # the answer itself is not touched
    assert stamp("tools/call", {"content": []}, TWO) == {"content": [], "_meta": {PROTOCOL_VERSION_META: "2"}}
    assert {"initialize", "tools/list", "tools/call"} == STAMPED_METHODS
    assert stamp("ping", {}, TWO) == {}


# --- the middleware on the real SDK server (in-memory session) -----------------------------------------


def _authority(protocol: ProtocolEpoch) -> tuple[Envelope, EscalationLatch]:
    world = build_world(CASE.condition.world)
    envelope = Envelope(world, "exec-epoch", ServerIdentity("test", "1", protocol.value), clock=world.clock)
    return envelope, EscalationLatch(envelope, envelope.catalogue.names)


def test_every_answer_of_an_epoch_2_session_carries_the_epoch() -> None:
    envelope, latch = _authority(TWO)

    async def play() -> tuple[Any, ...]:
        async with memory_session(envelope.catalogue, latch, protocol=TWO) as s:
            listing = await s.client.list_tools()
            ok = await s.client.call_tool("files.read", POLICY)
            refused = await s.client.call_tool("no.such.tool", {})
            return s.initialize_result, listing, ok, refused

    init, listing, ok, refused = anyio.run(play)
    assert init.meta == {PROTOCOL_VERSION_META: "2"}
    assert listing.meta == {"sharedos/catalogHash": envelope.catalogue.catalog_hash,
                            "sharedos/executionId": "exec-epoch", PROTOCOL_VERSION_META: "2"}
    assert ok.is_error is False and ok.meta == {PROTOCOL_VERSION_META: "2"}
    assert refused.meta == {"sharedos/status": "denied", "sharedos/code": "tool_unavailable",
                            PROTOCOL_VERSION_META: "2"}


def test_a_pinned_call_of_another_epoch_never_reaches_the_latch_or_the_envelope() -> None:
    envelope, latch = _authority(TWO)
    events: list[tuple[str, dict[str, Any]]] = []

    async def play() -> MCPError:
        async with memory_session(envelope.catalogue, latch, protocol=TWO,
                                  on_event=lambda kind, data: events.append((kind, data))) as s:
            with pytest.raises(MCPError) as caught:
                await s.client.call_tool("sharedos.escalate", {"reason": "x"}, meta={PROTOCOL_VERSION_META: "1"})
            return caught.value

    error = anyio.run(play)
    assert error.code == -32602 and error.data["code"] == UNSUPPORTED_PROTOCOL_VERSION
    assert latch.reason is None and envelope.operations == [] and not envelope.events[1:]
    assert ("protocol.refused", {"connection": 1, "method": "tools/call", "received": "1"}) in events
    assert not [kind for kind, _ in events if kind == "tool.called"]


# --- the edge, the plan, the pins, repro -------------------------------------------------------------


def plan(protocol: ProtocolEpoch) -> CellPlan:
    [made] = plan_cells([MatrixCell(CASE, CASE.condition, find_profile("reference"))], CellOptions(protocol=protocol))
    return made


def test_the_option_is_parsed_once_at_the_edge() -> None:
    assert parse_protocol("2") is TWO and parse_protocol("1") is ProtocolEpoch.ONE
    assert cell_options({"protocol": "2"}, run_id="r").protocol is TWO
    with pytest.raises(SettingError, match=r"--protocol: a SharedOS protocol epoch is 1 or 2, not '2.0'"):
        parse_protocol("2.0")


@pytest.mark.parametrize("command", [["exec", "--harness", "reference"], ["run", "--harness", "reference"]])
def test_an_unknown_epoch_is_a_usage_error_before_any_engine(command: list[str]) -> None:
    result = CliRunner().invoke(app, [*command, "--case", "escalation", "--protocol", "3"])
    assert result.exit_code == Exit.USAGE
    assert "--protocol: a SharedOS protocol epoch is 1 or 2, not '3'" in result.output


def test_epoch_2_is_pinned_and_repeated_in_repro_and_epoch_1_leaves_both_as_they_were() -> None:
    one, two = plan(ProtocolEpoch.ONE), plan(TWO)
    assert "protocolVersion" not in one.planned_pins().to_dict() and "--protocol" not in one.repro_argv()
    assert two.planned_pins().to_dict()["protocolVersion"] == "2"
    assert two.repro_argv()[-2:] == ["--protocol", "2"]
    assert "protocolVersion" in ALWAYS_COMPARED


def _result(pins: CellPins) -> CellResult:
    """A graded reference cell, as main wrote it (tests/golden), with ``pins``."""
    return load_result(GOLDEN).model_copy(update={"pins": pins})


def test_a_result_of_one_epoch_never_stands_in_for_the_other() -> None:
    one, two = plan(ProtocolEpoch.ONE).planned_pins(), plan(TWO).planned_pins()
    assert reusable(_result(one), one) and reusable(_result(two), two)
    assert not reusable(_result(one), two) and not reusable(_result(two), one)


def test_the_pin_is_written_and_read_back_and_repro_reruns_in_its_epoch(tmp_path: Path) -> None:
    written = _result(plan(TWO).planned_pins())
    read = CellResult.model_validate(json.loads(written.dumps()))
    assert read.pins.protocol_version == "2" and read == written
    rerun = repro_plan(read, tmp_path, "run", Host())
    assert rerun.options.protocol is TWO
    assert repro_plan(_result(plan(ProtocolEpoch.ONE).planned_pins()), tmp_path, "run", Host()).options.protocol \
        is ProtocolEpoch.ONE


# --- the record ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("protocol", list(ProtocolEpoch))
def test_the_record_and_the_result_say_the_epoch(protocol: ProtocolEpoch) -> None:
    envelope, _ = _authority(protocol)
    result = envelope.settle(Complete(output="done"))
    record = envelope.record(result)
    assert record["version"] == protocol.value and result.to_json()["version"] == protocol.value
    assert result.metadata["runtime"]["protocolVersion"] == protocol.value  # type: ignore[index,call-overload]
