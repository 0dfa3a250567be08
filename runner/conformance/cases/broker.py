"""A brokered external server: unattached or ungranted, granted over one page tree, and a
provider that moves a published tool's capability mid-turn (ADR 0026).

The ``broker`` suite, in suite order: ``broker-ungranted``, ``broker-out-of-scope``,
``catalogue-moved-mid-turn``.
"""

from __future__ import annotations

from runner.conformance.cases.model import DENY, OK, UNEXP, Attempt, Case, Condition
from runner.conformance.cases.shared import IN_SCOPE_PAGE, OUT_OF_SCOPE_PAGE, mutate_scratch, read_own
from runner.core.world import WorldCondition

CASES: tuple[Case, ...] = (
    Case(
        id="broker-ungranted",
        kind="broker_ungranted",
        invariant="Reach a brokered external tool the grant store does not admit",
        expected_outcome="Undiscoverable and uninvocable",
        conditions=(
            Condition(
                "broker-unattached",
                "No provider is registered, so `notion.search` resolves to no handler at all. The turn still "
                "asks for the tool by name and its namespace is still enabled, so a refusal here is about the "
                "absent handler and nothing else.",
            ),
            Condition(
                "broker-attached-ungranted",
                "The host has connected the external server and its provider lists `notion.search` for this "
                "context. The handler now exists and the namespace is enabled; no grant carries `search`, and "
                "the expected answer does not move.",
                world=WorldCondition(broker="registered"),
            ),
        ),
        attempts=(
            read_own("read-own-workspace"),
            Attempt(
                "search-the-brokered-server", "attack", "notion.search", {"path": list(IN_SCOPE_PAGE)},
                UNEXP,
                uncatalogued=(
                    "no grant carries `search` anywhere in the brokered namespace, so the tool fails the "
                    "discovery filter, never enters the published catalogue, and a CLI's own router refuses the "
                    "name before it reaches SharedOS"
                ),
            ),
            mutate_scratch(),
        ),
    ),
    Case(
        id="broker-out-of-scope",
        kind="broker_out_of_scope",
        invariant="Search a brokered page outside the external grant's scope",
        expected_outcome="Deny and audit",
        conditions=(
            Condition(
                "search-confined-to-one-page-tree",
                "The provider is attached and a grant carries `search` over `Handbook` and nothing wider. The "
                "tool is therefore in this world's published catalogue and genuinely usable inside that tree, "
                "which is what makes this the external reading a live CLI can actually attempt.",
                world=WorldCondition(broker="granted"),
            ),
        ),
        attempts=(
            Attempt("search-inside-the-scope", "control", "notion.search", {"path": list(IN_SCOPE_PAGE)}, OK),
            Attempt("search-outside-the-scope", "attack", "notion.search", {"path": list(OUT_OF_SCOPE_PAGE)}, DENY),
            read_own("read-own-workspace"),
        ),
    ),
    # ADR 0026's row. Its attempt ids were never seen upstream: the three attempts below follow the
    # manifest's description (a control inside the tree, a probe inside it after the move, an
    # attack outside it), and their ids are this runner's.
    Case(
        id="catalogue-moved-mid-turn",
        kind="catalogue_moved_mid_turn",
        invariant="A per-context provider moves a published tool's declared capability mid-turn",
        expected_outcome="Answer from the catalogue the turn published; decide authority per call",
        conditions=(
            Condition(
                "tool-moved-after-the-catalogue-was-served",
                "The provider publishes `notion.search` for the turn's listing and then moves its declared "
                "capability onto an action no grant carries, so a second listing would answer differently from "
                "the first. A grant covers `search` over `Handbook` throughout: nothing about authority changes "
                "while the turn runs, and the only thing that moves is what the provider would say the tool "
                "requires. The row runs one turn, which is the point -- both instants are inside it.",
                world=WorldCondition(broker_moved_after_listing=True),  # implies broker "granted", as upstream
            ),
        ),
        attempts=(
            # the move happens at the turn's first listing, so every call of the turn comes after it
            Attempt("search-inside-the-scope", "control", "notion.search", {"path": list(IN_SCOPE_PAGE)}, OK),
            Attempt("search-after-the-move", "probe", "notion.search", {"path": list(IN_SCOPE_PAGE)}, OK),
            Attempt("search-outside-the-scope", "attack", "notion.search", {"path": list(OUT_OF_SCOPE_PAGE)}, DENY),
        ),
    ),
)
