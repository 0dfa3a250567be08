"""The hashes that pin a conformance run (upstream §6.6), and the pins two cells are compared on.

Every hash is the lowercase hex SHA-256 of :func:`runner.core.canonical.canonical_json` of its input
(keys sorted by the ICU-like collation documented there; arrays in order; no whitespace):

- ``case_set_hash(cases)``: the declarations in upstream's ``ConformanceCase`` shape, with every key
  named ``description`` removed at any depth (prose can be reworded without moving the hash);
- ``world_set_hash(cases)``: one entry per case, ``{case, conditions: [{condition, world}]}`` where
  ``world`` is the condition's world description — its overrides, ``namespaceId``,
  ``enabledToolNamespaces``, every grant issued (roots included) and the full registered tool
  definitions, prose included (a description is served to the model, so rewording one is a
  different world). A condition this runner cannot arm is described as declared (its ``unarmed``
  overrides over the baseline world);
- ``prompt_set_hash(entries)``: the list ``[{case, condition, turn, promptHash}]`` in evidence order;
- ``spec_hash(case, condition)``: ``{case, move, condition}`` for one row;
- ``evaluator_hash()``: ``{judge: "sharedos-conformance", version: JUDGE_VERSION}`` (the version is the string
  ``"6"`` since upstream's newer records write it so; the number ``6`` hashed otherwise, so the hash moved with it).

Two cells are comparable only when their :class:`Pins` agree; :func:`comparable` names every pin that
differs (§8 item 14). The judge version is compared as :func:`judge_version_text` reads it: a record written
before the version became a string says ``6``, a newer one ``"6"``, and they are one judge.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Annotated, TypedDict, Unpack

from pydantic import BeforeValidator

from runner.conformance.cases import CASES, Case, Condition
from runner.conformance.judge import JUDGE_ID, JUDGE_VERSION
from runner.core.canonical import sha256_hex
from runner.core.outcomes import JsonValue
from runner.core.world import build_world


def strip_descriptions(value: object) -> object:
    """``value`` with every key named ``description`` removed, at any depth."""
    if isinstance(value, Mapping):
        return {k: strip_descriptions(v) for k, v in value.items() if k != "description"}
    if isinstance(value, list | tuple):
        return [strip_descriptions(v) for v in value]
    return value


def _cases(cases: Iterable[Case] | Mapping[str, Case] | None) -> list[Case]:
    if cases is None:
        return list(CASES.values())
    if isinstance(cases, Mapping):
        return list(cases.values())
    return list(cases)


def case_set_hash(cases: Iterable[Case] | Mapping[str, Case] | None = None) -> str:
    """``caseSetHash`` over the declarations (all of :data:`CASES` by default)."""
    return sha256_hex(strip_descriptions([c.to_json() for c in _cases(cases)]))


def world_description(condition: Condition) -> dict[str, JsonValue]:
    """The world one condition is run against, as ``worldHash`` sees it."""
    return build_world(condition.world, describe_only=True).describe()


def world_set_hash(cases: Iterable[Case] | Mapping[str, Case] | None = None) -> str:
    """``worldSetHash``: every condition's world, per case (all of :data:`CASES` by default)."""
    return sha256_hex(
        [
            {
                "case": case.id,
                "conditions": [{"condition": c.id, "world": world_description(c)} for c in case.conditions],
            }
            for case in _cases(cases)
        ]
    )


def world_hash(condition: Condition) -> str:
    """``worldHash`` for one record: the hash of its condition's world description."""
    return sha256_hex(world_description(condition))


@dataclass(frozen=True)
class PromptEntry:
    """One evidence record's prompt: the row, the turn (1-based) and the turn's ``promptHash``."""

    case: str
    condition: str
    turn: int
    prompt_hash: str

    def to_json(self) -> dict[str, JsonValue]:
        return {"case": self.case, "condition": self.condition, "turn": self.turn, "promptHash": self.prompt_hash}


def prompt_set_hash(entries: Sequence[PromptEntry | Mapping[str, JsonValue]]) -> str | None:
    """``promptSetHash`` for one column: ``None`` when no record carried a ``promptHash``."""
    body = [e.to_json() if isinstance(e, PromptEntry) else dict(e) for e in entries]
    return sha256_hex(body) if body else None


