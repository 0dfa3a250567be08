"""Rows upstream declares for machinery SharedOS does not have yet (typed views, freshness):
declared so they are reported, never run.

The ``declared`` suite, in suite order: ``typed-governed-views``, ``replay-freshness``.
"""

from __future__ import annotations

from runner.conformance.cases.model import Attempt, Case, Condition, Expect
from runner.core.world import POLICY

CASES: tuple[Case, ...] = (
    Case(
        id="typed-governed-views",
        kind="typed_governed_views",
        invariant="Serve a typed governed view in place of a raw record",
        expected_outcome="Disclosure narrowed to the view's declared fields",
        conditions=(
            Condition(
                "declared",
                "Would arm a resource with a declared typed view and a grant naming the view rather than the "
                "record behind it.",
            ),
        ),
        attempts=(
            Attempt(
                "read-the-raw-record", "attack", "files.read", {"path": list(POLICY)},
                Expect(("denied",), ("view_required",)),
            ),
        ),
        not_implemented=(
            "SharedOS has no view layer. Resources are served whole or refused, so there is nothing between a "
            "raw record and a denial for a row about narrowing disclosure to measure."
        ),
    ),
    Case(
        id="replay-freshness",
        kind="replay_freshness",
        invariant="Replay a recorded turn against a freshness check",
        expected_outcome="Replay succeeds 0% of the time",
        conditions=(
            Condition(
                "declared",
                "Would arm a recorded turn, then re-issue its calls verbatim against a host that tracks what it "
                "has already accepted.",
            ),
        ),
        attempts=(
            Attempt(
                "replay-a-recorded-call", "attack", "files.read", {"path": list(POLICY)},
                Expect(("denied",), ("stale_request",)),
            ),
        ),
        not_implemented=(
            "SharedOS has no freshness port. A call carries its own instant and identifiers and nothing rejects "
            "one for having been seen before, so a replay is indistinguishable from a repeat."
        ),
    ),
)
