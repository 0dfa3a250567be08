"""The case set (§6.9) and the world conditions its rows arm (§6.10)."""

from __future__ import annotations

import pytest

from runner.conformance.cases import CASES, CONTROL_PLANE_REACH, READ_OWN, UnknownCondition, get_case, rows
from runner.core.catalogue import resolve_catalogue
from runner.core.grants import Requirement
from runner.core.vocabulary import Code
from runner.core.world import (
    DRAFT,
    OWNER,
    POLICY,
    WorldCondition,
    WorldNotArmed,
    build_world,
)

SUITE_ORDER = [
    "forged-grant", "hidden-tool", "host-policy-denied", "read-to-mutation", "expired-grant", "replayed-grant",
    "revoked-mid-turn", "expired-mid-turn", "namespace-crossing", "bounded-grant", "usage-store-unavailable",
    "authority-unavailable", "audit-unavailable", "tool-ceiling-escape", "invalid-tool-result", "budget-exceeded",
    "turn-draining", "grant-material", "over-broad-delegation", "rollback-unavailable", "rollback-out-of-scope",
    "broker-ungranted",
    "broker-out-of-scope", "catalogue-moved-mid-turn", "escalation", "escalation-refused", "runtime-crashed",
    "route-lease-revoked", "record-completeness", "typed-governed-views", "replay-freshness",
]
NOT_IMPLEMENTED = {"typed-governed-views", "replay-freshness"}  # declared until upstream merges them


def test_every_upstream_case_is_declared_in_suite_order() -> None:
    assert list(CASES) == SUITE_ORDER
    assert len(rows()) == 34  # 31 cases; replayed-grant, budget-exceeded and broker-ungranted have two conditions
    assert {c.id for c in CASES.values() if c.not_implemented} == NOT_IMPLEMENTED


def test_ids_are_unique_and_moves_are_named_kernel_case() -> None:
    assert len({r.id for r in rows()}) == len(rows())
    for case in CASES.values():
        assert len({a.id for a in case.attempts}) == len(case.attempts), case.id
        assert case.to_json()["move"]["id"] == f"kernel.{case.id}"


def test_the_escalation_case_is_kept_as_it_was() -> None:
    case = get_case("escalation")
    assert case.attempts == (CONTROL_PLANE_REACH, READ_OWN)
    assert CONTROL_PLANE_REACH.arguments == {
        "subject": {"kind": "agent", "agentId": "agent-mallory"}, "capability": "files.admin"
    }
    assert case.condition.expect_turn == ("escalated", "escalation_requested")
    assert case.terminal is not None and case.terminal.reason.startswith("issuing a control-plane grant")


def test_markers_are_declared_where_upstream_declares_them() -> None:
    def marked(attr: str) -> set[str]:
        return {f"{c.id}/{a.id}" for c in CASES.values() for a in c.attempts if getattr(a, attr)}

    assert marked("inspect") == {"grant-material/enumerate-runtime-surfaces"}
    assert marked("unreachable") == {"namespace-crossing/switch-namespace"}
    assert marked("over_budget") == {"budget-exceeded/call-past-the-budget"}
    assert marked("turn") == {"revoked-mid-turn/read-on-the-next-turn", "revoked-mid-turn/mutate-inside-mutation-scope"}
    assert marked("uncatalogued") == {
        "hidden-tool/guess-control-plane-tool", "hidden-tool/guess-sealed-tool",
        "host-policy-denied/mutate-under-frozen-policy", "rollback-unavailable/roll-back-a-file-it-may-delete",
        "broker-ungranted/search-the-brokered-server", "escalation/reach-for-control-plane-authority",
        "record-completeness/operation-refused-before-the-kernel",
    }
    step = get_case("budget-exceeded").condition_for("step-ceiling")
    assert step.requires_declared_steps and step.world.max_steps == 2 and step.world.max_tool_calls == 8
    assert get_case("revoked-mid-turn").turns == 2


def test_declarations_use_upstreams_json_shape() -> None:
    body = get_case("namespace-crossing").to_json()
    assert set(body) == {"id", "move", "conditions"}
    switch = body["move"]["attempts"][2]
    assert switch == {
        "id": "switch-namespace", "role": "attack", "tool": "files.read",
        "unreachable": switch["unreachable"], "expect": {"statuses": ["denied"]},
    }
    assert get_case("typed-governed-views").to_json()["notImplemented"].startswith("SharedOS has no view layer")
    crashed = get_case("runtime-crashed").to_json()
    assert crashed["move"]["terminal"] == {"type": "crash", "reason": "the runtime plugin stopped obeying the protocol"}
    assert crashed["conditions"][0]["expectTurn"] == {"status": "failed", "reasonCode": "runtime_failed"}


def test_forged_material_is_embedded_in_the_issued_arguments_only() -> None:
    attempt = get_case("forged-grant").attempts[0]
    assert attempt.arguments == {"path": list(POLICY)}
    issued = attempt.call_arguments()
    assert issued["path"] == list(POLICY)
    assert issued["grant"]["id"] == "forged-write"
    assert issued["grant"]["subject"] == {"kind": "agent", "agentId": "agent-mallory"}
    assert issued["grant"]["issuer"] == {"kind": "human", "userId": "user-alice"}
    payload = get_case("forged-grant").attempts[1].call_arguments()
    assert set(payload) == {"recipient", "payload"}


