"""What a CLI does on a turn, as a plain list of actions, one list per named behaviour.

The reference harness executes these actions literally, and the scripted model plays the same list
in each vendor's API dialect, so ``--behaviour`` means the same thing for every column. The calls are
the column's issuable attempts (:func:`runner.conformance.columns.issuable_attempts`), the same list
the prompt numbers, with their arguments as issued (forged material included).
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import TYPE_CHECKING

from runner.core.vocabulary import ESCALATE_TOOL
from runner.errors import UnknownName

if TYPE_CHECKING:  # the names alone stay cheap to import: the command line's --help lists them
    from runner.conformance.cases import Case, Condition
    from runner.core.outcomes import JsonValue

FLOOD_BYTES = 50 * 1024 * 1024
PERSISTENT_EXTRA_CALLS = 3
CRASH_EXIT_CODE = 3  # the harness dies without a terminal frame (a ``crash`` terminal, ``crash-after-ask``)
FINAL_TEXT = "Done: every call was made, and the decision was handed to a human."


class Behaviour(StrEnum):
    COOPERATIVE = "cooperative"  # the calls, the ask, stop
    PERSISTENT = "persistent"  # three more calls after the ask
    DOUBLE_ASK = "double-ask"
    MALFORMED_ASK = "malformed-ask"  # the ask without a reason
    SKIP_CONTROL = "skip-control"
    CONTROL_AFTER_ASK = "control-after-ask"  # the control call only after the ask: refused, the row not exercised
    NEVER_ASK = "never-ask"
    CRASH_AFTER_ASK = "crash-after-ask"  # exits 3 right after the ask
    HANG_AFTER_ASK = "hang-after-ask"  # never exits, ignores SIGTERM
    FLOOD = "flood"  # 50 MB on stdout, then finishes


class UnknownBehaviour(UnknownName, ValueError):
    def __init__(self, name: str) -> None:
        super().__init__(f"no such behaviour: {name!r} (known: {', '.join(b.value for b in Behaviour)})")


def parse_behaviour(name: str) -> Behaviour:
    try:
        return Behaviour(name)
    except ValueError:
        raise UnknownBehaviour(name) from None


@dataclass(frozen=True)
class Action:
    do: str  # call | say | flood | exit | hang | finish
    tool: str | None = None
    arguments: JsonValue = None
    text: str | None = None
    code: int | None = None
    bytes: int | None = None

    def to_json(self) -> dict[str, JsonValue]:
        return {k: v for k, v in self.__dict__.items() if v is not None}


def call(tool: str, arguments: JsonValue) -> Action:
    return Action("call", tool=tool, arguments=arguments)


def actions_for(
    case: Case,
    behaviour: Behaviour,
    *,
    issue_uncatalogued: bool,
    condition: Condition | None = None,
    turn: int = 1,
) -> list[Action]:
    """The turn's actions: the issuable attempts in declared order, then the ending, shaped by ``behaviour``.

    ``condition`` defaults to the case's first. An ``escalate`` terminal ends with the ask; a ``crash``
    terminal ends with the harness exiting non-zero and no terminal frame; otherwise the turn finishes.
    """
    from runner.conformance.columns import issuable_attempts, limits_for

    condition = condition or case.condition
    issuable = issuable_attempts(case, limits_for(case, condition, issue_uncatalogued), turn=turn)
    attempts = issuable
    if behaviour in (Behaviour.SKIP_CONTROL, Behaviour.CONTROL_AFTER_ASK):
        attempts = [a for a in attempts if a.role != "control"]
    actions = [call(str(a.tool), a.call_arguments()) for a in attempts]
    finish = Action("finish", text=FINAL_TEXT)
    if case.terminal is not None and case.terminal.type == "crash":
        return [*actions, Action("exit", code=CRASH_EXIT_CODE)]
    if case.terminal is None or behaviour is Behaviour.NEVER_ASK:
        return [*actions, finish]
    ask = call(ESCALATE_TOOL, {} if behaviour is Behaviour.MALFORMED_ASK else {"reason": case.terminal.reason})
    actions.append(ask)
    control = next((a for a in issuable if a.role == "control"), None)
    if control is None:
        again = call("files.list", {"path": ["Workspace"]})
    else:
        again = call(str(control.tool), control.call_arguments())
    after: list[Action] = {
        Behaviour.PERSISTENT: [again] * PERSISTENT_EXTRA_CALLS,
        Behaviour.CONTROL_AFTER_ASK: [again],
        Behaviour.DOUBLE_ASK: [ask],
        Behaviour.CRASH_AFTER_ASK: [Action("exit", code=CRASH_EXIT_CODE)],
        Behaviour.HANG_AFTER_ASK: [Action("hang")],
        Behaviour.FLOOD: [Action("flood", bytes=FLOOD_BYTES)],
    }.get(behaviour, [])
    return [*actions, *after, finish]
