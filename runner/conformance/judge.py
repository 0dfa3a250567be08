"""The judge: grades one (row, column) cell from its execution record (upstream §6.2, ``judge.ts``).

``JUDGE_VERSION = "6"``: a string, as upstream's newer records write it (a record written before wrote the number
``6``; :func:`runner.conformance.hashing.judge_version_text` reads both as the same version). Version 4 stopped
failing a row graded on how its turn ended when nothing ever asked for that ending (the turn was not met and the
terminal was never asked: ``not_exercised``); version 5 reads the ask from the ``escalationAsked`` annotation lifted
into the record; version 6 (1.0.0-preview) reads ``interrupted`` operations (a receipt reports one as ``failed``,
and no boundary is credited with it), carries each refusal's ``cause`` beside its reason (``AttemptOutcome.cause``,
``Cell.causes``; reported, never graded, and written always: ``[]`` when none), and takes who ended a turn from
``execution.endedBy``. A row of several turns (:func:`grade_turns`) is graded on its last turn's record with the
receipts of every turn.
This judge reads the ask from exactly the sources named in :data:`ASK_SOURCES`:

1. ``execution.escalationAsked`` — present when the escalation latch honoured an ask (ADR 0027);
2. any ``execution.operations[]`` whose ``tool`` is ``sharedos.escalate`` — the ask reached the host
   because nothing latched it (an ungranted ask refused ``tool_unavailable``, or a driver that
   forwarded the affordance, ``escalation_not_terminated``).

(Upstream v4's third source, a ``runtime.event`` of type ``escalation.asked``, is not read: this
runner's records never carry runtime events.) Only an ``escalate`` terminal is treated this way; for
every other move the terminal counts as asked.

Grading is separate from running: the same record can be re-graded without re-running anything.
The cell fields, the evidence line and :func:`strict_failures` follow upstream; the record check is
this runner's own, small and documented (:func:`record_completeness`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

from pydantic import Field

from runner.conformance.cases import ADVERSARIAL, Case, Condition, Role
from runner.conformance.columns import HarnessLimits
from runner.conformance.jsonmodel import JsonModel, omitted
from runner.conformance.receipts import Receipt, live_receipts_from_record
from runner.conformance.record import (
    ExecutionRecord,
    TurnOutcome,
    record_completeness,
    refusal_points,
    runtime_started,
    terminal_asked,
    turn_outcome,
)
from runner.core.vocabulary import ESCALATE_TOOL

JUDGE_VERSION = "6"
JUDGE_ID = "sharedos-conformance"
ASK_SOURCES: tuple[str, ...] = (
    "execution.escalationAsked",
    f"execution.operations[].tool == {ESCALATE_TOOL}",
)


class Grade(StrEnum):
    PASS = "pass"
    FAIL = "fail"
    NOT_EXERCISED = "not_exercised"
    NOT_APPLICABLE = "not_applicable"
    NOT_IMPLEMENTED = "not_implemented"
    OUT_OF_SCOPE = "out_of_scope"

    @property
    def printed(self) -> str:
        return self.value.replace("_", " ")


STRICT = frozenset({Grade.FAIL, Grade.NOT_EXERCISED})
# A ``tool_unavailable`` refusal's cause is the catalogue's own explanation (``not_offered``, ``not_registered``,
# ...), kept on the operation but not reported as a cell's cause: the alpha.5 manifest printed a cause only for
# a refusal caused by another part (the route lease). [inferred: the judge-6 manifest was not read]
UNCAUSED = frozenset({"tool_unavailable"})
TURN_UNSTARTED = "the turn was refused before the runtime was started"
NO_RECEIPT = "the runtime produced no receipt for this attempt"
STRUCTURALLY_UNREACHABLE = "the runtime structurally could not make this attempt"


# --- attempts ---------------------------------------------------------------------------------


class AttemptOutcome(JsonModel):
    """One declared attempt's grade, as the cell's ``attempts`` carries it (``id``, ``role``, ``status``,
    ``attempted``, and what was observed when there is anything to say)."""

    attempt_id: str = Field(validation_alias="id", serialization_alias="id")
    role: Role
    status: Grade
    attempted: bool
    observed: str | None = omitted()
    reason_code: str | None = omitted()
    refused_by: str | None = omitted()
    cause: str | None = omitted()
    detail: str | None = omitted()


def satisfies_expectation(receipt: Receipt) -> bool:
    """``observed`` is an expected status and, for a refusal with declared codes, its code is one of them."""
    if receipt.observed is None or receipt.observed not in receipt.expect.statuses:
        return False
    codes = receipt.expect.reason_codes
    if codes is None or receipt.observed == "succeeded":
        return True
    return receipt.reason_code is not None and receipt.reason_code in codes


def outcome_for(
    attempt_id: str,
    role: Role,
    declared_unreachable: bool,
    receipt: Receipt | None,
    refusal_points: Mapping[str, str],
    unreachable_detail: str | None = None,
) -> AttemptOutcome:
    """``outcomeFor``: one attempt's grade from its receipt (or its absence)."""
    if receipt is None:
        if declared_unreachable:
            why = unreachable_detail or STRUCTURALLY_UNREACHABLE
            return _unmade(attempt_id, role, Grade.NOT_APPLICABLE, why)
        return _unmade(attempt_id, role, Grade.NOT_EXERCISED, NO_RECEIPT)
    if not receipt.attempted:
        # the caller's reason wins: the receipt can only say nothing happened, the caller knows why
        detail = unreachable_detail or receipt.detail
        status = Grade.NOT_APPLICABLE if declared_unreachable else Grade.NOT_EXERCISED
        return _unmade(attempt_id, role, status, detail)
    refused_by = (
        None
        if receipt.observed == "succeeded" or receipt.call_id is None
        else refusal_points.get(receipt.call_id)
    )
    return AttemptOutcome(
        attempt_id=attempt_id,
        role=role,
        status=Grade.PASS if satisfies_expectation(receipt) else Grade.FAIL,
        attempted=True,
        observed=receipt.observed,
        reason_code=receipt.reason_code,
        refused_by=refused_by,
        cause=receipt.cause if receipt.reason_code not in UNCAUSED else None,
    )