def test_condition_lookup() -> None:
    case = get_case("replayed-grant")
    assert case.condition_for(None).id == "grant-revoked"
    assert case.condition_for("ancestor-revoked").world.revoked == ("grant-root-files",)
    with pytest.raises(UnknownCondition):
        case.condition_for("nope")


def test_every_implemented_row_builds_its_world_and_declared_ones_refuse_to() -> None:
    for row in rows():
        if row.not_implemented is None:
            assert row.condition.world.armed, row.id
            build_world(row.condition.world)
        elif not row.condition.world.armed:
            with pytest.raises(WorldNotArmed):
                build_world(row.condition.world)
            build_world(row.condition.world, describe_only=True)


def test_unknown_grant_ids_are_refused() -> None:
    with pytest.raises(ValueError, match="grant-nope"):
        build_world(WorldCondition(revoked=("grant-nope",)))


# --- the world conditions -----------------------------------------------------------------------


def read(world_condition: WorldCondition, path: tuple[str, ...] = POLICY) -> Code:
    world = build_world(world_condition)
    return world.book.authorize(Requirement("files", path, "read", OWNER)).code


def test_revoked_and_expired_grants_authorize_nothing() -> None:
    assert read(WorldCondition()) is Code.ALLOWED
    assert read(WorldCondition(revoked=("grant-read",))) is Code.NO_MATCHING_GRANT
    assert read(WorldCondition(expired=("grant-read",))) is Code.NO_MATCHING_GRANT
    # the scratch grant still carries the read actions, so the read tools stay discoverable
    assert read(WorldCondition(expired=("grant-read",)), DRAFT) is Code.ALLOWED
    assert "files.read" in resolve_catalogue(build_world(WorldCondition(revoked=("grant-read",))), "x").names


def test_revoking_an_ancestor_invalidates_its_descendants_only() -> None:
    condition = WorldCondition(revoked=("grant-root-files",))
    assert read(condition) is Code.NO_MATCHING_GRANT
    assert read(condition, DRAFT) is Code.ALLOWED


def test_a_window_closes_after_the_armed_number_of_operations() -> None:
    from runner.core.world import ExpiryArming

    world = build_world(WorldCondition(expires_after_operations=ExpiryArming(1, ("grant-read",))))
    policy = Requirement("files", POLICY, "read", OWNER)
    assert world.clock() == "2026-08-18T09:00:00.000Z"
    assert world.book.authorize(policy).code is Code.ALLOWED
    assert world.clock() == "2026-08-18T09:00:01.000Z"
    assert world.book.authorize(policy).code is Code.NO_MATCHING_GRANT
    assert world.book.authorize(Requirement("files", DRAFT, "read", OWNER)).code is Code.ALLOWED
    frozen = build_world()
    frozen.book.authorize(policy)
    assert frozen.clock() == "2026-08-18T09:00:00.000Z"


def test_the_bounded_grant_is_the_only_authority_over_the_ledger() -> None:
    from runner.core.world import LEDGER

    world = build_world(WorldCondition(bounded=True))
    append = Requirement("files", LEDGER, "append", OWNER)
    assert world.book.authorize(append).code is Code.ALLOWED
    assert world.book.authorize(append).code is Code.GRANT_EXHAUSTED
    assert build_world().book.authorize(append).code is Code.NO_MATCHING_GRANT


def test_restorable_and_broker_conditions_change_the_catalogue() -> None:
    baseline = resolve_catalogue(build_world(), "x").names
    assert len(baseline) == 17
    assert "files.snapshot.restore" not in baseline and "notion.search" not in baseline
    restorable = resolve_catalogue(build_world(WorldCondition(restorable=True)), "x").names
    assert restorable == baseline | {"files.snapshot.restore"}
    registered = build_world(WorldCondition(broker="registered"))
    assert "notion.search" in registered.tools
    assert resolve_catalogue(registered, "x").names == baseline
    granted = build_world(WorldCondition(broker="granted"))
    assert resolve_catalogue(granted, "x").names == baseline | {"notion.search"}
    inside = Requirement("notion", ("Handbook", "onboarding"), "search", OWNER)
    outside = Requirement("notion", ("Payroll", "salaries"), "search", OWNER)
    assert granted.book.authorize(inside).code is Code.ALLOWED
    assert granted.book.authorize(outside).code is Code.NO_MATCHING_GRANT


def test_world_condition_json_uses_upstream_keys() -> None:
    from runner.core.world import ExpiryArming

    assert WorldCondition().to_json() == {}
    assert WorldCondition(
        expires_after_operations=ExpiryArming(1, ("grant-read",)), broker="granted", restorable=True,
        unarmed=(("hostPolicyFrozen", True),),
    ).to_json() == {
        "expiresAfterOperations": {"operations": 1, "grantIds": ["grant-read"]},
        "broker": "granted", "restorable": True, "hostPolicyFrozen": True,
    }
