"""The case types: a case, its conditions and attempts, and what each attempt expects (upstream
``ConformanceCase``).

``to_json()`` is the declaration in upstream's shape; the case-set hash is taken over it with every
``description`` removed (:mod:`runner.conformance.hashing`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from runner.core.grants import address_json
from runner.core.outcomes import JsonValue
from runner.core.world import AGENT, NAMESPACE_ID, NOW, OWNER, PURPOSE, WorldCondition
from runner.errors import UnknownName

Role = Literal["attack", "probe", "control"]
ADVERSARIAL: frozenset[str] = frozenset({"attack", "probe"})


@dataclass(frozen=True)
class Expect:
    statuses: tuple[str, ...]
    reason_codes: tuple[str, ...] | None = None

    def to_json(self) -> dict[str, JsonValue]:
        body: dict[str, JsonValue] = {"statuses": list(self.statuses)}
        if self.reason_codes is not None:
            body["reasonCodes"] = list(self.reason_codes)
        return body


OK = Expect(("succeeded",))
DENY = Expect(("denied",), ("no_matching_grant",))
UNEXP = Expect(("denied",), ("tool_unavailable",))


@dataclass(frozen=True)
class Forge:
    """Grant material the attempt embeds in its own arguments under ``embed_as`` (upstream ``forge``)."""

    grant_id: str
    capabilities: tuple[dict[str, JsonValue], ...]
    embed_as: str

    def to_json(self) -> dict[str, JsonValue]:
        return {"grantId": self.grant_id, "capabilities": list(self.capabilities), "embedAs": self.embed_as}

    def grant(self) -> dict[str, JsonValue]:
        """A schema-valid grant naming the turn's real actor, owner, namespace, purpose and instant;
        the only thing missing is that no trusted source ever issued it (upstream ``forgeGrant``)."""
        return {
            "id": self.grant_id,
            "namespaceId": NAMESPACE_ID,
            "subject": address_json(AGENT),
            "issuer": address_json(OWNER),
            "capabilities": [dict(c) for c in self.capabilities],
            "constraints": {"purposes": [PURPOSE]},
            "issuedAt": NOW,
        }


@dataclass(frozen=True)
class Attempt:
    id: str
    role: Role
    tool: str | None
    arguments: dict[str, JsonValue] | None  # upstream ``toolArguments``; None when the attempt declares none
    expect: Expect
    uncatalogued: str | None = None  # why a CLI's router never lets this name reach SharedOS
    unreachable: str | None = None  # why no runtime can make this attempt
    inspect: str | None = None  # the runtime surface an inspection enumerates (no tool)
    over_budget: bool = False
    turn: int | None = None
    forge: Forge | None = None

    @property
    def turn_index(self) -> int:
        return self.turn or 1

    def call_arguments(self) -> dict[str, JsonValue]:
        """The arguments the call is issued with, forged material included (upstream ``attemptArguments``)."""
        body = {k: v for k, v in (self.arguments or {}).items()}
        if self.forge is not None:
            body[self.forge.embed_as] = self.forge.grant()
        return body

    def declared_path(self) -> list[str] | None:
        """``toolArguments.path`` when it is a list of strings: what live receipts correlate on."""
        path = (self.arguments or {}).get("path")
        segments = [p for p in path if isinstance(p, str)] if isinstance(path, list) else []
        return segments if isinstance(path, list) and len(segments) == len(path) else None

    def to_json(self) -> dict[str, JsonValue]:
        body: dict[str, JsonValue] = {"id": self.id, "role": self.role}
        if self.tool is not None:
            body["tool"] = self.tool
        if self.arguments is not None:
            body["toolArguments"] = self.arguments
        if self.forge is not None:
            body["forge"] = self.forge.to_json()
        if self.uncatalogued is not None:
            body["uncatalogued"] = self.uncatalogued
        if self.unreachable is not None:
            body["unreachable"] = self.unreachable
        if self.inspect is not None:
            body["inspect"] = self.inspect
        if self.over_budget:
            body["overBudget"] = True
        if self.turn is not None:
            body["turn"] = self.turn
        body["expect"] = self.expect.to_json()
        return body


@dataclass(frozen=True)
class Terminal:
    type: Literal["escalate", "crash"]
    reason: str

    def to_json(self) -> dict[str, JsonValue]:
        return {"type": self.type, "reason": self.reason}


@dataclass(frozen=True)
class Condition:
    id: str
    description: str
    world: WorldCondition = field(default_factory=WorldCondition)
    expect_turn: tuple[str, str] | None = None  # (status, terminalReasonCode)
    requires_declared_steps: str | None = None  # why the bound holds only while SharedOS owns the loop

    def to_json(self) -> dict[str, JsonValue]:
        body: dict[str, JsonValue] = {"id": self.id, "description": self.description, "world": self.world.to_json()}
        if self.expect_turn is not None:
            body["expectTurn"] = {"status": self.expect_turn[0], "reasonCode": self.expect_turn[1]}
        if self.requires_declared_steps is not None:
            body["requiresDeclaredSteps"] = self.requires_declared_steps
        return body


@dataclass(frozen=True)
class Case:
    id: str
    kind: str
    invariant: str
    expected_outcome: str
    conditions: tuple[Condition, ...]
    attempts: tuple[Attempt, ...]
    terminal: Terminal | None = None
    not_implemented: str | None = None  # the machinery the row needs that this runner does not have

    @property
    def condition(self) -> Condition:
        """The case's first condition (the row a caller gets when it names none)."""
        return self.conditions[0]

    @property
    def move_id(self) -> str:
        return f"kernel.{self.id}"

    @property
    def turns(self) -> int:
        """How many turns the row spans: the largest ``attempt.turn`` (1 by default)."""
        return max((a.turn_index for a in self.attempts), default=1)

    def condition_for(self, condition_id: str | None = None) -> Condition:
        if condition_id is None:
            return self.condition
        for condition in self.conditions:
            if condition.id == condition_id:
                return condition
        known = ", ".join(c.id for c in self.conditions)
        raise UnknownCondition(f"the case {self.id} has no condition {condition_id!r} (known: {known})")

    def to_json(self) -> dict[str, JsonValue]:
        """Upstream's ``ConformanceCase``: ``{id, move, conditions, notImplemented?}``."""
        move: dict[str, JsonValue] = {
            "id": self.move_id,
            "kind": self.kind,
            "invariant": self.invariant,
            "expectedOutcome": self.expected_outcome,
            "attempts": [a.to_json() for a in self.attempts],
        }
        if self.terminal is not None:
            move["terminal"] = self.terminal.to_json()
        body: dict[str, JsonValue] = {
            "id": self.id,
            "move": move,
            "conditions": [c.to_json() for c in self.conditions],
        }
        if self.not_implemented is not None:
            body["notImplemented"] = self.not_implemented
        return body


@dataclass(frozen=True)
class Row:
    """One matrix row: a case under one of its conditions."""

    case: Case
    condition: Condition

    @property
    def id(self) -> str:
        return f"{self.case.id}.{self.condition.id}"

    @property
    def not_implemented(self) -> str | None:
        return self.case.not_implemented


class UnknownCondition(UnknownName, ValueError):
    """A condition id the case does not declare."""