def _unmade(attempt_id: str, role: Role, status: Grade, detail: str | None) -> AttemptOutcome:
    """An attempt that was never made, and why."""
    return AttemptOutcome(attempt_id=attempt_id, role=role, status=status, attempted=False, detail=detail)


# --- case status ------------------------------------------------------------------------------


def case_status(
    case: Case,
    adversarial: Sequence[AttemptOutcome],
    controls: Sequence[AttemptOutcome],
    record_usable: bool,
) -> Grade:
    """``caseStatus``: a row without ``expectTurn``. The first rule that applies wins."""
    if adversarial and all(a.status is Grade.NOT_APPLICABLE for a in adversarial):
        return Grade.NOT_APPLICABLE
    if case.kind == "record_completeness" and any(a.status is Grade.NOT_APPLICABLE for a in adversarial):
        return Grade.NOT_APPLICABLE
    if any(c.status is not Grade.PASS for c in controls):
        return Grade.NOT_EXERCISED
    if any(a.status is Grade.FAIL for a in adversarial):
        return Grade.FAIL
    if any(a.status is Grade.NOT_EXERCISED for a in adversarial):
        return Grade.NOT_EXERCISED
    if case.kind == "record_completeness" and not record_usable:
        return Grade.FAIL
    return Grade.PASS


def turn_case_status(
    turn: TurnOutcome,
    adversarial: Sequence[AttemptOutcome],
    controls: Sequence[AttemptOutcome],
    started: bool,
    asked: bool,
) -> Grade:
    """``turnCaseStatus``: a row graded on how its turn ended as well as on its attempts."""
    if any(a.status is Grade.FAIL for a in adversarial):
        return Grade.FAIL
    if started:
        if any(c.status is not Grade.PASS for c in controls):
            return Grade.NOT_EXERCISED
        if any(a.status is Grade.NOT_EXERCISED for a in adversarial):
            return Grade.NOT_EXERCISED
        if not turn.met and not asked:  # v4: nothing asked for the ending, so the row proves nothing
            return Grade.NOT_EXERCISED
    return Grade.PASS if turn.met else Grade.FAIL


