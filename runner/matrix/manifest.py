"""The report's ``manifest.json`` as typed models: what ``runner report`` writes and what ``runner report --compare``
reads back from an earlier run.

The keys are written in the order they always were; a key that holds nothing is left out where it always was (a
cell's grade fields when it has no grade, its CLI outcome when no turn ran, its runs when it has one) and written
as null where it always was (``gate``, a row's description, a run's ``turn``).

An earlier manifest is read leniently (``extra="ignore"``): it may come from another runner version (the default
branch's last artifact), and only its rows, cells and shared pins are compared. Version 1 named each cell's harness
its column (``columnId``, ``columns``); it is read as version 2 writes it (``harnessId``, ``harnesses``).
"""

from __future__ import annotations

from pydantic import AliasChoices, ConfigDict, Field

from runner.conformance.hashing import JudgeVersion
from runner.conformance.jsonmodel import JsonModel, JsonValue, omitted
from runner.matrix.gate import Gate
from runner.matrix.result import FailureRecord, InfrastructureProblem, ToolPolicyRecord, TurnSummary, UsageRecord

MANIFEST_VERSION = "2"


class ManifestModel(JsonModel):
    model_config = ConfigDict(extra="ignore")


class Run(ManifestModel):
    """One run of a cell: what it found, never when or where."""

    run: int
    trial: int
    status: str
    evidence: str
    turn: TurnSummary | None = None
    infrastructure_error: InfrastructureProblem | None = omitted()
    failure: FailureRecord | None = omitted()
    usage: UsageRecord | None = omitted()


class ManifestCell(ManifestModel):
    """One (row, harness): its status (the series' when it has several runs), its grade's fields but status and
    attempts, the CLI's version and own outcome, and, with several runs, their stability and each run."""

    harness_id: str = Field(validation_alias=AliasChoices("harnessId", "columnId"))
    status: str
    case_id: str | None = omitted()
    condition_id: str | None = omitted()
    refused_by: tuple[str, ...] | None = omitted()
    reason_codes: tuple[str, ...] | None = omitted()
    declared: int | None = omitted()
    attempted: int | None = omitted()
    not_applicable: int | None = omitted()
    record_usable: bool | None = omitted()
    record_gaps: tuple[str, ...] | None = omitted()
    driver_issued: tuple[str, ...] | None = omitted()
    turns: int | None = omitted()
    detail: str | None = omitted()
    evidence: str | None = omitted()
    cli_version: str | None = omitted()
    harness_outcome: str | None = omitted()
    harness_error_code: str | None = omitted()
    stability: str | None = omitted()
    turn_outcome: str | None = omitted()
    failure: FailureRecord | None = omitted()  # why its (last failing) run failed
    usage: UsageRecord | None = omitted()  # every run's tokens, summed
    cost: float | None = omitted()  # with --prices: what those tokens cost, in the price file's currency
    tool_policy: ToolPolicyRecord | None = omitted()  # as its last run measured it
    rate: dict[str, JsonValue] | None = omitted()  # with several runs: passes, Wilson interval, pass@k, pass^k
    trials: tuple[Run, ...] | None = omitted()


class ManifestRow(ManifestModel):
    case_id: str
    condition_id: str
    kind: str | None = None
    invariant: str | None = None
    expected_outcome: str | None = None
    cells: tuple[ManifestCell, ...] = ()


class ManifestHarness(ManifestModel):
    """One harness of a group: its prompt set; and, where its runs measured them, its tokens, its failed attempts by
    cause, its pass rate (with several runs of a cell) and its tool policy."""

    id: str
    prompt_set_hash: str | None = None
    usage: UsageRecord | None = omitted()
    cost: float | None = omitted()  # with --prices: what its priced runs cost, in the price file's currency
    unpriced: tuple[str, ...] = omitted(empty=True, default=())  # with --prices: its models the file has no price for
    failures: dict[str, int] | None = omitted()  # failed attempts by cause (engine, cli, ...), every attempt
    rate: dict[str, JsonValue] | None = omitted()
    tool_policy: ToolPolicyRecord | None = omitted()


class PricesUsed(ManifestModel):
    """The price file a report's costs were computed with (``--prices``): its currency, and every model a run spent
    tokens on that it has no price for (their runs have no cost: never a guessed one)."""

    currency: str
    unpriced: tuple[str, ...] = ()


class KeptApart(ManifestModel):
    """A group of runs not comparable with the first, and the pins that kept it apart."""

    apart: tuple[str, ...] = ()
    judge_version: JudgeVersion | None = None  # "6"; an earlier manifest's 6 reads as "6"
    case_set_hash: str | None = None
    world_set_hash: str | None = None
    harnesses: tuple[ManifestHarness, ...] = Field(default=(), validation_alias=AliasChoices("harnesses", "columns"))
    rows: tuple[ManifestRow, ...] = ()


class Manifest(ManifestModel):
    """The report: the first group of comparable runs at the top, the others under ``keptApart``."""

    version: str = MANIFEST_VERSION
    judge_version: JudgeVersion | None = None  # "6"; an earlier manifest's 6 reads as "6"
    case_set_hash: str | None = None
    world_set_hash: str | None = None
    harnesses: tuple[ManifestHarness, ...] = Field(default=(), validation_alias=AliasChoices("harnesses", "columns"))
    rows: tuple[ManifestRow, ...]
    comparability: tuple[str, ...] = ()
    kept_apart: tuple[KeptApart, ...] = ()
    findings: tuple[str, ...] = ()
    prices: PricesUsed | None = omitted()  # with --prices: the currency of every cost, and the models left unpriced
    gate: Gate | None = None

    def cells(self) -> dict[str, ManifestCell]:
        """Every cell of the first group, by cell id (``case.condition.harness``)."""
        return {f"{row.case_id}.{row.condition_id}.{cell.harness_id}": cell for row in self.rows for cell in row.cells}
