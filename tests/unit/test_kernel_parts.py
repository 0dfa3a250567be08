"""The kernel parts issue 19 adds to the pure core, each on its own: the host ceiling, the usage store, turn
admission from a grant store that can fail or revoke, the delegation chain verifier, the per-turn provider
listing (ADR 0026), the message route lease (ADR 0025), the audit sink's outage (ADR 0023), the drain point,
and ADR 0019's ``requiredAuthority``."""

from __future__ import annotations

import dataclasses

import anyio
import pytest

from runner.core.admission import AuthorityUnavailable, GrantStore
from runner.core.audit import AuditLog, AuditUnavailable
from runner.core.envelope import Envelope, ServerIdentity
from runner.core.grants import Decision, Requirement, UnavailableUsageStore, required_authority
from runner.core.outcomes import Complete, ToolCall, ToolResult
from runner.core.vocabulary import Code, ExecutionStatus, fail_closed
from runner.core.world import (
    AGENT,
    DRAFT,
    LEDGER,
    NOW,
    OWNER,
    POLICY,
    READ_GRANT,
    RevocationArming,
    WorldCondition,
    build_world,
)

RUNTIME = ServerIdentity("runner.test", "0")


def call(envelope: Envelope, n: int, tool: str, **arguments: object) -> ToolResult:
    return anyio.run(envelope.invoke_tool, ToolCall(f"c{n}", tool, dict(arguments)))


def read(path: tuple[str, ...]) -> Requirement:
    return Requirement("files", path, "read", OWNER)


# --- the host ceiling (ADR 0020) ------------------------------------------------------------------------------


def test_the_frozen_ceiling_overrides_a_matching_grant_and_hides_the_mutation_tools() -> None:
    world = build_world(WorldCondition(host_policy_frozen=True))
    decision = world.book.authorize(read(LEDGER))
    assert decision.code is Code.HOST_POLICY_DENIED and decision.grant_id == READ_GRANT
    assert decision.metadata == {"rule": "ledger-frozen"}
    assert world.book.authorize(read(POLICY)).allowed
    envelope = Envelope(world, "t", RUNTIME)
    baseline = Envelope(build_world(), "b", RUNTIME)
    hidden = baseline.catalogue.names - envelope.catalogue.names
    assert hidden == {"files.create", "files.replace", "files.append", "files.delete"}
    assert len(baseline.catalogue.names) == 17 and len(envelope.catalogue.names) == 13
    refused = call(envelope, 1, "files.append", path=list(DRAFT), content="x")
    assert refused.error is not None and refused.error.code == "tool_unavailable"


class Raising:
    def narrow(self, request: Requirement, decision: Decision) -> Decision:
        raise RuntimeError("the policy service is down")


class Returning:
    def __init__(self, answer: object) -> None:
        self.answer = answer

    def narrow(self, request: Requirement, decision: Decision) -> Decision:
        return self.answer  # type: ignore[return-value]


@pytest.mark.parametrize("ceiling", [
    Raising(),
    Returning(None),  # malformed
    Returning(Decision(Code.ALLOWED, "grant-scratch")),  # an allow naming another grant
])
def test_a_ceiling_that_fails_or_answers_wrongly_fails_closed(ceiling: object) -> None:
    book = dataclasses.replace(build_world().book, ceiling=ceiling)  # type: ignore[arg-type]
    decision = book.authorize(read(POLICY))
    assert decision.code is Code.HOST_POLICY_UNAVAILABLE and fail_closed(decision.code.value)
    if not isinstance(ceiling, Returning) or ceiling.answer is None:  # (that allow is right for grant-scratch)
        assert not book.discoverable("files", "read")


def test_a_ceiling_refusal_under_another_code_is_host_policy_denied() -> None:
    book = dataclasses.replace(build_world().book, ceiling=Returning(Decision(Code.NO_MATCHING_GRANT)))
    assert book.authorize(read(POLICY)).code is Code.HOST_POLICY_DENIED


# --- the usage store ------------------------------------------------------------------------------------------