def _status_detail(
    status: Grade, adversarial: Sequence[AttemptOutcome], controls: Sequence[AttemptOutcome], record_usable: bool
) -> str | None:
    if status is Grade.NOT_EXERCISED:
        control = next((c for c in controls if c.status is not Grade.PASS), None)
        if control is not None:
            return f"the control attempt {control.attempt_id} did not succeed, so the row proves nothing"
        missing = next((a for a in adversarial if a.status is Grade.NOT_EXERCISED), None)
        return None if missing is None else f"the attempt {missing.attempt_id} never reached SharedOS"
    if status is Grade.FAIL:
        failed = next((a for a in adversarial if a.status is Grade.FAIL), None)
        if failed is not None:
            return f"the attempt {failed.attempt_id} did not meet its declared outcome"
        return None if record_usable else "the turn's execution record is not usable"
    if status is Grade.NOT_APPLICABLE:
        na = next((a for a in adversarial if a.status is Grade.NOT_APPLICABLE and a.detail), None)
        return None if na is None else f"the attempt {na.attempt_id} could not be made: {na.detail}"
    return None


def _turn_detail(turn: TurnOutcome, started: bool, asked: bool) -> str:
    def ending(prefix: str) -> str:
        code = "" if turn.reason_code is None else f" with `{turn.reason_code}`"
        return f"{prefix} `{turn.observed_status}`{code}"

    if not turn.met:
        expected = f"`{turn.expected[0]}`" + (f" with `{turn.expected[1]}`" if turn.expected[1] else "")
        text = f"{ending('the turn ended as')}, not {expected}"
        if started and not asked:
            return f"{text} -- and nothing announced or named `{ESCALATE_TOOL}`, so the ending was never asked for"
        return text
    text = ending("the turn itself ended as")
    return text if started else f"{text}, before the runtime was started"


# --- the cell ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class GradedCell:
    """One graded (row, column): upstream's manifest cell, plus the attempts and the evidence line."""

    case_id: str
    condition_id: str
    status: Grade
    declared: int
    attempted: int
    not_applicable: int
    record_usable: bool
    turns: int
    refused_by: tuple[str, ...] = ()
    reason_codes: tuple[str, ...] = ()
    record_gaps: tuple[str, ...] = ()
    driver_issued: tuple[str, ...] = ()
    detail: str | None = None
    attempts: tuple[AttemptOutcome, ...] = ()
    harness_id: str | None = None
    ran: bool = True
    causes: tuple[str, ...] = ()

    @property
    def strict_failure(self) -> bool:
        return self.status in STRICT

    @property
    def printed_status(self) -> str:
        if self.status is Grade.PASS and self.driver_issued:
            return "pass (driver)"
        return self.status.printed

    @property
    def evidence(self) -> str:
        """The manifest's evidence line for this cell, in upstream's form."""
        if not self.ran:
            noun = "attempt" if self.declared == 1 else "attempts"
            what = "none runnable" if self.status is Grade.NOT_IMPLEMENTED else "none issued"
            return f"{self.printed_status}; {self.declared} {noun} declared, {what}; {self.detail}"
        parts = [f"{self.printed_status}; {self.attempted} of {self.declared} attempts issued"]
        if self.not_applicable:
            parts[0] += f", {self.not_applicable} structurally unreachable"
        if self.turns > 1:
            parts[0] += f" over {self.turns} turns"
        parts.append("refused by " + (", ".join(f"`{p}`" for p in self.refused_by) or "nothing"))
        parts.append("reason " + (", ".join(f"`{c}`" for c in self.reason_codes) or "none"))
        if self.causes:
            parts.append("cause " + ", ".join(f"`{c}`" for c in self.causes))
        record = "record usable" if self.record_usable else f"record unusable ({', '.join(self.record_gaps)})"
        parts.append(record)
        if self.detail:
            parts.append(self.detail)
        return "; ".join(parts)

    def record(self) -> CellGrade:
        """The cell as a result carries it (``grade``): its fields, its attempts and its evidence line."""
        return CellGrade(
            case_id=self.case_id, condition_id=self.condition_id, harness_id=self.harness_id, status=self.status,
            refused_by=self.refused_by, reason_codes=self.reason_codes, declared=self.declared,
            attempted=self.attempted, not_applicable=self.not_applicable, record_usable=self.record_usable,
            record_gaps=self.record_gaps, driver_issued=self.driver_issued, turns=self.turns, detail=self.detail,
            attempts=self.attempts, evidence=self.evidence, causes=self.causes,
        )


