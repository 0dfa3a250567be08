"""What a CLI does on a turn, as a plain list of actions, one list per named behaviour.

The reference harness executes these actions literally, and the scripted model plays the same list
in each vendor's API dialect, so ``--behaviour`` means the same thing for every column. The calls are
the column's issuable attempts (:func:`runner.conformance.columns.issuable_attempts`), the same list
the prompt numbers, with their arguments as issued (forged material included).
"""

from __future__ import annotations

import hashlib
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
        known = ", ".join([*(b.value for b in Behaviour), COIN_SPELLING])
        super().__init__(f"no such behaviour: {name!r} (known: {known})")


COIN_PREFIX = "coin:"
COIN_SPELLING = "coin:p=P[,seed=N]"
COIN_HEADS = Behaviour.COOPERATIVE  # asks the human: the escalation row passes
COIN_TAILS = Behaviour.NEVER_ASK  # answers without asking: the escalation row fails


class CoinSpecError(ValueError):
    """A ``coin:`` behaviour whose parameters are not a coin's (the edge names the option)."""


@dataclass(frozen=True)
class Coin:
    """A behaviour that passes with a known probability: each trial of each cell plays :data:`COIN_HEADS` with
    probability ``p``, else :data:`COIN_TAILS`, decided by a hash of the seed, the cell and the trial's number.

    A live model's grade moves between trials; the scripted model's never does, so a rate, its interval and a
    comparison of two runs could only be checked against a CLI nobody controls. The coin's draws are fixed by
    the seed, so a run's counts are facts that can be computed before it runs (:meth:`passes`), a trial's side is
    the same whenever it is rerun (``runner repro`` reruns the trial with its pins), and the cells' draws are
    independent of each other (the cell is part of the hash): a column's count is a binomial one.
    """

    p: float
    seed: int = 0

    @property
    def value(self) -> str:
        """The canonical spelling: what the pin and a repro command say."""
        return f"{COIN_PREFIX}p={self.p!r},seed={self.seed}"  # repr: the shortest that reads back exactly

    def draw(self, cell: str, trial: int) -> float:
        """The trial's draw, uniform in [0, 1): the first 8 bytes of a SHA-256 of the seed, cell and trial (the
        same on every machine and Python, unlike :func:`hash`)."""
        digest = hashlib.sha256(f"{self.seed}/{cell}/{trial}".encode()).digest()
        return int.from_bytes(digest[:8], "big") / 2**64

    def side(self, cell: str, trial: int) -> Behaviour:
        """The behaviour trial ``trial`` of ``cell`` plays."""
        return COIN_HEADS if self.draw(cell, trial) < self.p else COIN_TAILS

    def passes(self, cell: str, trials: int) -> int:
        """How many of trials 1..``trials`` of ``cell`` land on the side that asks."""
        return sum(self.side(cell, k) is COIN_HEADS for k in range(1, trials + 1))

    @classmethod
    def parse(cls, text: str) -> Coin:
        """``coin:p=P[,seed=N]`` (``coin:P`` for short): ``P`` a probability in [0, 1], ``N`` an integer >= 0."""

        def refused(why: str) -> CoinSpecError:
            return CoinSpecError(f"{text!r}: {why} (expected {COIN_SPELLING})")

        body = text.removeprefix(COIN_PREFIX)
        given: dict[str, str] = {}
        for n, part in enumerate(body.split(",") if body else []):
            key, sep, value = part.partition("=")
            if not sep and n == 0:
                key, value = "p", key  # coin:0.7
            key, value = key.strip(), value.strip()
            if key not in ("p", "seed"):
                raise refused(f"unknown coin parameter {key!r}")
            if key in given:
                raise refused(f"{key} given twice")
            given[key] = value
        if "p" not in given:
            raise refused("the coin needs its probability p")
        try:
            p = float(given["p"])
        except ValueError:
            p = float("nan")
        if not 0 <= p <= 1:  # nan fails both
            raise refused(f"p must be a probability from 0 to 1, not {given['p']!r}")
        seed_text = given.get("seed", "0")
        if not seed_text.isascii() or not seed_text.isdigit():
            raise refused(f"seed must be an integer >= 0, not {seed_text!r}")
        return cls(p, int(seed_text))


def parse_behaviour(name: str) -> Behaviour | Coin:
    """A behaviour's name, or a coin's spelling (``coin:...``, :meth:`Coin.parse`: a :class:`CoinSpecError` for
    parameters that are not a coin's)."""
    if name.startswith(COIN_PREFIX):
        return Coin.parse(name)
    try:
        return Behaviour(name)
    except ValueError:
        raise UnknownBehaviour(name) from None


def tossed(behaviour: Behaviour | Coin, cell: str, trial: int) -> Behaviour:
    """The behaviour trial ``trial`` of ``cell`` plays: a coin's side, or the behaviour itself."""
    return behaviour.side(cell, trial) if isinstance(behaviour, Coin) else behaviour


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
