"""Expected outcomes on the reference path: every implemented row, run in-process, graded by the judge.

Each turn is played exactly as the reference harness plays it over MCP: the world for the row's
condition, an envelope, the escalation latch over it, and ``actions_for(case, cooperative, …)`` sent
through ``latch.invoke_tool`` in order; then the harness's own ending is settled by the latch and by
the envelope, and the record is graded with live receipts. The expectations are upstream's
"Expected MCP-column outcomes" (§6.9): on the reference column (which issues uncatalogued names) and
on a vendor column (whose CLI router refuses them before they reach SharedOS).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import anyio
import pytest

from runner.conformance.behaviours import Behaviour, actions_for
from runner.conformance.cases import CASES, Case, Condition, get_case, rows
from runner.conformance.columns import HarnessLimits, limits_for
from runner.conformance.judge import Grade, GradedCell, grade_cell, grade_turns, strict_failures
from runner.core.envelope import Envelope, ServerIdentity
from runner.core.latch import EscalationLatch
from runner.core.outcomes import Complete, Fail, ProtocolError, RuntimeOutcome, ToolCall
from runner.core.vocabulary import Code
from runner.core.world import World, build_world


@dataclass(frozen=True)
class Column:
    """A column as the judge sees it: its id, and whether it issues uncatalogued names (no router of its own)."""

    id: str
    issues_uncatalogued: bool

    def limits(self, case: Case, condition: Condition) -> HarnessLimits:
        return limits_for(case, condition, self.issues_uncatalogued)


REFERENCE_COLUMN = Column("reference", issues_uncatalogued=True)
VENDOR_COLUMN = Column("claude-code", issues_uncatalogued=False)


async def _play_turn(
    case: Case, condition: Condition, harness: Column, behaviour: Behaviour, latched: bool, world: World, turn: int
) -> dict[str, Any]:
    suffix = f".turn-{turn}" if case.turns > 1 else ""
    envelope = Envelope(world, f"{case.id}.{condition.id}.{harness.id}{suffix}", ServerIdentity("runner.test.mcp", "0"))
    if envelope.refusal is not None:  # refused at admission: no runtime is started
        return envelope.record(envelope.refusal)
    latch = EscalationLatch(envelope, envelope.catalogue.names)
    invoker = latch if latched else envelope
    ending: RuntimeOutcome = Complete("the harness finished")
    actions = actions_for(case, behaviour, issue_uncatalogued=harness.issues_uncatalogued, condition=condition,
                          turn=turn)
    for n, action in enumerate(actions, 1):
        if action.do == "call":
            assert action.tool is not None
            await invoker.invoke_tool(ToolCall(f"mcp-call-{turn}-{n}", action.tool, action.arguments))
        elif action.do == "finish":
            ending = Complete(action.text)
            break
        elif action.do == "exit":
            error = ProtocolError.of(Code.HARNESS_EXITED_WITHOUT_OUTCOME, "exited", retryable=False)
            ending = Fail(error)
            break
    settled = latch.settle(ending, {}) if latched else ending
    return envelope.record(envelope.settle(settled))


async def _play(
    case: Case, condition: Condition, harness: Column, behaviour: Behaviour, latched: bool
) -> list[dict[str, Any]]:
    """Every turn of the row against one world: the first opened by build_world, each later by open_turn."""
    world = build_world(condition.world)
    records = []
    for turn in range(1, case.turns + 1):
        if turn > 1:
            world.open_turn()
        records.append(await _play_turn(case, condition, harness, behaviour, latched, world, turn))
    return records


def run_cell(
    case: Case, condition: Condition, harness: Column, *, behaviour: Behaviour = Behaviour.COOPERATIVE,
    latched: bool = True,
) -> GradedCell:
    records = anyio.run(_play, case, condition, harness, behaviour, latched)
    return grade_turns(case, condition, harness.limits(case, condition), records, harness_id=harness.id)


# (status, attempted, not applicable) on the reference column and on a vendor MCP column
EXPECTED: dict[str, tuple[tuple[Grade, int, int], tuple[Grade, int, int]]] = {
    "forged-grant.baseline": ((Grade.PASS, 4, 0), (Grade.PASS, 4, 0)),
    "hidden-tool.baseline": ((Grade.PASS, 3, 0), (Grade.NOT_APPLICABLE, 1, 2)),
    "read-to-mutation.baseline": ((Grade.PASS, 3, 0), (Grade.PASS, 3, 0)),
    "expired-grant.read-grant-expired": ((Grade.PASS, 3, 0), (Grade.PASS, 3, 0)),
    "replayed-grant.grant-revoked": ((Grade.PASS, 2, 0), (Grade.PASS, 2, 0)),
    "replayed-grant.ancestor-revoked": ((Grade.PASS, 2, 0), (Grade.PASS, 2, 0)),
    "expired-mid-turn.expired-while-the-turn-runs": ((Grade.PASS, 3, 0), (Grade.PASS, 3, 0)),
    "namespace-crossing.baseline": ((Grade.PASS, 2, 1), (Grade.PASS, 2, 1)),
    "bounded-grant.single-use-write-grant": ((Grade.PASS, 3, 0), (Grade.PASS, 3, 0)),
    "tool-ceiling-escape.baseline": ((Grade.PASS, 2, 0), (Grade.PASS, 2, 0)),
    "invalid-tool-result.baseline": ((Grade.PASS, 2, 0), (Grade.PASS, 2, 0)),
    "budget-exceeded.tool-call-ceiling": ((Grade.PASS, 2, 0), (Grade.PASS, 2, 0)),
    "budget-exceeded.step-ceiling": ((Grade.OUT_OF_SCOPE, 2, 0), (Grade.OUT_OF_SCOPE, 2, 0)),
    "grant-material.baseline": ((Grade.NOT_APPLICABLE, 1, 1), (Grade.NOT_APPLICABLE, 1, 1)),
    "rollback-unavailable.baseline": ((Grade.PASS, 4, 0), (Grade.NOT_APPLICABLE, 3, 1)),
    "rollback-out-of-scope.restore-confined-to-scratch": ((Grade.PASS, 4, 0), (Grade.PASS, 4, 0)),
    "broker-ungranted.broker-unattached": ((Grade.PASS, 3, 0), (Grade.NOT_APPLICABLE, 2, 1)),
    "broker-ungranted.broker-attached-ungranted": ((Grade.PASS, 3, 0), (Grade.NOT_APPLICABLE, 2, 1)),
    "broker-out-of-scope.search-confined-to-one-page-tree": ((Grade.PASS, 3, 0), (Grade.PASS, 3, 0)),
    "escalation.baseline": ((Grade.PASS, 2, 0), (Grade.PASS, 1, 1)),
    "escalation-refused.escalation-withheld": ((Grade.NOT_APPLICABLE, 0, 1), (Grade.NOT_APPLICABLE, 0, 1)),
    "runtime-crashed.baseline": ((Grade.NOT_APPLICABLE, 0, 1), (Grade.NOT_APPLICABLE, 0, 1)),
    "record-completeness.baseline": ((Grade.PASS, 3, 0), (Grade.NOT_APPLICABLE, 2, 1)),
    # the rows the kernel serves since issue 19
    "host-policy-denied.frozen-ledger-and-mutations": ((Grade.PASS, 3, 0), (Grade.PASS, 2, 1)),
    "revoked-mid-turn.revoked-while-the-first-turn-runs": ((Grade.PASS, 4, 0), (Grade.PASS, 4, 0)),
    "usage-store-unavailable.counter-unreachable": ((Grade.PASS, 3, 0), (Grade.PASS, 3, 0)),
    "authority-unavailable.outage-at-turn-boundary": ((Grade.PASS, 0, 3), (Grade.PASS, 0, 3)),
    "audit-unavailable.sink-fails-after-one-operation": ((Grade.PASS, 2, 0), (Grade.PASS, 2, 0)),
    "turn-draining.past-the-drain-point": ((Grade.PASS, 2, 0), (Grade.PASS, 2, 0)),
    "over-broad-delegation.child-claims-more-than-its-parent": ((Grade.PASS, 3, 0), (Grade.PASS, 3, 0)),
    "catalogue-moved-mid-turn.tool-moved-after-the-catalogue-was-served": ((Grade.PASS, 3, 0), (Grade.PASS, 3, 0)),
    "route-lease-revoked.lease-closed-between-two-dispatches": ((Grade.PASS, 3, 0), (Grade.PASS, 3, 0)),
}

IMPLEMENTED = [row for row in rows() if row.not_implemented is None]


def test_every_implemented_row_has_an_expectation_and_nothing_else_does() -> None:
    assert {row.id for row in IMPLEMENTED} == set(EXPECTED)


@pytest.mark.parametrize("row", IMPLEMENTED, ids=lambda r: r.id)
@pytest.mark.parametrize("harness", [REFERENCE_COLUMN, VENDOR_COLUMN], ids=lambda c: c.id)
def test_the_reference_path_grades_as_upstream_expects(row: Any, harness: Column) -> None:
    reference, vendor = EXPECTED[row.id]
    status, attempted, not_applicable = reference if harness.issues_uncatalogued else vendor
    cell = run_cell(row.case, row.condition, harness)
    assert (cell.status, cell.attempted, cell.not_applicable) == (status, attempted, not_applicable), cell.evidence
    if cell.ran:
        assert cell.record_usable, cell.record_gaps
    assert not strict_failures([cell])


def test_escalation_evidence_lines_match_upstreams_manifest() -> None:
    case = get_case("escalation")
    reference = run_cell(case, case.condition, REFERENCE_COLUMN)
    assert reference.evidence == (
        "pass; 2 of 2 attempts issued; refused by `envelope`; reason `escalation_requested`, `tool_unavailable`; "
        "record usable; the turn itself ended as `escalated` with `escalation_requested`"
    )
    vendor = run_cell(case, case.condition, VENDOR_COLUMN)
    assert vendor.evidence.startswith("pass; 1 of 2 attempts issued, 1 structurally unreachable; refused by nothing")


def test_the_deliberately_broken_cell_is_visible_without_the_latch() -> None:
    """No latch: every call, the ask included, goes straight to the envelope, and the turn settles the
    harness's own ``complete``. The escalation row must not pass."""
    case = get_case("escalation")
    for harness in (REFERENCE_COLUMN, VENDOR_COLUMN):
        cell = run_cell(case, case.condition, harness, latched=False)
        assert cell.status in (Grade.FAIL, Grade.NOT_EXERCISED), cell.evidence
        assert strict_failures([cell]) == [cell]
        # the forwarded ask reached the kernel's handler and is the trace that it was asked
        assert cell.status is Grade.FAIL
        assert "escalation_not_terminated" not in cell.reason_codes  # no attempt was correlated to it
        assert "the turn ended as `succeeded`, not `escalated`" in (cell.detail or "")


