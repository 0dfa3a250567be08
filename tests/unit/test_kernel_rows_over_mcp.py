"""The rows issue 19 made runnable, played over the real MCP server (the SDK's ``ClientSession`` on in-memory
streams, the same handlers the per-turn socket serves): every refusal arrives in band as a ``CallToolResult``
with ``isError`` and SharedOS's status and code in ``_meta``, never as a JSON-RPC error, and the cell grades as
upstream's MCP column does. (The container and the real CLIs are the e2e layer's: tests/e2e/test_kernel_refusals.py.)
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from runner.conformance.behaviours import Behaviour, actions_for
from runner.conformance.cases import get_case
from runner.conformance.columns import limits_for
from runner.conformance.judge import Grade, grade_turns
from runner.core.envelope import Envelope, ServerIdentity
from runner.core.latch import EscalationLatch
from runner.core.outcomes import Complete
from runner.core.world import build_world
from runner.mcp.memory import memory_session

STATUS, CODE = "sharedos/status", "sharedos/code"

# case -> the in-band answers (tool, status, code) the row's refusals must arrive as
IN_BAND: dict[str, list[tuple[str, str, str]]] = {
    "host-policy-denied": [
        ("files.read", "denied", "host_policy_denied"), ("files.append", "denied", "tool_unavailable"),
    ],
    "usage-store-unavailable": [("files.append", "denied", "usage_store_unavailable")],
    "over-broad-delegation": [("files.replace", "denied", "delegation_chain_invalid")],
    "catalogue-moved-mid-turn": [("notion.search", "denied", "no_matching_grant")],
    "route-lease-revoked": [("messages.request", "failed", "message_request_not_accepted")],
    "audit-unavailable": [("files.replace", "failed", "audit_unavailable")],
    "turn-draining": [("files.replace", "denied", "turn_draining")],
    "revoked-mid-turn": [("files.read", "denied", "no_matching_grant")],
}


async def _play(case_id: str) -> tuple[list[dict[str, Any]], list[tuple[str, str, str]]]:
    case = get_case(case_id)
    world = build_world(case.condition.world)
    records: list[dict[str, Any]] = []
    refusals: list[tuple[str, str, str]] = []
    for turn in range(1, case.turns + 1):
        if turn > 1:
            world.open_turn()
        envelope = Envelope(world, f"{case.id}.turn-{turn}", ServerIdentity("test", "1"), clock=world.clock)
        latch = EscalationLatch(envelope, envelope.catalogue.names)
        actions = actions_for(case, Behaviour.COOPERATIVE, issue_uncatalogued=True, turn=turn)
        async with memory_session(envelope.catalogue, latch) as session:
            for action in actions:
                if action.do != "call":
                    continue
                assert action.tool is not None and isinstance(action.arguments, dict)
                answer = await session.client.call_tool(action.tool, action.arguments)
                if answer.is_error:
                    assert answer.meta is not None
                    refusals.append((action.tool, answer.meta[STATUS], answer.meta[CODE]))
        records.append(envelope.record(envelope.settle(latch.settle(Complete("done"), {}))))
    return records, refusals


@pytest.mark.parametrize("case_id", list(IN_BAND))
def test_each_new_refusal_arrives_as_a_tool_result_and_the_row_passes(case_id: str) -> None:
    records, refusals = anyio.run(_play, case_id)
    assert refusals == IN_BAND[case_id]
    case = get_case(case_id)
    cell = grade_turns(case, case.condition, limits_for(case, case.condition, issues_uncatalogued=True), records)
    assert cell.status is Grade.PASS, cell.evidence
