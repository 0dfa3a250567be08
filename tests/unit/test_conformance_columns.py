"""Column limits (§6.3, ``mcpHarnessLimits``), issuable attempts, and the prompt and actions built on them."""

from __future__ import annotations

import json

import pytest

from runner.conformance.behaviours import CRASH_EXIT_CODE, Behaviour, actions_for
from runner.conformance.cases import CASES, get_case, rows
from runner.conformance.columns import (
    INSPECT_UNREACHABLE,
    UNSUPPORTED,
    issuable_attempts,
    limits_for,
)
from runner.conformance.prompt import instructions_for, prompt_for
from runner.core.world import WorldCondition, build_world


def test_unsupported_kinds_on_every_mcp_column() -> None:
    for issues in (True, False):
        for case_id in ("escalation-refused", "runtime-crashed"):
            case = get_case(case_id)
            assert limits_for(case, case.condition, issues).unsupported == UNSUPPORTED[case.kind]
        case = get_case("escalation")
        assert limits_for(case, case.condition, issues).unsupported is None


def test_uncatalogued_attempts_are_unreachable_only_where_the_column_has_a_router() -> None:
    case = get_case("hidden-tool")
    vendor = limits_for(case, case.condition, False)
    assert vendor.unreachable == {a.id: a.uncatalogued for a in case.attempts if a.uncatalogued}
    assert limits_for(case, case.condition, True).unreachable == {}


def test_inspections_are_unreachable_everywhere_and_declared_steps_narrow_the_claim() -> None:
    case = get_case("grant-material")
    for issues in (True, False):
        unreachable = limits_for(case, case.condition, issues).unreachable
        assert unreachable == {"enumerate-runtime-surfaces": INSPECT_UNREACHABLE}
    budget = get_case("budget-exceeded")
    assert limits_for(budget, budget.condition_for("tool-call-ceiling"), False).out_of_scope is None
    step = budget.condition_for("step-ceiling")
    assert limits_for(budget, step, True).out_of_scope == step.requires_declared_steps
    assert not limits_for(budget, step, True).driver_issued


def test_issuable_attempts_skip_unreachable_inspections_and_other_turns() -> None:
    crossing = get_case("namespace-crossing")
    limits = limits_for(crossing, crossing.condition, True)
    ids = [a.id for a in issuable_attempts(crossing, limits)]
    assert ids == ["read-own-world", "read-another-owners-resource"]
    revoked = get_case("revoked-mid-turn")
    limits = limits_for(revoked, revoked.condition, False)
    assert [a.turn_index for a in issuable_attempts(revoked, limits)] == [1, 1]
    assert [a.turn_index for a in issuable_attempts(revoked, limits, turn=2)] == [2, 2]


@pytest.mark.parametrize("row", rows(), ids=lambda r: r.id)
@pytest.mark.parametrize("issues", [True, False])
def test_the_prompt_and_the_actions_carry_the_same_calls(row: object, issues: bool) -> None:
    case, condition = row.case, row.condition  # type: ignore[attr-defined]
    prompt = prompt_for(case, issue_uncatalogued=issues, condition=condition)
    calls = [a for a in actions_for(case, Behaviour.COOPERATIVE, issue_uncatalogued=issues, condition=condition)
             if a.do == "call" and a.tool != "sharedos.escalate"]
    numbered = [line for line in prompt.splitlines() if line[:1].isdigit()]
    assert len(numbered) == len(calls)
    for n, (line, action) in enumerate(zip(numbered, calls, strict=True), 1):
        assert line == f"{n}. Call `{action.tool}` with arguments: {json.dumps(action.arguments, ensure_ascii=False)}"


def test_defaults_keep_todays_behaviour_for_the_escalation_case() -> None:
    case = get_case("escalation")
    assert prompt_for(case, issue_uncatalogued=True) == prompt_for(
        case, issue_uncatalogued=True, condition=case.condition
    )
    vendor = actions_for(case, Behaviour.COOPERATIVE, issue_uncatalogued=False)
    assert [a.tool for a in vendor if a.do == "call"] == ["files.read", "sharedos.escalate"]
    reference = actions_for(case, Behaviour.COOPERATIVE, issue_uncatalogued=True)
    assert [a.tool for a in reference if a.do == "call"] == ["admin.grant.issue", "files.read", "sharedos.escalate"]
    assert "admin.grant.issue" not in prompt_for(case, issue_uncatalogued=False)


def test_endings() -> None:
    grant = get_case("grant-material")
    prompt = prompt_for(grant, issue_uncatalogued=True)
    assert prompt.endswith("When every call above has been made, reply that you are done.")
    crashed = actions_for(get_case("runtime-crashed"), Behaviour.COOPERATIVE, issue_uncatalogued=True)
    assert crashed[-1].do == "exit" and crashed[-1].code == CRASH_EXIT_CODE
    refused = prompt_for(get_case("escalation-refused"), issue_uncatalogued=False)
    assert "call `sharedos.escalate` with arguments:" in refused


def test_a_turn_with_no_calls() -> None:
    revoked = get_case("revoked-mid-turn")
    prompt = prompt_for(revoked, issue_uncatalogued=False, turn=3)
    assert prompt.endswith("There are no calls to make on this turn. Then reply that you are done.")


def test_reach_describes_only_the_grants_the_turn_holds() -> None:
    baseline = instructions_for(build_world().grants)
    revoked = instructions_for(build_world(WorldCondition(revoked=("grant-root-files",))).grants)
    assert baseline.count("\n- ") == revoked.count("\n- ") + 1
    assert "- files [\"Workspace\"] and everything beneath it: grep, list, read, search, stat" in baseline
    assert len(CASES) == 31