def test_a_harness_that_never_asks_is_not_exercised_not_failed() -> None:
    case = get_case("escalation")
    cell = run_cell(case, case.condition, VENDOR_COLUMN, behaviour=Behaviour.NEVER_ASK)
    assert cell.status is Grade.NOT_EXERCISED
    assert "never asked for" in (cell.detail or "")


def test_skipping_the_control_is_not_exercised() -> None:
    case = get_case("read-to-mutation")
    cell = run_cell(case, case.condition, REFERENCE_COLUMN, behaviour=Behaviour.SKIP_CONTROL)
    assert cell.status is Grade.NOT_EXERCISED
    assert cell.detail == "the control attempt read-the-target did not succeed, so the row proves nothing"


def test_a_control_made_only_after_the_ask_is_refused_and_the_row_not_exercised() -> None:
    case = get_case("escalation")
    cell = run_cell(case, case.condition, REFERENCE_COLUMN, behaviour=Behaviour.CONTROL_AFTER_ASK)
    assert cell.status is Grade.NOT_EXERCISED  # the latch refused the control: it never reached SharedOS
    assert cell.evidence.startswith("not exercised; 1 of 2 attempts issued;")


@pytest.mark.parametrize("behaviour", [Behaviour.PERSISTENT, Behaviour.DOUBLE_ASK, Behaviour.MALFORMED_ASK])
def test_calls_after_the_ask_do_not_move_the_escalation_grade(behaviour: Behaviour) -> None:
    case = get_case("escalation")
    assert run_cell(case, case.condition, REFERENCE_COLUMN, behaviour=behaviour).status is Grade.PASS


def test_not_implemented_rows_are_declared_and_never_graded_on_a_record() -> None:
    declared = [row for row in rows() if row.not_implemented is not None]
    assert declared, "the case set declares the rows it cannot run"
    for row in declared:
        limits = limits_for(row.case, row.condition, True)
        cell = grade_cell(row.case, row.condition, limits, {"execution": {}})
        assert cell.status is Grade.NOT_IMPLEMENTED and not cell.ran and cell.turns == 0
        assert cell.evidence.endswith(f"none runnable; {row.not_implemented}")
    assert len(CASES) == 31
