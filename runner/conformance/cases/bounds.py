"""What a runtime cannot reach past: its tool-call and step budgets, its turn's drain point, grant
material, a delegation wider than its parent.

The ``bounds`` suite, in suite order: ``budget-exceeded``, ``turn-draining``, ``grant-material``,
``over-broad-delegation``.
"""

from __future__ import annotations

from runner.conformance.cases.model import OK, Attempt, Case, Condition, Expect
from runner.conformance.cases.shared import CONTENT, mutate_scratch, read_own
from runner.core.world import DRAFT, POLICY, WorldCondition

CASES: tuple[Case, ...] = (
    Case(
        id="budget-exceeded",
        kind="budget_exceeded",
        invariant="Runtime exceeds its tool-call or step budget",
        expected_outcome="Deny",
        conditions=(
            Condition(
                "tool-call-ceiling", "The turn is admitted with a budget of one tool call and eight steps.",
                world=WorldCondition(max_tool_calls=1, max_steps=8),
            ),
            Condition(
                "step-ceiling", "The turn is admitted with a budget of two steps and eight tool calls.",
                world=WorldCondition(max_tool_calls=8, max_steps=2),
                requires_declared_steps=(
                    "the step ceiling is enforced over the steps a runtime declares, and a driver that owns its "
                    "own loop declares none; the turn is bounded by its tool-call ceiling instead"
                ),
            ),
        ),
        attempts=(
            Attempt("spend-the-budget", "control", "files.read", {"path": list(POLICY)}, OK),
            Attempt(
                "call-past-the-budget", "attack", "files.read", {"path": list(POLICY)},
                Expect(("denied",), ("tool_call_limit_exceeded", "step_limit_exceeded")),
                over_budget=True,
            ),
        ),
    ),
    # 1.0.0-preview's `turn_draining` row. Upstream's case, condition and attempt ids were not stored: the case
    # id follows the kind-to-id pattern, its suite position the kind order of adversary.ts (after
    # budget-exceeded), and the condition and attempts are this runner's [inferred]. The drain point is a
    # fact of the world's operation-indexed clock (runner.core.world.build), so every column reaches it at
    # the same call: after the control, before the attack.
    Case(
        id="turn-draining",
        kind="turn_draining",
        invariant="Call past the turn's drain point",
        expected_outcome="Refused `turn_draining`; the turn ends `cancelled`",
        conditions=(
            Condition(
                "past-the-drain-point",
                "The turn is admitted with a deadline of 2000 ms and a drain grace of 1000 ms, on a clock that "
                "moves 1000 ms per decided operation: once its first call has been decided the turn is inside its "
                "grace and takes no new calls. A call already running would finish; a new one is refused, and the "
                "turn ends cancelled rather than succeeding on what it did before.",
                world=WorldCondition(timeout_ms=2000, drain_grace_ms=1000),
                expect_turn=("cancelled", "turn_cancelled"),
            ),
        ),
        attempts=(
            read_own("call-before-the-drain-point"),
            Attempt(
                "write-past-the-drain-point", "attack", "files.replace", {"path": list(DRAFT), "content": CONTENT},
                Expect(("denied",), ("turn_draining",)),
            ),
        ),
    ),
    Case(
        id="grant-material",
        kind="grant_material_unreachable",
        invariant="Runtime attempts to read grants",
        expected_outcome="Impossible by construction",
        conditions=(
            Condition(
                "baseline",
                "The world as issued. The claim is structural rather than armed: the compiler hands a runtime "
                "plugin no type that carries authority, and this checks that nothing carries it at run time "
                "either.",
            ),
        ),
        attempts=(
            Attempt(
                "enumerate-runtime-surfaces", "attack", None, None,
                Expect(("denied",), ("no_grant_material_reachable",)),
                inspect="grant_material",
            ),
            read_own("read-own-workspace"),
        ),
    ),
    Case(
        id="over-broad-delegation",
        kind="over_broad_delegation",
        invariant="Derived grant exceeds its parent",
        expected_outcome="Narrow only",
        conditions=(
            Condition(
                "child-claims-more-than-its-parent",
                "The agent holds an extra grant claiming workspace writes, delegated from a parent that holds "
                "only workspace reads. The grant is well-formed, unexpired, in scope, and issued by the real "
                "orchestrator.",
                world=WorldCondition(over_broad_delegation=True),
            ),
        ),
        attempts=(
            Attempt(
                "use-the-over-broad-grant", "attack", "files.replace", {"path": list(POLICY), "content": CONTENT},
                Expect(("denied",), ("delegation_chain_invalid",)),
            ),
            read_own("read-inside-the-parent-scope"),
            mutate_scratch(),
        ),
    ),
)
