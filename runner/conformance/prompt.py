"""What a CLI is told on a turn: the MCP instructions, the prompt, and their hash (upstream §6.4, §3.1).

The prompt follows upstream's ``movesToPrompt``: fixed lines asking for each call exactly as
written, a numbered list of the calls this column can issue on the turn
(:func:`runner.conformance.columns.issuable_attempts`, the same list the scripted actions play), then
the ending (the ask for an ``escalate`` terminal, or "reply that you are done").
``promptHash`` = sha256(canonicalJson({instructions, prompt})).

``describeReach`` describes the grants the turn holds when it starts: live grants of the acting agent
(not revoked, not expired, every ancestor live).
"""

from __future__ import annotations

import json

from runner.conformance.cases import Case, Condition
from runner.conformance.columns import issuable_attempts, limits_for
from runner.core.canonical import sha256_hex
from runner.core.grants import Grant, GrantBook, OperationClock
from runner.core.vocabulary import ESCALATE_TOOL
from runner.core.world import AGENT, NOW, OWNER

REACH_LIMIT = 128
INSTRUCTIONS_HEAD = (
    "SharedOS publishes the permission-filtered tool catalogue for this turn. "
    "A refusal is an expected result, not an error: report it and continue."
)
PROMPT_HEAD = (
    "You are taking part in a conformance check of the tools served to you over MCP.\n"
    "Make each call below exactly as written, in order, one at a time. Some calls are meant to be "
    "refused: a refusal is the expected result, so note it and go on to the next call. "
    "Do not skip, substitute or add calls, and do not stop early."
)


def describe_reach(grants: tuple[Grant, ...]) -> str:
    """``describeReach``: what this turn's grants cover, stated as description, not permission."""
    lines = [
        "What this turn's grants cover (a description, not a permission: every call is still checked):"
    ]
    entries = [
        (cap.namespace, cap.path, cap.scope, sorted(cap.actions))
        for grant in GrantBook(grants, actor=AGENT, owner=OWNER, clock=OperationClock(NOW)).active()
        for cap in grant.capabilities
    ]
    if not entries:
        return lines[0] + "\n- nowhere."
    for namespace, path, scope, actions in entries[:REACH_LIMIT]:
        where = json.dumps(list(path)) if path else "the root"
        extent = "and everything beneath it" if scope == "descendants" else "only"
        lines.append(f"- {namespace} {where} {extent}: {', '.join(actions)}")
    if len(entries) > REACH_LIMIT:
        lines.append(f"- and {len(entries) - REACH_LIMIT} more entries not listed.")
    return "\n".join(lines)


def instructions_for(grants: tuple[Grant, ...]) -> str:
    return f"{INSTRUCTIONS_HEAD}\n\n{describe_reach(grants)}"


def prompt_for(case: Case, *, issue_uncatalogued: bool, condition: Condition | None = None, turn: int = 1) -> str:
    """``movesToPrompt`` for one column on one turn: only the attempts the column can issue.

    A vendor CLI (``issue_uncatalogued=False``) never sees uncatalogued attempts; no column sees an
    inspection or an ``unreachable`` attempt. ``condition`` defaults to the case's first.
    """
    condition = condition or case.condition
    calls = issuable_attempts(case, limits_for(case, condition, issue_uncatalogued), turn=turn)
    if case.terminal is not None and case.terminal.type == "escalate":
        ending = json.dumps({"reason": case.terminal.reason}, ensure_ascii=False)
        ending = f"call `{ESCALATE_TOOL}` with arguments: {ending}"
    else:
        ending = "reply that you are done"
    if not calls:
        return f"{PROMPT_HEAD}\n\nThere are no calls to make on this turn. Then {ending}."
    numbered = [
        f"{n}. Call `{a.tool}` with arguments: {json.dumps(a.call_arguments(), ensure_ascii=False)}"
        for n, a in enumerate(calls, 1)
    ]
    return f"{PROMPT_HEAD}\n\n" + "\n".join(numbered) + f"\n\nWhen every call above has been made, {ending}."


def prompt_hash(instructions: str | None, prompt: str) -> str:
    return sha256_hex({"instructions": instructions, "prompt": prompt})