def test_a_bounded_grant_fails_closed_when_its_store_is_unreachable_and_unbounded_ones_never_ask() -> None:
    world = build_world(WorldCondition(usage_store_unavailable=True))
    assert isinstance(world.usage, UnavailableUsageStore)
    append = Requirement("files", LEDGER, "append", OWNER)
    decision = world.book.authorize(append)
    assert decision.code is Code.USAGE_STORE_UNAVAILABLE and decision.grant_id == "grant-ledger"
    assert world.book.authorize(Requirement("files", DRAFT, "replace", OWNER)).allowed
    envelope = Envelope(world, "t", RUNTIME)
    call(envelope, 1, "files.append", path=list(LEDGER), content="x")
    assert envelope.operations[0]["reasonCode"] == "usage_store_unavailable"
    assert envelope.operations[0]["failClosed"] is True


def test_the_usage_count_outlives_a_turn() -> None:
    world = build_world(WorldCondition(bounded=True))
    append = Requirement("files", LEDGER, "append", OWNER)
    assert world.book.authorize(append).allowed
    world.open_turn()
    assert world.book.authorize(append).code is Code.GRANT_EXHAUSTED


# --- admission and the grant store -----------------------------------------------------------------------------


def test_an_outage_at_the_turn_boundary_refuses_the_turn_before_anything_starts() -> None:
    world = build_world(WorldCondition(authority_fails_after_loads=0))
    assert world.admission.code is Code.AUTHORITY_UNAVAILABLE and world.admission.fail_closed
    envelope = Envelope(world, "t", RUNTIME)
    assert envelope.refused and envelope.refusal is not None
    assert envelope.refusal.status is ExecutionStatus.DENIED and envelope.refusal.reason_code == "authority_unavailable"
    assert [e["type"] for e in envelope.events] == ["turn.denied"]
    assert envelope.catalogue.names == frozenset()
    # whatever a runtime would say, the refusal stands; nothing can be mediated
    assert envelope.settle(Complete("done")) is envelope.refusal
    record = envelope.record(envelope.refusal)
    assert record["execution"]["endedBy"] == "envelope"
    assert [e["type"] for e in record["audit"]] == ["authority.resolved", "turn.ended"]


def test_a_store_counts_every_load_and_fails_after_the_nth() -> None:
    store = GrantStore(list(build_world().grants), fails_after_loads=1)
    assert store.load()
    with pytest.raises(AuthorityUnavailable):
        store.load()
    assert store.loads == 2


def test_a_revocation_after_a_load_reaches_the_next_turn_not_the_running_one() -> None:
    world = build_world(WorldCondition(revoked_after_turn=RevocationArming(1, (READ_GRANT,))))
    assert world.book.authorize(read(POLICY)).allowed  # turn 1 holds what it loaded
    assert any(g.id == READ_GRANT and g.revoked for g in world.store.grants)  # the store moved already
    world.open_turn()
    assert world.turn == 2
    denied = world.book.authorize(read(POLICY))
    assert denied.code is Code.NO_MATCHING_GRANT
    assert world.book.authorize(read(DRAFT)).allowed  # the scratch grant still reads its own folder
    assert world.book.discoverable("files", "read")


def test_a_turn_no_grant_admits_is_denied_no_matching_grant() -> None:
    world = build_world()
    world.store.revoke("grant-turn")
    assert world.open_turn().code is Code.NO_MATCHING_GRANT
    assert Envelope(world, "t", RUNTIME).refusal is not None


# --- the delegation chain verifier ----------------------------------------------------------------------------


def test_a_grant_claiming_more_than_its_parent_is_refused_with_the_broken_link_named() -> None:
    world = build_world(WorldCondition(over_broad_delegation=True))
    replace = Requirement("files", POLICY, "replace", OWNER)
    decision = world.book.authorize(replace)
    assert decision.code is Code.DELEGATION_CHAIN_INVALID
    assert decision.metadata == {"delegation": {"code": "capability_widened", "grantId": "grant-overbroad"}}
    assert world.book.authorize(read(POLICY)).allowed  # reads are inside what the parent holds


