"""One cell's result: the typed, versioned record a cell writes as ``result.json``, and the one thing the run
(resume), the report, ``runner repro``, CI and the CLI read back.

A result is one of:

- **graded**: the judge's grade (``grade``), and, when a turn ran, its summary (``turn``), the model used
  (``model``) and the files it wrote (``files``);
- **declared**: the grade of a row that runs no turn here (``not_implemented``, ``not_applicable``,
  ``out_of_scope``) or of an unavailable column (``unavailable``), with no turn;
- **an infrastructure error** (``infrastructureError``): the engine, an image or the MCP wiring failed; never
  graded as the CLI's conduct, and never reused by resume;
- **interrupted**: the run stopped while the cell ran; never reused by resume.

Every result carries the cell it is (``cell``), its row (``row``), every pin (``pins``: a trial after the first
carries its index as ``trial``) and the command that reruns it alone (``repro``).
The JSON keys are camelCase as in upstream's artifacts; ``version`` says which
shape this is, and :meth:`CellResult.from_json` refuses a newer one by name rather than misread it.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.conformance.judge import STRICT
from runner.errors import UsageError

RESULT_VERSION = 1
INFRASTRUCTURE_ERROR = "infrastructure_error"
INTERRUPTED = "interrupted"
UNAVAILABLE = "unavailable"


class ResultError(UsageError, ValueError):
    """A ``result.json`` that cannot be read as a cell result; the message names the file and the field."""


@dataclass(frozen=True)
class CellRef:
    id: str
    case: str
    condition: str
    column: str

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "case": self.case, "condition": self.condition, "column": self.column}


@dataclass(frozen=True)
class TurnSummary:
    """How the turn settled, as the matrix reports it (the whole record is in ``record.json``)."""

    status: str
    reason_code: str | None = None
    reason: str | None = None
    calls_after_escalation: int | None = None
    harness_outcome: str | None = None
    harness_error_code: str | None = None
    exit_code: int | None = None
    deadline_hit: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status, "reasonCode": self.reason_code, "reason": self.reason,
            "callsAfterEscalation": self.calls_after_escalation, "harnessOutcome": self.harness_outcome,
            "harnessErrorCode": self.harness_error_code, "exitCode": self.exit_code, "deadlineHit": self.deadline_hit,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TurnSummary:
        return cls(
            status=str(data["status"]), reason_code=data.get("reasonCode"), reason=data.get("reason"),
            calls_after_escalation=data.get("callsAfterEscalation"), harness_outcome=data.get("harnessOutcome"),
            harness_error_code=data.get("harnessErrorCode"), exit_code=data.get("exitCode"),
            deadline_hit=bool(data.get("deadlineHit", False)),
        )


@dataclass(frozen=True)
class InfrastructureProblem:
    """What failed around the turn (``kind``: the error's class or the wiring that failed) and its words."""

    kind: str
    detail: str

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "detail": self.detail}


@dataclass(frozen=True)
class CellResult:
    cell: CellRef
    pins: dict[str, Any]
    repro: str
    row: dict[str, Any] | None = None
    grade: dict[str, Any] | None = None  # the judge's cell, as upstream writes it (status, evidence, attempts …)
    turn: TurnSummary | None = None
    model: dict[str, Any] | None = None
    files: dict[str, str] | None = None
    infrastructure_error: InfrastructureProblem | None = None
    interrupted: bool = False
    deadline_seconds: float | None = None  # the deadline asked for (repro reuses it)
    started_at: str | None = None
    elapsed_seconds: float | None = None
    transport: str | None = None  # mount or stream: how the container reached the turn's files and sockets
    version: int = RESULT_VERSION
    directory: Path | None = field(default=None, compare=False)  # where it was read from; never written

    # --- what every reader asks ---------------------------------------------------------------------------

    @property
    def id(self) -> str:
        return self.cell.id

    @property
    def status(self) -> str:
        """The one word a cell is reported by: its grade, or ``infrastructure_error``."""
        if self.infrastructure_error is not None:
            return INFRASTRUCTURE_ERROR
        return str((self.grade or {}).get("status", "unknown"))

    @property
    def evidence(self) -> str:
        return str((self.grade or {}).get("evidence", self.status))

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
        value = self.pins.get("trial", 1)
        return value if isinstance(value, int) and value >= 1 else 1

    @property
    def turn_outcome(self) -> str | None:
        """How the turn settled (``escalated``, ``succeeded`` …), or None for a cell that ran no turn."""
        return self.turn.status if self.turn is not None else None

    def failing_attempts(self) -> set[str]:
        return {a["id"] for a in (self.grade or {}).get("attempts", []) if a.get("status") in STRICT}

    def replace(self, **changes: Any) -> CellResult:
        return dataclasses.replace(self, **changes)

    # --- JSON ---------------------------------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        body: dict[str, Any] = {"version": self.version, "cell": self.cell.to_json()}
        if self.interrupted:
            body["interrupted"] = True
        if self.row is not None:
            body["row"] = self.row
        body["pins"] = self.pins
        body["repro"] = self.repro
        if self.deadline_seconds is not None:
            body["deadlineSeconds"] = self.deadline_seconds
        if self.started_at is not None:
            body["startedAt"] = self.started_at
        if self.grade is not None:
            body["grade"] = self.grade
        if self.infrastructure_error is not None:
            body["infrastructureError"] = self.infrastructure_error.to_json()
        if self.turn is not None:
            body["turn"] = self.turn.to_json()
        if self.model is not None:
            body["model"] = self.model
        if self.files is not None:
            body["files"] = self.files
        if self.elapsed_seconds is not None:
            body["elapsedSeconds"] = self.elapsed_seconds
        if self.transport is not None:
            body["transport"] = self.transport
        return body

    @classmethod
    def from_json(cls, data: Any, source: str = "result") -> CellResult:
        """Read a result; a shape this runner does not know is a :class:`ResultError` naming ``source``."""
        if not isinstance(data, dict):
            raise ResultError(f"{source}: expected a JSON object")
        version = data.get("version", 1)
        if not isinstance(version, int) or version > RESULT_VERSION:
            raise ResultError(
                f"{source}: field 'version': {version!r} is newer than this runner reads ({RESULT_VERSION}); "
                "upgrade runner to read it"
            )
        try:
            ref = data["cell"]
            cell = CellRef(str(ref["id"]), str(ref["case"]), str(ref["condition"]), str(ref["column"]))
            problem = data.get("infrastructureError")
            return cls(
                cell=cell,
                pins=dict(data.get("pins") or {}),
                repro=str(data.get("repro", "")),
                row=data.get("row"),
                grade=data.get("grade"),
                turn=TurnSummary.from_json(data["turn"]) if data.get("turn") else None,
                model=data.get("model"),
                files=data.get("files"),
                infrastructure_error=InfrastructureProblem(str(problem.get("kind")), str(problem.get("detail")))
                if problem else None,
                interrupted=bool(data.get("interrupted", False)),
                deadline_seconds=data.get("deadlineSeconds"),
                started_at=data.get("startedAt"),
                elapsed_seconds=data.get("elapsedSeconds"),
                transport=data.get("transport"),
                version=version,
            )
        except (KeyError, TypeError, AttributeError) as error:
            raise ResultError(f"{source}: field {error}: not a cell result") from None
