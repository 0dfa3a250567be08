"""Receipts: what each declared attempt actually did, recovered from the execution record (§6.4).

Every column here is a live MCP column: the harness mints its own call ids, so an attempt cannot be
found by id. Upstream's ``liveReceiptsFromRecord`` correlates instead on what the record shows about
a call — the tool, and the resource path the kernel resolved it to:

- attempts are taken in declared order (only those of the given turn), and each operation is
  consumed at most once;
- an attempt with no tool (an inspection) is ``attempted: false``;
- pass 1 takes the first unconsumed operation on the attempt's tool whose ``resource.path`` equals the
  attempt's ``toolArguments.path``; pass 2, only if pass 1 found nothing, takes the first one with no
  resource at all (refused before authorization: an envelope refusal, invalid arguments);
- an attempt that declares no path matches the first unconsumed operation on its tool;
- nothing matched: ``attempted: false``, "no operation in the record matches this attempt's tool and
  resource".

This is weaker than an exact correlation: a repeated call can be assigned to the next attempt on the
same tool and path, but that surfaces as ``fail``, never as a false pass.
"""

from __future__ import annotations

from collections.abc import Mapping

from pydantic import field_serializer

from runner.conformance.cases import Attempt, Case, Expect, Role
from runner.conformance.jsonmodel import JsonModel, JsonValue, omitted
from runner.conformance.record import ExecutionRecord, JsonObject, operations, reported_outcome, text_of

NO_MATCH = "no operation in the record matches this attempt's tool and resource"
NO_SURFACE = "a live harness is never handed the runtime surface this attempt inspects"


class Receipt(JsonModel):
    """``AttemptReceipt``: one declared attempt and what the record says it did (written as upstream's shape)."""

    attempt_id: str
    role: Role
    tool: str | None = omitted()
    turn: int | None = omitted()
    expect: Expect
    argument_keys: tuple[str, ...] = ()
    attempted: bool
    call_id: str | None = omitted()  # the matched operation's operationId
    observed: str | None = omitted()  # the matched operation's outcome
    reason_code: str | None = omitted()
    refused_by: str | None = omitted()  # the operation's source, when it did not succeed
    cause: str | None = omitted()  # the matched operation's ``cause`` (judge 6): reported, never graded
    detail: str | None = omitted()

    @field_serializer("expect")
    def _expect(self, expect: Expect) -> dict[str, JsonValue]:
        return expect.to_json()


def live_receipts_from_record(case: Case, record: ExecutionRecord, *, turn: int = 1) -> list[Receipt]:
    """Upstream ``liveReceiptsFromRecord`` for one turn's record."""
    unconsumed = operations(record)
    return [_receipt(attempt, unconsumed) for attempt in case.attempts if attempt.turn_index == turn]


def _receipt(attempt: Attempt, unconsumed: list[JsonObject]) -> Receipt:
    declared = Receipt(
        attempt_id=attempt.id, role=attempt.role, expect=attempt.expect, tool=attempt.tool, turn=attempt.turn,
        argument_keys=tuple(sorted((attempt.arguments or {}).keys())), attempted=False,
    )
    if attempt.tool is None:
        return declared.model_copy(update={"detail": NO_SURFACE})
    wanted = attempt.declared_path()

    def matches(operation: JsonObject, exact: bool) -> bool:
        if operation.get("tool") != attempt.tool:
            return False
        if wanted is None:
            return True
        resource = operation.get("resource")
        if resource is None:
            return not exact
        path = resource.get("path") if isinstance(resource, Mapping) else None
        return list(path) == wanted if isinstance(path, list) else wanted == []

    index = next((i for i, op in enumerate(unconsumed) if matches(op, True)), None)
    if index is None:
        index = next((i for i, op in enumerate(unconsumed) if matches(op, False)), None)
    if index is None:
        return declared.model_copy(update={"detail": NO_MATCH})
    operation = unconsumed.pop(index)
    outcome = reported_outcome(operation.get("outcome"))  # an interrupted call reports as failed (judge 6)
    return declared.model_copy(update={
        "attempted": True,
        "call_id": text_of(operation.get("operationId")),
        "observed": outcome,
        "reason_code": text_of(operation.get("reasonCode")),
        "cause": text_of(operation.get("cause")),
        "refused_by": (
            text_of(operation.get("source"))
            if outcome != "succeeded" and operation.get("outcome") != "interrupted" else None
        ),
    })