def test_every_grant_the_world_issues_has_a_valid_chain() -> None:
    book = build_world(WorldCondition(bounded=True, restorable=True, broker="granted")).book
    assert [g.id for g in book.grants if book.verify_chain(g) is not None] == []


def test_chain_rules_issuer_depth_and_a_missing_parent() -> None:
    book = build_world().book
    grant = next(g for g in book.grants if g.id == READ_GRANT)
    wrong_issuer = dataclasses.replace(grant, issuer=OWNER)
    too_deep = dataclasses.replace(grant, delegation_depth=2)
    orphan = dataclasses.replace(grant, parent_grant_id="grant-nowhere")
    codes = {}
    for name, g in (("issuer", wrong_issuer), ("depth", too_deep), ("orphan", orphan)):
        found = book.verify_chain(g)
        assert found is not None and found.metadata is not None
        codes[name] = (found.code, found.metadata["delegation"]["code"])  # type: ignore[index]
    assert codes == {
        "issuer": (Code.DELEGATION_CHAIN_INVALID, "issuer_not_parent_subject"),
        "depth": (Code.DELEGATION_CHAIN_INVALID, "delegation_depth_exceeded"),
        "orphan": (Code.DELEGATION_CHAIN_UNVERIFIED, "parent_not_found"),
    }


# --- the provider listing held for the turn (ADR 0026) --------------------------------------------------------


def test_a_turn_answers_from_the_listing_it_published_and_a_relisting_kernel_would_not() -> None:
    world = build_world(WorldCondition(broker_moved_after_listing=True))
    envelope = Envelope(world, "t", RUNTIME)
    assert "notion.search" in envelope.catalogue.names
    ok = call(envelope, 1, "notion.search", path=["Handbook", "onboarding"])
    assert ok.status.value == "succeeded"
    outside = call(envelope, 2, "notion.search", path=["Payroll", "salaries"])
    assert outside.error is not None and outside.error.code == "no_matching_grant"
    # what a kernel that re-listed per call would see: the same name, moved onto an action no grant carries
    moved = world.registry()["notion.search"]
    assert moved.action == "administer"
    assert not world.book.discoverable(moved.resource_namespace, moved.action, moved.ceiling)


# --- the route lease (ADR 0025) -------------------------------------------------------------------------------


def test_a_dispatch_after_the_lease_closed_fails_with_the_transport_code_as_cause() -> None:
    world = build_world(WorldCondition(route_revoked_after_deliveries=1))
    envelope = Envelope(world, "t", RUNTIME)
    recipient = {"kind": "human", "userId": "user-alice"}
    assert call(envelope, 1, "messages.request", recipient=recipient, payload={}).status.value == "succeeded"
    refused = call(envelope, 2, "messages.request", recipient=recipient, payload={})
    assert refused.status.value == "failed" and refused.error is not None
    assert refused.error.code == "message_request_not_accepted"
    assert envelope.operations[1]["cause"] == "route_lease_revoked" and envelope.operations[1]["source"] == "kernel"
    receipts = [r.to_json() for r in world.state.transport.receipts]
    assert [r["status"] for r in receipts] == ["accepted", "denied"]  # the transport's receipt, kept verbatim
    assert receipts[1]["error"]["code"] == "route_lease_revoked"  # type: ignore[index,call-overload]


# --- the audit sink (ADR 0023) ---------------------------------------------------------------------------------


def test_an_audit_outage_interrupts_the_call_drains_the_turn_and_fails_it() -> None:
    world = build_world(WorldCondition(audit_fails_after_operations=1))
    envelope = Envelope(world, "t", RUNTIME)
    assert call(envelope, 1, "files.read", path=list(POLICY)).status.value == "succeeded"
    interrupted = call(envelope, 2, "files.replace", path=list(DRAFT), content="x")
    assert interrupted.error is not None and interrupted.error.code == "audit_unavailable"
    assert world.state.files[DRAFT] == "draft\n"  # nothing ran
    later = call(envelope, 3, "files.read", path=list(POLICY))
    assert later.error is not None and later.error.code == "turn_draining"
    assert [op["outcome"] for op in envelope.operations] == ["succeeded", "interrupted", "denied"]
    result = envelope.settle(Complete("the runtime thinks it finished"))
    assert (result.status, result.reason_code) == (ExecutionStatus.FAILED, "audit_unavailable")
    assert result.error is not None and result.error.retryable is True  # no write took effect
    assert envelope.events[-1]["data"] == {"code": "audit_unavailable", "source": "envelope"}
    assert envelope.record(result)["execution"]["endedBy"] == "envelope"
    assert world.audit.errors  # the writes after the effect failed, and changed no answer


