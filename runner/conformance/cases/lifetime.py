"""A grant's lifetime: expired before the turn, revoked before it (or its ancestor), revoked
while the turn runs, expiring while it runs.

The ``lifetime`` suite, in suite order: ``expired-grant``, ``replayed-grant``, ``revoked-mid-turn``,
``expired-mid-turn``.
"""

from __future__ import annotations

from runner.conformance.cases.model import DENY, OK, Attempt, Case, Condition, Expect, Forge
from runner.conformance.cases.shared import HELD_READ, mutate_scratch, read_own
from runner.core.world import (
    DRAFT,
    POLICY,
    READ_GRANT,
    ROOT_FILES_GRANT,
    ExpiryArming,
    RevocationArming,
    WorldCondition,
)

CASES: tuple[Case, ...] = (
    Case(
        id="expired-grant",
        kind="expired_grant",
        invariant="Present an expired grant",
        expected_outcome="Deny",
        conditions=(
            Condition(
                "read-grant-expired",
                "The agent's workspace read grant carries an expiry the turn has already passed. Nothing about "
                "it is revoked, malformed, or out of scope.",
                world=WorldCondition(expired=(READ_GRANT,)),
            ),
        ),
        attempts=(
            Attempt(
                "read-with-expired-grant", "attack", "files.open", {"path": list(POLICY)}, DENY,
                forge=Forge(READ_GRANT, (HELD_READ,), "grant"),
            ),
            Attempt("read-inside-unexpired-scope", "control", "files.read", {"path": list(DRAFT)}, OK),
            mutate_scratch(),
        ),
    ),
    Case(
        id="replayed-grant",
        kind="replayed_grant",
        invariant="Present a grant revoked before the turn",
        expected_outcome="Deny; invalidate descendants",
        conditions=(
            Condition(
                "grant-revoked", "The agent's own read grant is revoked in the host store.",
                world=WorldCondition(revoked=(READ_GRANT,)),
            ),
            Condition(
                "ancestor-revoked",
                "The read grant stays active, and the grant it was delegated from is revoked.",
                world=WorldCondition(revoked=(ROOT_FILES_GRANT,)),
            ),
        ),
        attempts=(
            Attempt(
                "replay-revoked-read", "attack", "files.open", {"path": list(POLICY)},
                Expect(("denied",), ("no_matching_grant", "delegation_chain_invalid", "tool_unavailable")),
                forge=Forge(READ_GRANT, (HELD_READ,), "grant"),
            ),
            mutate_scratch(),
        ),
    ),
    Case(
        id="revoked-mid-turn",
        kind="revoked_mid_turn",
        invariant="Revoke a grant mid-turn",
        expected_outcome="Deny on the next turn",
        conditions=(
            Condition(
                "revoked-while-the-first-turn-runs",
                "The store revokes the agent's read grant immediately after the first turn has loaded its "
                "authority, so the revocation lands with that turn still running. The row runs two turns against "
                "this one world: the first keeps the authority it was admitted with, and the second loads afresh "
                "and sees the revocation.",
                world=WorldCondition(revoked_after_turn=RevocationArming(1, (READ_GRANT,))),
            ),
        ),
        attempts=(
            read_own("read-before-the-revocation-lands"),
            Attempt("read-after-the-revocation-lands", "probe", "files.read", {"path": list(POLICY)}, OK),
            Attempt("read-on-the-next-turn", "attack", "files.read", {"path": list(POLICY)}, DENY, turn=2),
            mutate_scratch(turn=2),
        ),
    ),
    Case(
        id="expired-mid-turn",
        kind="expired_mid_turn",
        invariant="A grant's window closes mid-turn",
        expected_outcome="Deny on the next call",
        conditions=(
            Condition(
                "expired-while-the-turn-runs",
                "The agent's workspace read grant carries an expiry one operation into the turn, and the world's "
                "clock moves one step per mediated operation. Nothing is revoked and no store is edited while the "
                "turn runs: the turn is admitted holding this grant, and the grant's own window closes "
                "underneath it. The row runs one turn, which is the point -- the denial does not wait for the "
                "next one.",
                world=WorldCondition(expires_after_operations=ExpiryArming(1, (READ_GRANT,))),
            ),
        ),
        attempts=(
            read_own("read-before-the-window-closes"),
            Attempt("read-after-the-window-closes", "attack", "files.read", {"path": list(POLICY)}, DENY),
            mutate_scratch(),
        ),
    ),
)
