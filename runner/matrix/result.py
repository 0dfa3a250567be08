"""One cell's result: the typed, versioned record a cell writes as ``result.json``, and the one thing the run
(resume), the report, ``runner repro``, CI and the CLI read back.

A result is one of:

- **graded**: the judge's grade (``grade``), and, when a turn ran, its summary (``turn``), the model used
  (``model``) and the files it wrote (``files``);
- **declared**: the grade of a row that runs no turn here (``not_implemented``, ``not_applicable``,
  ``out_of_scope``) or of an unavailable harness (``unavailable``), with no turn;
- **an infrastructure error** (``infrastructureError``): the engine, an image or the MCP wiring failed; never
  graded as the CLI's conduct, and never reused by resume;
- **interrupted**: the run stopped while the cell ran; never reused by resume.

Every result carries the cell it is (``cell``), its row (``row``), every pin (``pins``: a trial after the first
carries its index as ``trial``) and the command that reruns it alone (``repro``).
Every part is a typed, validated pydantic model (:mod:`runner.conformance.jsonmodel`): the JSON keys are camelCase as
in upstream's artifacts, written in the order and with the present-or-null rule they have always had;
``version`` says which shape this is, and :meth:`CellResult.read` refuses a newer one by name rather than misread
it, and names any field it cannot read.

**Turns.** A cell holds a list of turns (:attr:`CellResult.turns`). A cell of at most one turn is version 1 and
writes that one as ``turn`` (absent when none ran), as it always has. A cell of several turns (a row of two turns,
``revoked-mid-turn``) is version 2 and writes them all, in order, as ``turns``; its grade is of the last turn with
the receipts of every turn. A version-1 result is never made to hold several turns (it would drop one).

**Attempts.** ``runner run`` retries a cell that hit an infrastructure error; a cell that took more than one attempt
is version 3 and keeps every attempt in ``cellAttempts`` (its number, when it started, what it came to, what ended
it and where its files are kept), the last being the one the result is: a CLI that made runner retry it (an MCP
session it never opened) and then passed is never read as a plain pass. Version 3 writes its turns as ``turns``, as
version 2 does.

**Harness.** Versions 1 to 3 name the cell's harness its column (``cell.column``, the grade's ``columnId``). A
result written now is version 4: it names it ``cell.harness`` (and ``harnessId``), writes one turn as ``turn`` and
several as ``turns``, and keeps its attempts as version 3 does. Every earlier version is still read, and written again
as it was (its keys, its shape).

**Measures.** A result written now is version 5: besides version 4's keys it may carry what the cell cost and why
it failed, each left out when there is nothing to say: ``usage`` (the tokens every model answer of its turns
reported, split into the conversation and side requests, :class:`UsageRecord`; also per turn), ``failure`` (why
the attempt failed: its cause, kind, evidence line and retry rule, :class:`FailureRecord`, from
:func:`runner.conformance.failures.classify`; also per attempt in ``cellAttempts``) and ``system.toolPolicy`` (the
tool policy the CLI's requests to its model support, upstream's ADR 0027 record as
:mod:`runner.model.tool_policy` measures it). Its pins write ``judgeVersion`` as upstream's newer records do, a
string (``"6"``); an earlier version's pins are written again with the number they were read with.

**Ids.** A result names its cell, and the cell names paths (``runner repro`` loads the harness's profile): every id
read back is checked against a fixed pattern (:data:`PLAIN_ID`, the profile's own for the harness) and the cell id
must be the other three joined, so no id read from a file reaches outside the directory it names.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Annotated, Literal

from pydantic import (
    AliasChoices,
    Discriminator,
    Field,
    SerializerFunctionWrapHandler,
    Tag,
    ValidationError,
    field_serializer,
    field_validator,
    model_serializer,
    model_validator,
)

from runner.conformance.failures import KINDS, Failure, TurnEvidence, classify
from runner.conformance.hashing import JudgeVersion
from runner.conformance.jsonmodel import JsonModel, JsonValue, omitted, problems
from runner.conformance.judge import STRICT, CellGrade
from runner.core.usage import Usage, UsageTotals
from runner.errors import UsageError
from runner.harnesses.profile import PROFILE_ID
from runner.model.tool_policy import ToolPolicy

RESULT_VERSION = 1  # the version of a result of at most one turn
TURNS_VERSION = 2  # a result of several turns: ``turns`` (a list) in place of ``turn``
ATTEMPTS_VERSION = 3  # a result of several attempts: ``cellAttempts``, and ``turns`` as in version 2
HARNESS_VERSION = 4  # the cell names its harness (``harness``, ``harnessId``), not its column
MEASURED_VERSION = 5  # usage, failure, system.toolPolicy; judgeVersion a string: what runner writes now
READS_UP_TO = MEASURED_VERSION
PLAIN_ID = re.compile(r"^[a-z0-9][a-z0-9-]{0,99}$")  # a case's or a condition's id: never a path
ATTEMPT_DIR = re.compile(r"^attempt-[1-9][0-9]{0,5}$")  # where an earlier attempt's files are kept
MAX_DETAIL = 4000  # characters of an infrastructure error's words kept in a result
INFRASTRUCTURE_ERROR = "infrastructure_error"
INTERRUPTED: Literal["interrupted"] = "interrupted"
UNAVAILABLE: Literal["unavailable"] = "unavailable"


class ResultError(UsageError, ValueError):
    """A ``result.json`` that cannot be read as a cell result; the message names the file and the field."""


class CellRef(JsonModel):
    """The cell a result is: ``id`` is ``<case>.<condition>.<harness>``, each part a plain id (never a path). A result
    before version 4 calls the harness ``column``."""

    id: str
    case: str
    condition: str
    harness: str = Field(validation_alias=AliasChoices("harness", "column"))

    @field_validator("case", "condition")
    @classmethod
    def _plain(cls, value: str) -> str:
        if not PLAIN_ID.match(value):
            raise ValueError(f"{value!r} is not an id: expected {PLAIN_ID.pattern}")
        return value

    @field_validator("harness")
    @classmethod
    def _harness(cls, value: str) -> str:
        if not PROFILE_ID.match(value):
            raise ValueError(f"{value!r} is not a harness id: expected {PROFILE_ID.pattern}")
        return value

    @model_validator(mode="after")
    def _joined(self) -> CellRef:
        if self.id != f"{self.case}.{self.condition}.{self.harness}":
            raise ValueError(f"cell id {self.id!r} is not <case>.<condition>.<harness> of this cell")
        return self


class RowDescription(JsonModel):
    """The row a cell is in, as the report heads it (every key written, null included)."""

    kind: str | None
    invariant: str | None
    expected_outcome: str | None
    condition: str | None


class Tokens(JsonModel):
    """One :class:`~runner.core.usage.Usage` as written: input (cached included), cached input, output (reasoning
    included), reasoning."""

    input: int = Field(ge=0)
    cached_input: int = Field(ge=0)
    output: int = Field(ge=0)
    reasoning: int = Field(ge=0)

    @classmethod
    def of(cls, usage: Usage) -> Tokens:
        return cls(input=usage.input, cached_input=usage.cached_input, output=usage.output, reasoning=usage.reasoning)

    def usage(self) -> Usage:
        return Usage(self.input, self.cached_input, self.output, self.reasoning)


class UsageRecord(JsonModel):
    """The tokens of a turn's (a cell's, an attempt's) model answers, as :class:`~runner.core.usage.UsageTotals`
    says them: the total, the conversation's and the side requests' (a title, a summary, a sub-agent without the
    catalogue's tools), how many answers were counted and how many of them reported no usage (then the total is a
    lower bound). ``total`` is written for a reader, and checked against the two parts when read.

    ``model`` is the model id the turn asked its endpoint for (``PreparedTurn.model_id``: the live model its profile
    names, or the scripted model's id), what a price file is keyed by (:mod:`runner.conformance.prices`);
    left out by a result written before it was recorded (still version 5: an optional key, read and written back
    as it was), and by a sum over turns of different models."""

    model: str | None = omitted()
    total: Tokens
    conversation: Tokens
    side: Tokens
    answers: int = Field(ge=0)
    unreported: int = Field(ge=0)

    @model_validator(mode="after")
    def _sums(self) -> UsageRecord:
        if self.total.usage() != self.conversation.usage() + self.side.usage():
            raise ValueError("usage total is not conversation + side")
        if self.unreported > self.answers:
            raise ValueError("usage unreported counts more answers than were counted")
        return self

    @classmethod
    def of(cls, totals: UsageTotals, model: str | None = None) -> UsageRecord:
        return cls(model=model, total=Tokens.of(totals.total), conversation=Tokens.of(totals.conversation),
                   side=Tokens.of(totals.side), answers=totals.answers, unreported=totals.unreported)

    def totals(self) -> UsageTotals:
        return UsageTotals(self.conversation.usage(), self.side.usage(), self.answers, self.unreported)


def summed_usage(records: Iterable[UsageRecord | None]) -> UsageRecord | None:
    """The sum of the records given (None when none is), of their model when they all name the same one."""
    held = [r for r in records if r is not None]
    if not held:
        return None
    total = UsageTotals()
    for each in held:
        total = total + each.totals()
    models = {r.model for r in held}
    return UsageRecord.of(total, models.pop() if len(models) == 1 else None)


class FailureRecord(JsonModel):
    """Why an attempt failed (:class:`runner.conformance.failures.Failure`): its cause, its kind in the vocabulary,
    the evidence line, whether runner retries it and whether it counts toward a pass rate (both the kind's rules
    when it was written)."""

    cause: str
    kind: str
    evidence: str
    retried: bool
    counts: bool

    @field_validator("kind")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in KINDS:
            raise ValueError(f"unknown failure kind {value!r}")
        return value

    @classmethod
    def of(cls, failure: Failure) -> FailureRecord:
        return cls(cause=failure.cause.value, kind=failure.kind.name, evidence=failure.evidence,
                   retried=failure.retried, counts=failure.counts)

    @property
    def line(self) -> str:
        """``cli (tools_never_offered): <evidence>``: one line for a report."""
        return f"{self.cause} ({self.kind}): {self.evidence}"


class ToolPolicyRecord(JsonModel):
    """Upstream's ``system.toolPolicy`` (ADR 0027, version ``"2"``) as :mod:`runner.model.tool_policy` measured it
    from the CLI's requests to its model; checked by :class:`~runner.model.tool_policy.ToolPolicy`'s own rules."""

    version: str
    mode: str
    inventory: str
    managed_mcp: tuple[str, ...]
    harness_local: tuple[str, ...] = ()
    external_direct: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()

    @model_validator(mode="after")
    def _upstreams_rules(self) -> ToolPolicyRecord:
        self.policy()
        return self

    @classmethod
    def of(cls, policy: ToolPolicy) -> ToolPolicyRecord:
        return cls.model_validate(policy.to_json())

    def policy(self) -> ToolPolicy:
        """The policy this record holds (ValueError: one upstream's rules refuse)."""
        policy = ToolPolicy.from_json(self.to_dict())
        assert policy is not None
        return policy


class SystemRecord(JsonModel):
    """What upstream's records carry under ``system``: here, the measured tool policy."""

    tool_policy: ToolPolicyRecord | None = omitted()


class TurnSummary(JsonModel):
    """How the turn settled, as the matrix reports it (the whole record is in ``record.json``; every key written,
    null included)."""

    status: str
    reason_code: str | None = None
    reason: str | None = None
    calls_after_escalation: int | None = None
    wind_down_seconds: float | None = None  # the ask answered -> the CLI's exit by itself; null: no ask, or deadline
    harness_outcome: str | None = None
    harness_error_code: str | None = None
    exit_code: int | None = None
    deadline_hit: bool = False
    usage: UsageRecord | None = omitted()  # version 5: the tokens of this turn's model answers (a CLI with a model)


class InfrastructureProblem(JsonModel):
    """What failed around the turn (``kind``: the error's class or the wiring that failed) and its words."""

    kind: str
    detail: str

    @classmethod
    def of(cls, error: BaseException, scrub: Callable[[str], str] = str) -> InfrastructureProblem:
        """An exception raised in runner while a cell ran, as that cell's problem: its type and its words, passed
        through ``scrub`` and bounded (the exception a task group wrapped, not the group; several: the first, and
        the others' types)."""
        leaves = _leaves(error)
        first = leaves[0]
        detail = str(first) or type(first).__name__
        if len(leaves) > 1:
            others = ", ".join(type(e).__name__ for e in leaves[1:])
            detail += f" (and {len(leaves) - 1} more: {others})"
        detail = scrub(detail)
        if len(detail) > MAX_DETAIL:
            detail = detail[: MAX_DETAIL - 1] + "…"
        return cls(kind=type(first).__name__, detail=detail)


def _numeric(value: object) -> bool:
    return isinstance(value, str) and value.isascii() and value.isdigit()


def _leaves(error: BaseException) -> list[BaseException]:
    if isinstance(error, BaseExceptionGroup) and error.exceptions:
        return [leaf for inner in error.exceptions for leaf in _leaves(inner)]
    return [error]


class CellAttempt(JsonModel):
    """One attempt at a cell that took more than one: its number, when it started, what it came to (``status``:
    ``infrastructure_error`` or its grade), what ended it (``infrastructureError``: kind and detail) and, for an
    attempt before the last, where its files are kept (``attempt-<n>``, in the cell directory; the last attempt's
    files are the cell directory's own)."""

    attempt: int = Field(ge=1)
    started_at: str | None = omitted()
    status: str
    infrastructure_error: InfrastructureProblem | None = omitted()
    failure: FailureRecord | None = omitted()  # version 5: why this attempt failed
    usage: UsageRecord | None = omitted()  # version 5: what this attempt's turns cost
    files: str | None = omitted()

    @field_validator("files")
    @classmethod
    def _attempt_dir(cls, value: str | None) -> str | None:
        if value is not None and not ATTEMPT_DIR.match(value):
            raise ValueError(f"{value!r} is not an attempt's directory: expected {ATTEMPT_DIR.pattern}")
        return value

    def summary(self, most: int = MAX_DETAIL) -> str:
        """The attempt on one line: its number, start, what it came to or what ended it (at most ``most``
        characters of that), and where its files are."""
        problem = self.infrastructure_error
        said = f"infrastructure error ({problem.kind}): {problem.detail}" if problem else self.status.replace("_", " ")
        if self.failure is not None:
            said = f"{self.status.replace('_', ' ')}: {self.failure.line}"
        said = " ".join(said.split())
        if len(said) > most:
            said = said[: most - 1].rstrip() + "…"
        started = f" at {self.started_at}" if self.started_at else ""
        kept = f"; its files in {self.files}/" if self.files else ""
        return f"attempt {self.attempt}{started}: {said}{kept}"


class ModelRecord(JsonModel):
    """The model a turn talked to: its mode, why, the host variable a live key came from (never its value), and
    the recording a replay served or the fault a scripted model played."""

    mode: str
    why: str
    credential: str | None = None
    recording: str | None = omitted()
    fault: str | None = omitted()


class CellPins(JsonModel):
    """Every pin of a cell: what makes two of its runs comparable, and what resume compares.

    A pin is written when it was given, null included, and left out when it was not: a cell that ran no turn has no
    ``promptHash`` key, a turn whose record carried none has ``"promptHash": null``; an interruption before the
    cell knew its pins has none at all (``{}``), and trial k >= 2 carries ``trial``.
    """

    case_set_hash: str | None = None
    world_set_hash: str | None = None
    judge_version: JudgeVersion | None = None  # "6"; an older result's 6 is read as "6" (and written back as 6)
    image_id: str | None = None
    cli_version: str | None = None
    runner_version: str | None = None
    model_mode: str | None = None
    behaviour: str | None = None
    profile_hash: str | None = None
    model_fault: str | None = None
    model_dialect: str | None = None
    runtime: str | None = None  # runsc (gVisor); absent under runc, the engine's default
    protocol_version: str | None = None  # the SharedOS protocol epoch: "2"; absent under epoch 1, the first one
    trial: int | None = Field(default=None, ge=1)
    prompt_hash: str | None = None
    catalog_hash: str | None = None

    @model_serializer(mode="wrap")
    def _given_only(self, handler: SerializerFunctionWrapHandler) -> dict[str, JsonValue]:
        given = {self.__class__.model_fields[name].serialization_alias or name for name in self.model_fields_set}
        written: dict[str, JsonValue] = handler(self)
        return {key: value for key, value in written.items() if key in given}

    def with_turn(self, prompt_hash: str | None, catalog_hash: str | None) -> CellPins:
        """These pins and the two a turn adds (given even when the turn's record carried none: written null)."""
        return self.model_copy(update={"prompt_hash": prompt_hash, "catalog_hash": catalog_hash})


class DeclaredGrade(JsonModel):
    """The grade of a cell the judge never saw: an unavailable column, or a run interrupted while the cell ran."""

    status: Literal["unavailable", "interrupted"]
    evidence: str

    @property
    def strict_failure(self) -> bool:
        return False

    def failing_attempts(self) -> set[str]:
        return set()


def _grade_kind(value: object) -> str:
    status = value.get("status") if isinstance(value, dict) else getattr(value, "status", None)
    return "declared" if status in (UNAVAILABLE, INTERRUPTED) else "judged"


# what a result before version 4 calls what it calls now, by the part of the result that holds it
OLD_KEYS: dict[str, dict[str, str]] = {"cell": {"harness": "column"}, "grade": {"harnessId": "columnId"}}


def _renamed(part: object, keys: dict[str, str]) -> object:
    """``part`` (an object of a result) with its keys written under their version-1-to-3 names, in place."""
    if not isinstance(part, dict):
        return part
    return {keys.get(k, k): v for k, v in part.items()}


GradeRecord = Annotated[
    Annotated[CellGrade, Tag("judged")] | Annotated[DeclaredGrade, Tag("declared")],
    Discriminator(_grade_kind),
]


class CellResult(JsonModel):
    """One cell's ``result.json``. Keys are written in this order; each optional one only when it holds something
    (``interrupted`` only when true), except the pins' own rule (:class:`CellPins`)."""

    version: int = MEASURED_VERSION
    cell: CellRef
    interrupted: bool = omitted(empty=True, default=False)
    row: RowDescription | None = omitted()
    pins: CellPins
    repro: str
    deadline_seconds: int | float | None = omitted()  # the deadline asked for (repro reuses it)
    started_at: str | None = omitted()  # the turn's start (ISO-8601 UTC); a cell that ran none: when it was written
    grade: GradeRecord | None = omitted()
    infrastructure_error: InfrastructureProblem | None = omitted()
    failure: FailureRecord | None = omitted()  # version 5: why this attempt failed (None: it did not)
    cell_attempts: tuple[CellAttempt, ...] = omitted(empty=True, default=())  # version 3: each attempt, this one last
    turns: tuple[TurnSummary, ...] = Field(
        default=(), validation_alias=AliasChoices("turn", "turns"), serialization_alias="turn",
        exclude_if=lambda turns: not turns,
    )
    usage: UsageRecord | None = omitted()  # version 5: the tokens of every turn's model answers, summed
    system: SystemRecord | None = omitted()  # version 5: upstream's system.toolPolicy, measured
    model: ModelRecord | None = omitted()
    files: dict[str, str] | None = omitted()
    elapsed_seconds: float | None = omitted()
    transport: str | None = omitted()  # mount or stream: how the container reached the turn's files and sockets

    @field_validator("turns", mode="before")
    @classmethod
    def _one_turn(cls, value: object) -> object:
        """Version 1 holds at most one turn, as ``turn``: an object, or null for none."""
        if value is None:
            return ()
        return (value,) if isinstance(value, dict | TurnSummary) else value

    @property
    def _listed(self) -> bool:
        """Whether the turns are written as a list, ``turns``: always in versions 2 and 3, in version 4 when there are
        several (one is written as ``turn``, as version 1 writes it)."""
        return self.version in (TURNS_VERSION, ATTEMPTS_VERSION) or len(self.turns) > 1

    @field_serializer("turns")
    def _write_turn(self, turns: tuple[TurnSummary, ...]) -> TurnSummary | tuple[TurnSummary, ...] | None:
        if self.version == RESULT_VERSION and len(turns) > 1:
            raise ValueError(f"{self.cell.id}: a result of version {self.version} holds one turn, not {len(turns)}")
        if self._listed:
            return turns
        return turns[0] if turns else None

    @model_serializer(mode="wrap")
    def _version_keys(self, handler: SerializerFunctionWrapHandler) -> dict[str, object]:
        """A list of turns is written as ``turns`` where one is ``turn`` (same position); a result before version 4
        names its harness with the keys it was written with (``cell.column``, the grade's ``columnId``)."""
        body: dict[str, object] = handler(self)
        if self._listed and "turn" in body:
            body = {("turns" if k == "turn" else k): v for k, v in body.items()}
        if self.version < HARNESS_VERSION:
            body = {k: _renamed(v, OLD_KEYS[k]) if k in OLD_KEYS else v for k, v in body.items()}
        pins = body.get("pins")
        if self.version < MEASURED_VERSION and isinstance(pins, dict) and _numeric(pins.get("judgeVersion")):
            body["pins"] = {**pins, "judgeVersion": int(str(pins["judgeVersion"]))}  # as an earlier version wrote it
        return body

    @model_validator(mode="after")
    def _graded_or_broken(self) -> CellResult:
        if self.grade is None and self.infrastructure_error is None:
            raise ValueError("a cell result holds a grade or an infrastructure error; this one holds neither")
        if self.cell_attempts and self.version < ATTEMPTS_VERSION:
            raise ValueError(f"a result of version {self.version} holds no attempts; version {ATTEMPTS_VERSION} does")
        measured = self.failure or self.usage or self.system or any(t.usage for t in self.turns) or any(
            a.failure or a.usage for a in self.cell_attempts)
        if measured and self.version < MEASURED_VERSION:
            raise ValueError(f"a result of version {self.version} holds no usage, failure or system; "
                             f"version {MEASURED_VERSION} does")
        return self

    # --- what every reader asks ---------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.cell.id

    @property
    def turn(self) -> TurnSummary | None:
        """The cell's last turn (the one it is graded on), or None for a cell that ran no turn."""
        return self.turns[-1] if self.turns else None

    @property
    def status(self) -> str:
        """The one word a cell is reported by: its grade, or ``infrastructure_error``."""
        if self.infrastructure_error is not None or self.grade is None:
            return INFRASTRUCTURE_ERROR
        return str(self.grade.status)

    @property
    def evidence(self) -> str:
        return self.grade.evidence if self.grade is not None else self.status

    @property
    def strict_failure(self) -> bool:
        """A grade the gate counts as a failure (upstream's strict grades: ``fail``, ``not_exercised``)."""
        return self.status in STRICT

    @property
    def reusable(self) -> bool:
        """Graded or declared: resume may stand on it (an infrastructure error or an interruption never)."""
        return self.infrastructure_error is None and not self.interrupted

    @property
    def trial(self) -> int:
        """Which trial of its cell this result is (the ``trial`` pin; a result without one is trial 1, the only
        trial of a run with ``--trials 1``)."""
        return self.pins.trial or 1

    @property
    def turn_outcome(self) -> str | None:
        """How the turn settled (``escalated``, ``succeeded`` …), or None for a cell that ran no turn."""
        return self.turn.status if self.turn is not None else None

    def failing_attempts(self) -> set[str]:
        return self.grade.failing_attempts() if self.grade is not None else set()

    @property
    def why(self) -> FailureRecord | None:
        """Why the cell's (last) attempt failed: the failure it holds, or, for a result that holds none (written
        before version 5), the one its infrastructure error names (a graded failure of such a result was never told
        apart, and is None)."""
        if self.failure is not None:
            return self.failure
        problem = self.infrastructure_error
        if problem is None:
            return None
        found = classify(TurnEvidence(infrastructure_kind=problem.kind, infrastructure_detail=problem.detail))
        return FailureRecord.of(found) if found is not None else None

    @property
    def tool_policy(self) -> ToolPolicyRecord | None:
        return self.system.tool_policy if self.system is not None else None

    def finished(self, elapsed_seconds: float) -> CellResult:
        return self.model_copy(update={"elapsed_seconds": elapsed_seconds})

    def with_attempts(self, attempts: tuple[CellAttempt, ...]) -> CellResult:
        """This result (the last attempt's) with every attempt the cell took: version 3 when there was more than
        one, the result as it was otherwise."""
        if len(attempts) < 2:
            return self
        measured = any(a.failure or a.usage for a in attempts)
        version = max(self.version, MEASURED_VERSION if measured else ATTEMPTS_VERSION)
        return self.model_copy(update={"version": version, "cell_attempts": attempts})

    # --- JSON ---------------------------------------------------------------------------------------------

    @classmethod
    def read(cls, data: object, source: str = "result") -> CellResult:
        """Read a result; a shape this runner does not know is a :class:`ResultError` naming ``source`` and the
        field."""
        if not isinstance(data, dict):
            raise ResultError(f"{source}: expected a JSON object")
        version = data.get("version", 1)
        if not isinstance(version, int) or version > READS_UP_TO:
            raise ResultError(
                f"{source}: field 'version': {version!r} is newer than this runner reads ({READS_UP_TO}); "
                "upgrade runner to read it"
            )
        try:
            # a result that does not say its version is version 1, whatever this runner writes
            return cls.model_validate({**data, "version": version})
        except ValidationError as error:
            raise ResultError(f"{source}: not a cell result: {problems(error)}") from None