def test_an_audit_write_after_the_effect_never_changes_the_answer() -> None:
    log = AuditLog(fails_after_operations=0)
    with pytest.raises(AuditUnavailable):
        log.write("authorization.checked", {})
    log.after_effect("tool.invoked", {})
    assert log.events == [] and len(log.errors) == 1


# --- the drain point ----------------------------------------------------------------------------------------


def test_past_the_drain_point_new_calls_are_refused_and_the_turn_is_cancelled() -> None:
    world = build_world(WorldCondition(timeout_ms=2000, drain_grace_ms=1000))
    envelope = Envelope(world, "t", RUNTIME)
    assert not world.draining()
    assert call(envelope, 1, "files.replace", path=list(DRAFT), content="x").status.value == "succeeded"
    assert world.draining()
    refused = call(envelope, 2, "files.read", path=list(POLICY))
    assert refused.error is not None and refused.error.code == "turn_draining"
    assert envelope.operations[1]["source"] == "envelope"
    result = envelope.settle(Complete("done"))
    assert (result.status, result.reason_code) == (ExecutionStatus.CANCELLED, "turn_cancelled")
    assert result.error is not None and result.error.retryable is False  # a write took effect


# --- requiredAuthority (ADR 0019) ----------------------------------------------------------------------------


def test_no_matching_grant_names_the_authority_it_needs_and_nothing_else_does() -> None:
    world = build_world()
    mutate = Requirement("files", POLICY, "replace", OWNER)
    denied = world.book.authorize(mutate)
    assert denied.code is Code.NO_MATCHING_GRANT and denied.required_authority is not None
    minted = dict(denied.required_authority)
    assert str(minted["id"]).startswith("capreq-") and minted["requestedAt"] == NOW
    assert minted["capabilities"] == [{
        "resource": {"namespace": "files", "path": list(POLICY), "owner": {"kind": "human", "userId": "user-alice"}},
        "actions": ["replace"], "scope": "exact",
    }]
    # the id does not move with the instant: the same missing authority has the same id on every turn
    later = required_authority(mutate, namespace_id="world-conformance", requester=AGENT,
                               purpose="conformance-probe", now="2026-09-01T00:00:00.000Z")
    assert later["id"] == minted["id"]
    assert world.book.discover("notion", (), "search").required_authority is None
    assert world.book.authorize(read(POLICY)).required_authority is None
    envelope = Envelope(build_world(), "t", RUNTIME)
    call(envelope, 1, "files.replace", path=list(POLICY), content="x")
    checked = [e for e in envelope.world.audit.events if e["type"] == "authorization.checked"]
    assert checked[-1]["requiredAuthority"]["id"] == minted["id"]  # type: ignore[index,call-overload]


def test_an_infrastructure_denial_is_marked_fail_closed_in_the_audit() -> None:
    """Upstream leaves fail-closed refusals out of its denial rates: the audit marks them, the others not."""
    world = build_world(WorldCondition(usage_store_unavailable=True))
    envelope = Envelope(world, "t", RUNTIME)
    call(envelope, 1, "files.read", path=list(POLICY))  # allowed
    call(envelope, 2, "files.replace", path=list(POLICY), content="x")  # denied: no_matching_grant
    call(envelope, 3, "files.append", path=list(LEDGER), content="x")  # usage_store_unavailable: fail-closed
    checked = [e for e in world.audit.events if e["type"] == "authorization.checked"]
    assert [e.get("failClosed") for e in checked] == [None, None, True]
    assert [e.get("outcome") for e in checked][:2] == ["allowed", "denied"]
