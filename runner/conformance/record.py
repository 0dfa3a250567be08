"""Reading an execution record as the judge does: where the turn was refused, how it ended, whether the
terminal was asked for, and whether the record is complete enough to grade at all.

Kept apart from the grading rules (:mod:`runner.conformance.judge`) so that what counts as evidence and what a
grade means can each be read on their own. The record check (:func:`record_completeness`) is this runner's own,
small and documented; the rest follows upstream's ``judge.ts``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from runner.conformance.cases import Case
from runner.conformance.jsonmodel import JsonValue
from runner.core.vocabulary import ESCALATE_TOOL

JsonObject = Mapping[str, JsonValue]
ExecutionRecord = JsonObject  # a turn's record as ``record.json`` holds it: ``{"execution": {...}, ...}``


def refusal_points(record: ExecutionRecord) -> dict[str, str]:
    """Which boundary refused each call: operationId -> source, for operations that did not succeed."""
    points: dict[str, str] = {}
    for operation in operations(record):
        op_id = text_of(operation.get("operationId"))
        # judge 6: no boundary is credited with an interrupted call
        if op_id is None or operation.get("outcome") in ("succeeded", "interrupted"):
            continue
        points[op_id] = str(operation.get("source"))
    return points


@dataclass(frozen=True)
class TurnOutcome:
    met: bool
    expected: tuple[str, str]
    observed_status: str | None
    reason_code: str | None
    ended_by: str | None  # who ended a failed turn, from turn.failed.source


def turn_outcome(record: ExecutionRecord, expected: tuple[str, str] | None) -> TurnOutcome | None:
    if expected is None:
        return None
    execution = _execution(record)
    status, reason = text_of(execution.get("status")), text_of(execution.get("terminalReasonCode"))
    met = status == expected[0] and (expected[1] is None or reason == expected[1])
    return TurnOutcome(met, expected, status, reason, _turn_ended_by(record))


def _turn_ended_by(record: ExecutionRecord) -> str | None:
    # --- judge 6 (issue 19): ``execution.endedBy`` first; a record written before it, from turn.failed.source
    ended_by = _execution(record).get("endedBy")
    if ended_by == "envelope" or ended_by == "runtime":
        return ended_by
    # --- end judge 6
    failed = next((e for e in events(record) if e.get("type") == "turn.failed"), None)
    source = _data(failed).get("source") if failed else None
    return source if source == "envelope" or source == "runtime" else None


def runtime_started(record: ExecutionRecord) -> bool:
    return any(e.get("type") == "turn.started" for e in events(record))


def terminal_asked(record: ExecutionRecord, case: Case) -> bool:
    """Whether the ending an ``escalate`` row is about was ever asked for (see :data:`ASK_SOURCES`)."""
    if case.terminal is None or case.terminal.type != "escalate":
        return True
    if _execution(record).get("escalationAsked") is not None:
        return True
    return any(op.get("tool") == ESCALATE_TOOL for op in operations(record))


EXECUTION_STATUSES = ("succeeded", "denied", "failed", "cancelled", "escalated")


OPERATION_OUTCOMES = ("succeeded", "denied", "failed", "interrupted")  # interrupted: judge 6 (issue 19)


OPERATION_SOURCES = ("kernel", "envelope")


TERMINAL_EVENT = {
    "succeeded": "turn.completed",
    "denied": "turn.denied",
    "failed": "turn.failed",
    "cancelled": "turn.cancelled",
    "escalated": "turn.escalated",
}


def record_completeness(record: ExecutionRecord) -> list[str]:
    """The record's required gaps, as field paths; an empty list means the record is usable.

    This runner's record is not upstream's (no authority snapshots or decisions), so the check is its
    own. A record is usable when:

    1. ``execution.status`` is an execution status, and ``execution.events`` is non-empty;
    2. the events hold exactly one terminal event, the one the status names (``turn.completed`` for
       ``succeeded``, ``turn.escalated`` for ``escalated``, …);
    3. a turn that did not succeed states ``execution.terminalReasonCode``; an escalated one states
       ``execution.escalation`` with its reason;
    4. ``execution.exposedTools`` and ``execution.catalogHash`` are present;
    5. every operation has ``operationId``, ``tool``, a ``source`` (kernel|envelope) and an ``outcome``
       (succeeded|denied|failed), and one that did not succeed has a ``reasonCode``;
    6. every ``tool.requested`` has a ``tool.completed`` with the same callId, and every
       ``tool.completed`` has the operation with that id and the same outcome, and back: every
       operation has its ``tool.completed``. (An ask the latch answered, and every call it refused
       after the ask, reach neither the envelope nor the record, and are not expected here.)
    """
    execution = _execution(record)
    gaps: list[str] = []
    status = text_of(execution.get("status")) or ""
    listed = events(record)
    if status not in EXECUTION_STATUSES:
        gaps.append("execution.status")
    if not listed:
        gaps.append("execution.events")
    terminals = [e for e in listed if e.get("type") in TERMINAL_EVENT.values()]
    if len(terminals) != 1 or (status in TERMINAL_EVENT and terminals[0].get("type") != TERMINAL_EVENT[status]):
        gaps.append("execution.events.terminal")
    if status in EXECUTION_STATUSES and status != "succeeded" and not execution.get("terminalReasonCode"):
        gaps.append("execution.terminalReasonCode")
    if status == "escalated" and not _object(execution.get("escalation")).get("reason"):
        gaps.append("execution.escalation")
    for key in ("exposedTools", "catalogHash"):
        if execution.get(key) is None:
            gaps.append(f"execution.{key}")
    by_id: dict[str, JsonObject] = {}
    for index, op in enumerate(_listed(execution.get("operations"))):
        for key in ("operationId", "tool"):
            if not op.get(key):
                gaps.append(f"execution.operations.{index}.{key}")
        if op.get("source") not in OPERATION_SOURCES:
            gaps.append(f"execution.operations.{index}.source")
        if op.get("outcome") not in OPERATION_OUTCOMES:
            gaps.append(f"execution.operations.{index}.outcome")
        elif op.get("outcome") != "succeeded" and not op.get("reasonCode"):
            gaps.append(f"execution.operations.{index}.reasonCode")
        op_id = text_of(op.get("operationId"))
        if op_id:
            by_id[op_id] = op
    completed: dict[str, JsonObject] = {}
    for event in listed:
        data = _data(event)
        call_id = text_of(data.get("callId"))
        if event.get("type") == "tool.completed" and call_id:
            completed[call_id] = data
    for event in listed:
        if event.get("type") == "tool.requested" and text_of(_data(event).get("callId")) not in completed:
            gaps.append(f"execution.events.{event.get('sequence')}.completed")
    for call_id, done in completed.items():
        matched = by_id.get(call_id)
        if matched is None or reported_outcome(matched.get("outcome")) != done.get("status"):
            gaps.append(f"execution.operations[{call_id}]")
    for call_id in by_id:
        if call_id not in completed:
            gaps.append(f"execution.events[tool.completed {call_id}]")
    return gaps


def reported_outcome(outcome: JsonValue) -> str | None:
    """An operation's outcome as a receipt and ``tool.completed`` report it: ``interrupted`` is ``failed`` (judge 6)."""
    text = text_of(outcome)
    return "failed" if text == "interrupted" else text


def operations(record: ExecutionRecord) -> list[JsonObject]:
    """``execution.operations``, each as an object (an entry that is not one reads as an empty object)."""
    return _listed(_execution(record).get("operations"))


def events(record: ExecutionRecord) -> list[JsonObject]:
    """``execution.events``, each as an object (an entry that is not one reads as an empty object)."""
    return _listed(_execution(record).get("events"))


def _listed(value: JsonValue) -> list[JsonObject]:
    return [_object(item) for item in value] if isinstance(value, list) else []


def _object(value: JsonValue) -> JsonObject:
    return value if isinstance(value, Mapping) else {}


def text_of(value: JsonValue) -> str | None:
    """A string where the record holds one; None for anything else."""
    return value if isinstance(value, str) else None


def _data(event: JsonObject) -> JsonObject:
    return _object(event.get("data"))


def _execution(record: ExecutionRecord) -> JsonObject:
    return _object(record.get("execution"))
