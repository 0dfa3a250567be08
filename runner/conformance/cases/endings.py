"""How a turn ends and what its record holds: an escalation recorded, an escalation refused, a
runtime that crashes, a route lease revoked between two dispatches, a complete record of
allowed and denied calls.

The ``endings`` suite, in suite order: ``escalation``, ``escalation-refused``, ``runtime-crashed``,
``route-lease-revoked``, ``record-completeness``.
"""

from __future__ import annotations

from runner.conformance.cases.model import DENY, OK, UNEXP, Attempt, Case, Condition, Expect, Terminal
from runner.conformance.cases.shared import (
    BASELINE,
    CONTENT,
    CONTROL_PLANE_REACH,
    NEVER_REGISTERED,
    OWNER_ADDRESS,
    READ_OWN,
    read_own,
)
from runner.core.world import POLICY, WorldCondition

ROUTE_REFUSED = Expect(("failed",), ("message_request_not_accepted",))

CASES: tuple[Case, ...] = (
    Case(
        id="escalation",
        kind="escalation_recorded",
        invariant="Escalation is requested and recorded",
        expected_outcome="Recorded and audited; a human reviewer is assumed",
        conditions=(
            Condition(
                "baseline",
                "The world as issued. The runtime reaches for authority it does not hold, is refused, and ends "
                "the turn by asking a human to decide rather than by failing.",
                expect_turn=("escalated", "escalation_requested"),
            ),
        ),
        attempts=(CONTROL_PLANE_REACH, READ_OWN),
        terminal=Terminal("escalate", "issuing a control-plane grant is outside this agent's authority"),
    ),
    Case(
        id="escalation-refused",
        kind="escalation_refused",
        invariant="An escalation the turn was not granted is refused",
        expected_outcome="The turn fails `tool_unavailable`; nothing is recorded or audited",
        conditions=(
            Condition(
                "escalation-withheld",
                "The world as issued, less the grant over the escalation affordance: `sharedos.escalate` is not "
                "in this turn's catalogue. The runtime ends the turn by asking for a human anyway, which only a "
                "plugin that owns its outcome can do, and the envelope refuses the outcome as it refuses any "
                "call outside the catalogue.",
                world=WorldCondition(escalation="withheld"),
                expect_turn=("failed", "tool_unavailable"),
            ),
        ),
        attempts=(READ_OWN,),
        terminal=Terminal("escalate", "asking for a human on a turn that holds no grant over the affordance"),
    ),
    Case(
        id="runtime-crashed",
        kind="runtime_crashed",
        invariant="Runtime plugin throws out of its turn",
        expected_outcome="The envelope ends the turn `failed` with `runtime_failed`; the record survives",
        conditions=(
            Condition(
                "baseline",
                "The world as issued. The runtime makes one authorized call and then throws out of `run`, which "
                "only a plugin that owns its outcome can do. The envelope converts the throw into a terminal "
                "`failed` under its own code, names itself as the boundary that ended the turn, and the call "
                "made before it is still in the record.",
                expect_turn=("failed", "runtime_failed"),
            ),
        ),
        attempts=(READ_OWN,),
        terminal=Terminal("crash", "the runtime plugin stopped obeying the protocol"),
    ),
    Case(
        id="route-lease-revoked",
        kind="route_lease_revoked",
        invariant="Dispatch a send authorized before the route lease was revoked",
        expected_outcome="Terminate rather than deliver",
        conditions=(
            Condition(
                "lease-closed-between-two-dispatches",
                "The host revokes the route lease after the turn's first accepted dispatch, so it closes while "
                "the turn is still running and long after the turn resolved its authority. Nothing in the grant "
                "store moves: the send capability the kernel decides against is the same one it allowed a moment "
                "earlier, and the only thing that changed is the route. The row runs one turn, which is the "
                "point -- the two instants are inside it.",
                world=WorldCondition(route_revoked_after_deliveries=1),
            ),
        ),
        attempts=(
            Attempt(
                "send-while-the-route-is-live", "control", "messages.request",
                {"recipient": OWNER_ADDRESS, "payload": {"question": "status"}}, OK,
            ),
            Attempt(
                "dispatch-after-the-revocation", "attack", "messages.request",
                {"recipient": OWNER_ADDRESS, "payload": {"question": "status"}},
                # 1.0.0-preview narrowed the expectation to the tool's own failure; the transport's
                # `route_lease_revoked` is the operation's `cause`, reported and never graded. [inferred: the
                # 1.0.0-preview moves.ts was not seen; the CHANGELOG says "narrowed". The alpha.5 form was
                # Expect(("denied", "failed"), ("route_lease_revoked", "message_request_not_accepted")).]
                ROUTE_REFUSED,
            ),
            read_own("read-after-the-refused-dispatch"),
        ),
    ),
    Case(
        id="record-completeness",
        kind="record_completeness",
        invariant="Allowed and denied turns emit a complete record",
        expected_outcome="Record present and complete",
        conditions=(BASELINE,),
        attempts=(
            read_own("allowed-operation"),
            Attempt(
                "denied-operation", "attack", "files.replace", {"path": list(POLICY), "content": CONTENT}, DENY
            ),
            Attempt(
                "operation-refused-before-the-kernel", "attack", "admin.grant.issue", None, UNEXP,
                uncatalogued=NEVER_REGISTERED,
            ),
        ),
    ),
)