def spec_hash(case: Case, condition: Condition) -> str:
    """``specHash`` for one record: ``{case, move, condition}``."""
    declared = case.to_json()
    return sha256_hex({"case": case.id, "move": declared["move"], "condition": condition.id})


def evaluator_hash() -> str:
    return sha256_hex({"judge": JUDGE_ID, "version": JUDGE_VERSION})


JUDGE_VERSION_KEY = "judgeVersion"


def judge_version_text(value: object) -> str | None:
    """A judge version as a newer record writes it: the string (``"6"``), whether the record held that or an older
    record's number (``6``); None for anything else (absent, a bool, a fraction)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return str(value)
    return value if isinstance(value, str) and value else None


def _judge_version(value: object) -> object:
    text = judge_version_text(value)
    return value if text is None else text  # anything else is left for the field's own check to refuse


# A record's judge version read from either form and held as the string (for a typed record's field: a cell's
# pins, a manifest). An older record read and written again then says "6" where it said 6.
JudgeVersion = Annotated[str, BeforeValidator(_judge_version)]


def same_judge_version(a: object, b: object) -> bool:
    """Whether two records' judge versions are one judge (``6`` and ``"6"`` are; two absent ones are)."""
    return judge_version_text(a) == judge_version_text(b)


@dataclass(frozen=True)
class Pins:
    """What makes two cells comparable. The caller adds what only it knows (image, CLI, model, …)."""

    case_set_hash: str
    world_set_hash: str
    judge_version: str = JUDGE_VERSION
    prompt_hash: str | None = None
    catalog_hash: str | None = None
    prompt_set_hash: str | None = None
    image_id: str | None = None
    cli_version: str | None = None
    runner_version: str | None = None
    model_mode: str | None = None
    behaviour: str | None = None
    extra: Mapping[str, JsonValue] = field(default_factory=dict)

    def to_json(self) -> dict[str, JsonValue]:
        """camelCase pins; absent ones are left out (``extra`` keys are kept as given)."""
        body: dict[str, JsonValue] = {
            "caseSetHash": self.case_set_hash,
            "worldSetHash": self.world_set_hash,
            "judgeVersion": self.judge_version,
        }
        for key, value in (
            ("promptHash", self.prompt_hash),
            ("catalogHash", self.catalog_hash),
            ("promptSetHash", self.prompt_set_hash),
            ("imageId", self.image_id),
            ("cliVersion", self.cli_version),
            ("runnerVersion", self.runner_version),
            ("modelMode", self.model_mode),
            ("behaviour", self.behaviour),
        ):
            if value is not None:
                body[key] = value
        body.update(self.extra)
        return body


@functools.cache
def _declared_set_hashes() -> tuple[str, str]:
    """The case-set and world-set hashes of :data:`CASES`, computed once per process (they are constants)."""
    return case_set_hash(), world_set_hash()


class CallerPins(TypedDict, total=False):
    """The pins only the caller knows: :class:`Pins`' fields past the two set hashes."""

    judge_version: str
    prompt_hash: str | None
    catalog_hash: str | None
    prompt_set_hash: str | None
    image_id: str | None
    cli_version: str | None
    runner_version: str | None
    model_mode: str | None
    behaviour: str | None
    extra: Mapping[str, JsonValue]


def current_pins(**caller: Unpack[CallerPins]) -> Pins:
    """The pins this code computes (case set, world set, judge version), plus what the caller passes."""
    cases, worlds = _declared_set_hashes()
    return Pins(case_set_hash=cases, world_set_hash=worlds, **caller)


def comparable(a: Pins | Mapping[str, JsonValue], b: Pins | Mapping[str, JsonValue]) -> list[str]:
    """The names of every pin that differs (present in one and not the other counts); ``[]`` = comparable. The
    judge version is compared as :func:`judge_version_text` reads it (an older record's ``6`` is ``"6"``)."""
    left = a.to_json() if isinstance(a, Pins) else dict(a)
    right = b.to_json() if isinstance(b, Pins) else dict(b)
    for pins in (left, right):
        if JUDGE_VERSION_KEY in pins:
            pins[JUDGE_VERSION_KEY] = judge_version_text(pins[JUDGE_VERSION_KEY]) or pins[JUDGE_VERSION_KEY]
    return sorted(k for k in set(left) | set(right) if left.get(k) != right.get(k))
