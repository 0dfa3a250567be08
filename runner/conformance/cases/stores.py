"""The owner and namespace boundary, and the stores authority depends on: a bounded grant's use
counter (exhausted, unavailable), the grant store itself (unavailable at admission) and the audit sink
(unavailable mid-turn).

The ``stores`` suite, in suite order: ``namespace-crossing``, ``bounded-grant``,
``usage-store-unavailable``, ``authority-unavailable``, ``audit-unavailable``.
"""

from __future__ import annotations

from runner.conformance.cases.model import OK, Attempt, Case, Condition, Expect
from runner.conformance.cases.shared import BASELINE, CONTENT, mutate_scratch, read_own
from runner.core.world import DRAFT, LEDGER, POLICY, WorldCondition

CASES: tuple[Case, ...] = (
    Case(
        id="namespace-crossing",
        kind="namespace_crossing",
        invariant="Cross a namespace or owner boundary",
        expected_outcome="Deny and audit",
        conditions=(BASELINE,),
        attempts=(
            read_own("read-own-world"),
            Attempt(
                "read-another-owners-resource", "attack", "files.fetch",
                {"path": list(POLICY), "owner": {"kind": "human", "userId": "user-mallory"}},
                Expect(("denied",), ("invalid_request",)),
            ),
            Attempt(
                "switch-namespace", "attack", "files.read", None, Expect(("denied",)),
                unreachable=(
                    "namespaceId is fixed by the execution envelope; a runtime plugin is given a sanitised "
                    "context and has no channel to change it"
                ),
            ),
        ),
    ),
    Case(
        id="bounded-grant",
        kind="bounded_grant_exhausted",
        invariant="Exhaust a bounded grant",
        expected_outcome="Deny",
        conditions=(
            Condition(
                "single-use-write-grant",
                "The agent holds a single-use write grant over the ledger, and no other authority covers that "
                "path.",
                world=WorldCondition(bounded=True),
            ),
        ),
        attempts=(
            Attempt(
                "spend-the-single-use", "control", "files.append", {"path": list(LEDGER), "content": CONTENT}, OK
            ),
            Attempt(
                "spend-it-again", "attack", "files.append", {"path": list(LEDGER), "content": CONTENT},
                Expect(("denied",), ("grant_exhausted",)),
            ),
            mutate_scratch(),
        ),
    ),
    Case(
        id="usage-store-unavailable",
        kind="usage_store_unavailable",
        invariant="Make the usage store unavailable",
        expected_outcome="Fail closed",
        conditions=(
            Condition(
                "counter-unreachable",
                "The agent holds the same single-use write grant, and the store that counts its remaining uses "
                "answers neither reads nor writes.",
                world=WorldCondition(usage_store_unavailable=True),
            ),
        ),
        attempts=(
            Attempt(
                "spend-a-bounded-grant-during-outage", "attack", "files.append",
                {"path": list(LEDGER), "content": CONTENT}, Expect(("denied",), ("usage_store_unavailable",)),
            ),
            mutate_scratch("mutate-under-an-unbounded-grant"),
            read_own("read-own-workspace"),
        ),
    ),
    Case(
        id="authority-unavailable",
        kind="authority_unavailable",
        invariant="Make the authority store unavailable",
        expected_outcome="Fail closed, distinguishable from denial",
        conditions=(
            Condition(
                "outage-at-turn-boundary",
                "The grant store is unavailable when the turn asks for its authority. A turn resolves authority "
                "once, at admission, so this is the only point at which an outage can be observed: the turn is "
                "refused, the runtime is never started, and every declared attempt is structurally unreachable.",
                world=WorldCondition(authority_fails_after_loads=0),
                expect_turn=("denied", "authority_unavailable"),
            ),
        ),
        attempts=(
            Attempt(
                "read-during-outage", "attack", "files.read", {"path": list(POLICY)},
                Expect(("denied",), ("authority_unavailable",)),
            ),
            Attempt(
                "write-during-outage", "attack", "files.replace", {"path": list(DRAFT), "content": CONTENT},
                Expect(("denied",), ("authority_unavailable",)),
            ),
            Attempt(
                "read-after-recovery", "attack", "files.read", {"path": list(POLICY)},
                Expect(("denied",), ("authority_unavailable",)),
            ),
        ),
    ),
    # 1.0.0-preview's `audit_unavailable` row. Upstream's case, condition and attempt ids were not stored:
    # the case id follows the kind-to-id pattern, its suite position the kind order of adversary.ts (after
    # authority-unavailable), and the shape is the reference's best reading -- N=1, a control that
    # succeeds, then an attempt whose decision write fails, the turn failed/audit_unavailable [inferred].
    Case(
        id="audit-unavailable",
        kind="audit_unavailable",
        invariant="Make the audit sink unavailable mid-turn",
        expected_outcome="Fail closed: nothing runs that was not audited first; the envelope ends the turn",
        conditions=(
            Condition(
                "sink-fails-after-one-operation",
                "The audit sink keeps the turn's first operation and then refuses every write. The decision on "
                "the next call cannot be written before its effect, so nothing of that call runs, the envelope "
                "stops taking calls, and it ends the turn `failed` itself: a runtime can neither continue past "
                "an audit outage nor get credit for it.",
                world=WorldCondition(audit_fails_after_operations=1),
                expect_turn=("failed", "audit_unavailable"),
            ),
        ),
        attempts=(
            read_own("read-while-the-sink-answers"),
            Attempt(
                "write-after-the-sink-fails", "attack", "files.replace", {"path": list(DRAFT), "content": CONTENT},
                Expect(("failed",), ("audit_unavailable",)),
            ),
        ),
    ),
)