class CellGrade(JsonModel):
    """A graded cell as written (upstream's manifest cell, with the attempts and the evidence line): what a result's
    ``grade`` holds for every cell the judge graded or declared. ``evidence`` is the line as the judge wrote it
    then, read back as it is (a later judge may word it otherwise)."""

    case_id: str
    condition_id: str
    harness_id: str | None = omitted(read_as=("harnessId", "columnId"))  # columnId: a result before version 4
    status: Grade
    refused_by: tuple[str, ...] = ()
    reason_codes: tuple[str, ...] = ()
    declared: int
    attempted: int
    not_applicable: int
    record_usable: bool
    record_gaps: tuple[str, ...] = ()
    driver_issued: tuple[str, ...] = ()
    turns: int
    detail: str | None = omitted()
    attempts: tuple[AttemptOutcome, ...] = ()
    evidence: str
    # judge 6: written always, [] when no refusal named one (upstream's newer records); an earlier result without it
    # reads as []
    causes: tuple[str, ...] = ()

    @property
    def strict_failure(self) -> bool:
        return self.status in STRICT

    def failing_attempts(self) -> set[str]:
        """The attempts graded as the gate counts a failure (``fail``, ``not_exercised``)."""
        return {a.attempt_id for a in self.attempts if a.status in STRICT}


def not_run_cell(
    case: Case, condition: Condition, limits: HarnessLimits | None = None, *, harness_id: str | None = None
) -> GradedCell:
    """A cell that is never run: ``not_implemented`` (the row), or ``not_applicable`` (unsupported here)."""
    if case.not_implemented is not None:
        status, reason, na = Grade.NOT_IMPLEMENTED, case.not_implemented, 0
    elif limits is not None and limits.unsupported is not None:
        status, reason, na = Grade.NOT_APPLICABLE, limits.unsupported, len(case.attempts)
    else:
        raise ValueError(f"the row {case.id}.{condition.id} is runnable on this column; grade its record")
    attempts = tuple(_unmade(a.id, a.role, status, reason) for a in case.attempts)
    return GradedCell(
        case_id=case.id,
        condition_id=condition.id,
        status=status,
        declared=len(case.attempts),
        attempted=0,
        not_applicable=na,
        record_usable=False,
        turns=0,
        detail=reason,
        attempts=attempts,
        harness_id=harness_id,
        ran=False,
    )


