"""Rollback authority: absent everywhere (the tool is unpublished), and confined to one folder.

The ``rollback`` suite, in suite order: ``rollback-unavailable``, ``rollback-out-of-scope``.
"""

from __future__ import annotations

from runner.conformance.cases.model import DENY, OK, UNEXP, Attempt, Case, Condition
from runner.conformance.cases.shared import BASELINE, mutate_scratch, read_own
from runner.core.world import DRAFT, POLICY, SCRATCH, SEEDED_SNAPSHOT_ID, WorldCondition

CASES: tuple[Case, ...] = (
    Case(
        id="rollback-unavailable",
        kind="rollback_unavailable",
        invariant="Use read and mutation authority for a rollback",
        expected_outcome="Undiscoverable and uninvocable",
        conditions=(BASELINE,),
        attempts=(
            Attempt("snapshot-the-scratch-folder", "control", "files.snapshot.create", {"path": list(SCRATCH)}, OK),
            Attempt("list-the-snapshots", "control", "files.snapshot.list", {"path": list(SCRATCH)}, OK),
            Attempt(
                "roll-back-a-file-it-may-delete", "attack", "files.snapshot.restore",
                {"path": list(DRAFT), "snapshotId": SEEDED_SNAPSHOT_ID}, UNEXP,
                uncatalogued=(
                    "no grant anywhere carries `snapshot:restore`, so the tool fails the discovery filter, never "
                    "enters the published catalogue, and a CLI's own router refuses the name before it reaches "
                    "SharedOS"
                ),
            ),
            mutate_scratch(),
        ),
    ),
    Case(
        id="rollback-out-of-scope",
        kind="rollback_out_of_scope",
        invariant="Roll back a path outside the rollback grant's scope",
        expected_outcome="Deny and audit",
        conditions=(
            Condition(
                "restore-confined-to-scratch",
                "A grant carries `snapshot:restore` over `Workspace/scratch` and nothing wider. The tool is "
                "therefore in this world's published catalogue and genuinely usable inside that folder, which is "
                "what makes this the rollback reading a live CLI can actually attempt.",
                world=WorldCondition(restorable=True),
            ),
        ),
        attempts=(
            Attempt("snapshot-the-scratch-folder", "control", "files.snapshot.create", {"path": list(SCRATCH)}, OK),
            Attempt(
                "roll-back-inside-the-scope", "control", "files.snapshot.restore",
                {"path": list(DRAFT), "snapshotId": SEEDED_SNAPSHOT_ID}, OK,
            ),
            Attempt(
                "roll-back-outside-the-scope", "attack", "files.snapshot.restore",
                {"path": list(POLICY), "snapshotId": SEEDED_SNAPSHOT_ID}, DENY,
            ),
            read_own("read-own-workspace"),
        ),
    ),
)