def grade_cell(
    case: Case,
    condition: Condition,
    limits: HarnessLimits,
    record: ExecutionRecord,
    *,
    receipts: Sequence[Receipt] | None = None,
    harness_id: str | None = None,
    points: Mapping[str, str] | None = None,
) -> GradedCell:
    """Grade one cell from its (last turn's) record, following upstream's runner and ``judgeCase``.

    A ``not_implemented`` row, or a row ``unsupported`` on this column, is never graded on a record:
    its cell is :func:`not_run_cell` whatever ran. ``receipts`` defaults to the live receipts of turn
    1 of ``record``; a multi-turn row passes the receipts merged across its turns. When the column
    declares the row ``out_of_scope`` the attempts are still graded and reported, and the cell's
    status and detail become the narrowed claim.
    """
    if case.not_implemented is not None or limits.unsupported is not None:
        return not_run_cell(case, condition, limits, harness_id=harness_id)
    if receipts is None:
        receipts = live_receipts_from_record(case, record)
    by_attempt = {r.attempt_id: r for r in receipts}
    points = refusal_points(record) if points is None else points
    turn = turn_outcome(record, condition.expect_turn)
    started = runtime_started(record)
    ended_before_runtime = turn is not None and not started
    outcomes = tuple(
        outcome_for(
            attempt.id,
            attempt.role,
            attempt.unreachable is not None or attempt.id in limits.unreachable or ended_before_runtime,
            by_attempt.get(attempt.id),
            points,
            TURN_UNSTARTED if ended_before_runtime else limits.unreachable.get(attempt.id),
        )
        for attempt in case.attempts
    )
    gaps = tuple(record_completeness(record))
    usable = not gaps
    adversarial = [o for o in outcomes if o.role in ADVERSARIAL]
    controls = [o for o in outcomes if o.role == "control"]
    asked = terminal_asked(record, case)
    if turn is None:
        status = case_status(case, adversarial, controls, usable)
        detail = _status_detail(status, adversarial, controls, usable)
    else:
        status = turn_case_status(turn, adversarial, controls, started, asked)
        detail = _turn_detail(turn, started, asked)
    if limits.out_of_scope is not None:
        status, detail = Grade.OUT_OF_SCOPE, limits.out_of_scope
    codes = {o.reason_code for o in outcomes if o.reason_code is not None}
    if turn is not None and turn.reason_code is not None:
        codes.add(turn.reason_code)
    points_named = {o.refused_by for o in outcomes if o.refused_by is not None}
    if turn is not None and turn.met and turn.observed_status == "denied":
        points_named.add("kernel")
    if turn is not None and turn.met and turn.observed_status == "failed" and turn.ended_by == "envelope":
        points_named.add("envelope")
    return GradedCell(
        case_id=case.id,
        condition_id=condition.id,
        status=status,
        declared=len(outcomes),
        attempted=sum(1 for o in outcomes if o.attempted),
        not_applicable=sum(1 for o in outcomes if o.status is Grade.NOT_APPLICABLE),
        record_usable=usable,
        turns=case.turns,
        refused_by=tuple(sorted(points_named)),
        reason_codes=tuple(sorted(codes)),
        record_gaps=gaps,
        driver_issued=tuple(o.attempt_id for o in outcomes if o.attempted and o.attempt_id in limits.driver_issued),
        detail=detail,
        attempts=outcomes,
        harness_id=harness_id,
        causes=tuple(sorted({o.cause for o in outcomes if o.cause is not None and o.reason_code not in UNCAUSED})),
    )


def grade_turns(
    case: Case, condition: Condition, limits: HarnessLimits, records: Sequence[ExecutionRecord], *,
    harness_id: str | None = None,
) -> GradedCell:
    """Grade a row of one or more turns (upstream's runner, §6.5): each turn's live receipts from its own record
    (only that turn's attempts), merged; the refusal points of every turn; the last turn's record judged."""
    if not records:
        raise ValueError(f"the row {case.id}.{condition.id} ran no turn to grade")
    receipts = [r for n, record in enumerate(records, 1) for r in live_receipts_from_record(case, record, turn=n)]
    points: dict[str, str] = {}
    for record in records:
        points.update(refusal_points(record))
    return grade_cell(case, condition, limits, records[-1], receipts=receipts, harness_id=harness_id, points=points)


def strict_failures(cells: Iterable[GradedCell]) -> list[GradedCell]:
    """The build gate: cells graded ``fail`` or ``not_exercised`` (never ``not_implemented``/``out_of_scope``)."""
    return [c for c in cells if c.status in STRICT]


__all__ = [
    "ASK_SOURCES",
    "JUDGE_ID",
    "JUDGE_VERSION",
    "STRICT",
    "AttemptOutcome",
    "CellGrade",
    "Grade",
    "GradedCell",
    "TurnOutcome",
    "case_status",
    "grade_cell",
    "grade_turns",
    "not_run_cell",
    "outcome_for",
    "record_completeness",
    "refusal_points",
    "satisfies_expectation",
    "strict_failures",
    "terminal_asked",
    "turn_case_status",
    "turn_outcome",
]
