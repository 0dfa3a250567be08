"""A cell fails alone, and every attempt at it is kept: what ``runner run`` (:func:`run_matrix`) and
:func:`run_cell` do when a cell raises, is retried, or is cancelled, with a stand-in cell runner or a stand-in turn
(the real engine and CLIs: tests/integration/test_cell_alone.py). And what the turn writes takes any text: a lone
surrogate from a CLI is written as its JSON escape, never a crash."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest

import runner.matrix.run_cell as run_cell_module
from runner.core.scrub import Scrubber
from runner.images import ImageRecord
from runner.matrix.artifact import read_cell, write_cell
from runner.matrix.cells import cells
from runner.matrix.html import html_report
from runner.matrix.plan import CellOptions, CellPlan, plan_cells
from runner.matrix.report import load_cells, locate_cells, markdown
from runner.matrix.result import CellPins, CellResult, InfrastructureProblem
from runner.matrix.run import run_matrix
from runner.matrix.run_cell import run_cell
from runner.model.exchange_log import ExchangeLog
from runner.turn.settings import Host
from tests.unit.test_matrix_report import PINS, result_json

ESCALATION, HIDDEN = "escalation.baseline.reference", "hidden-tool.baseline.reference"
IMAGE = ImageRecord(harness="reference", image_id="sha256:" + "0" * 64, tag="runner/reference:unit", recipe_hash="r",
                    base="b", cli_package=None, cli_version=None, version_output=None, built_at="t")


def plans(cases: str = "escalation,hidden-tool", options: CellOptions | None = None) -> list[CellPlan]:
    return plan_cells(cells("reference", cases), options or CellOptions())


def planned(_plan: CellPlan) -> CellPins:
    return CellPins.model_validate(PINS)


def graded(plan: CellPlan, directory: Path, status: str = "pass") -> CellResult:
    outcome = CellResult.read(result_json(plan.id, status))
    write_cell(directory, outcome)
    return outcome


def broken(plan: CellPlan, directory: Path, kind: str, detail: str) -> CellResult:
    outcome = CellResult.read({**result_json(plan.id, "pass"), "infrastructureError": {"kind": kind, "detail": detail}})
    write_cell(directory, outcome)
    return outcome


@pytest.mark.parametrize(("error", "kind", "words"), [
    (RecursionError("maximum recursion depth exceeded while decoding a JSON array from a unicode string"),
     "RecursionError", "maximum recursion depth exceeded"),
    (UnicodeEncodeError("utf-8", "a \ud83d b", 2, 3, "surrogates not allowed"), "UnicodeEncodeError",
     "surrogates not allowed"),
    (OSError(28, "No space left on device"), "OSError", "[Errno 28] No space left on device"),
    (ExceptionGroup("unhandled errors in a TaskGroup", [PermissionError(13, "Permission denied")]),
     "PermissionError", "[Errno 13] Permission denied"),
])
def test_a_cell_that_raises_is_its_own_infrastructure_error_and_its_sibling_is_graded(
    tmp_path: Path, error: Exception, kind: str, words: str
) -> None:
    async def one(plan: CellPlan, directory: Path) -> CellResult:
        if plan.id == ESCALATION:
            raise error
        return graded(plan, directory)

    summary = anyio.run(lambda: run_matrix(plans(), tmp_path, one, planned, jobs=2, retries=0))
    assert summary.ran == [HIDDEN] and summary.infrastructure == [ESCALATION] and not summary.interrupted
    failed = read_cell(tmp_path / ESCALATION)
    assert failed is not None and failed.infrastructure_error is not None  # written, and read back
    assert failed.infrastructure_error.kind == kind and words in failed.infrastructure_error.detail
    assert failed.status == "infrastructure_error" and not failed.reusable
    assert read_cell(tmp_path / HIDDEN).status == "pass"  # type: ignore[union-attr]


def test_a_group_of_several_errors_names_the_first_and_the_others_types() -> None:
    group = BaseExceptionGroup("x", [ValueError("bad frame"), ExceptionGroup("y", [OSError(5, "I/O error")])])
    problem = InfrastructureProblem.of(group)
    assert problem.kind == "ValueError" and problem.detail == "bad frame (and 1 more: OSError)"
    assert len(InfrastructureProblem.of(RuntimeError("x" * 10_000)).detail) == 4000


def test_an_exception_in_a_turn_is_the_cells_infrastructure_error_with_its_traceback_scrubbed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-unit-secret-0123456789"
    [plan] = plans("escalation", CellOptions(host=Host(variables={"VENDOR_API_KEY": secret})))

    async def full_disk(*_args: Any, **_kwargs: Any) -> object:
        raise ExceptionGroup("unhandled errors in a TaskGroup", [OSError(28, f"No space left writing {secret}")])

    monkeypatch.setattr(run_cell_module, "run_turn", full_disk)
    result, report = anyio.run(lambda: run_cell(object(), plan, tmp_path, image=IMAGE))  # type: ignore[arg-type]
    assert report is None and result.infrastructure_error is not None
    assert result.infrastructure_error.kind == "OSError"
    assert result.infrastructure_error.detail == "[Errno 28] No space left writing [scrubbed:VENDOR_API_KEY]"
    assert result.pins.image_id == IMAGE.image_id  # the pins it knew when it failed
    written = (tmp_path / "result.json").read_text()
    told = (tmp_path / "traceback.txt").read_text()
    assert secret not in written and secret not in told and "OSError: [Errno 28]" in told
    assert read_cell(tmp_path) == result and result.files == {"traceback": "traceback.txt"}


def test_a_failure_that_comes_of_a_cancellation_is_the_cancellation(tmp_path: Path) -> None:
    """Ctrl-C cancels the running cells: each is written ``interrupted`` (a rerun picks it up), even when what the
    cancellation broke raised an error of its own on the way out, and the cancellation goes on."""
    started = anyio.Event()

    async def stuck(plan: CellPlan, directory: Path) -> CellResult:
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            raise BrokenPipeError(32, "the container's stream closed under the cancellation")
        raise AssertionError("unreachable")

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            tg.start_soon(lambda: run_matrix(plans("escalation"), tmp_path, stuck, planned, retries=0))
            await started.wait()
            tg.cancel_scope.cancel()

    anyio.run(main)
    cut = read_cell(tmp_path / ESCALATION)
    assert cut is not None and cut.interrupted and cut.status == "interrupted"


def test_every_attempt_writes_its_own_files_and_the_result_lists_them_all(tmp_path: Path) -> None:
    """An attempt the infrastructure ended (the engine could not start the container) is retried, and a pass after it
    says so; each attempt keeps why it failed (``failure``: its cause and kind, retried). Each attempt
    writes in a cleared directory, an earlier one's files kept in ``attempt-<n>/``, none appended to another's; an
    earlier run's leftovers go, a trial and a rerun kept inside the cell directory stay."""
    cell = tmp_path / ESCALATION
    leftovers = ("session/result.json", "model-exchanges.jsonl", "trial-2/keep", "repro-20260101T000000Z-abcdef/keep")
    for leftover in leftovers:
        (cell / leftover).parent.mkdir(parents=True, exist_ok=True)
        (cell / leftover).write_text("from an earlier run\n")
    seen: list[list[str]] = []

    async def flaky(plan: CellPlan, directory: Path) -> CellResult:
        seen.append(sorted(p.name for p in directory.iterdir()))
        attempt = len(seen)
        (directory / "model-exchanges.jsonl").write_text(json.dumps({"attempt": attempt}) + "\n")
        if attempt == 1:
            return broken(plan, directory, "container_not_started", "the engine could not start the container")
        return graded(plan, directory)

    summary = anyio.run(lambda: run_matrix(plans("escalation"), tmp_path, flaky, planned, retries=2))
    assert summary.ran == [ESCALATION]
    assert seen == [["repro-20260101T000000Z-abcdef", "trial-2"], ["attempt-1", "repro-20260101T000000Z-abcdef",
                                                                   "trial-2"]]
    assert (cell / "model-exchanges.jsonl").read_text() == '{"attempt": 2}\n'  # its own, not appended
    assert (cell / "attempt-1" / "model-exchanges.jsonl").read_text() == '{"attempt": 1}\n'
    assert read_cell(cell / "attempt-1").status == "infrastructure_error"  # type: ignore[union-attr]
    assert (cell / "trial-2" / "keep").exists() and not (cell / "session").exists()

    body = json.loads((cell / "result.json").read_text())
    assert body["version"] == 5 and body["grade"]["status"] == "pass"
    first, second = body["cellAttempts"]
    assert first["attempt"] == 1 and first["status"] == "infrastructure_error" and first["files"] == "attempt-1"
    assert first["infrastructureError"] == {"kind": "container_not_started",
                                            "detail": "the engine could not start the container"}
    assert first["failure"] == {"cause": "engine", "kind": "container_not_started",
                                "evidence": "the engine could not start the container",
                                "retried": True,
                                "counts": False}
    assert "failure" not in second
    assert second["attempt"] == 2 and second["status"] == "pass" and "files" not in second
    assert first["startedAt"] <= second["startedAt"]

    [run] = load_cells([tmp_path])  # the attempt kept in attempt-1/ is not a run of its own
    text = markdown([run])
    assert "## Retried cells: every attempt" in text
    assert f"- `{ESCALATION}` (pass after 2 attempts)" in text
    assert "attempt 1 at " in text and ": infrastructure error: engine (container_not_started): " \
        "the engine could not start the container; its files in attempt-1/" in text
    page = html_report(locate_cells([tmp_path]), tmp_path / "report.html")
    assert "attempt 1 at " in page and "engine (container_not_started)" in page  # in the drill-down
    again = anyio.run(lambda: run_matrix(plans("escalation"), tmp_path, flaky, planned))
    assert again.reused == [ESCALATION]  # a pass after a retry is still a pass resume stands on


def test_a_result_of_version_3_is_refused_without_its_attempts_shape_and_older_ones_still_load() -> None:
    body = result_json(ESCALATION, "pass")
    attempts = [{"attempt": 1, "status": "infrastructure_error", "files": "attempt-1",
                 "infrastructureError": {"kind": "k", "detail": "d"}}, {"attempt": 2, "status": "pass"}]
    assert len(CellResult.read({**body, "version": 3, "cellAttempts": attempts}).cell_attempts) == 2
    with pytest.raises(ValueError, match="a result of version 1 holds no attempts"):
        CellResult.read({**body, "cellAttempts": attempts})
    with pytest.raises(ValueError, match=r"field 'cellAttempts\.0\.files'"):
        CellResult.read({**body, "version": 3, "cellAttempts": [{**attempts[0], "files": "../elsewhere"}]})
    assert CellResult.read(body).cell_attempts == ()  # version 1, as every older runner wrote it


def test_a_lone_surrogate_is_written_as_its_json_escape_never_a_crash(tmp_path: Path) -> None:
    lone = "the CLI said \ud83d and stopped"
    problem = InfrastructureProblem(kind="UnicodeEncodeError", detail=lone)
    result = CellResult.read(result_json(ESCALATION, "pass")).model_copy(
        update={"grade": None, "infrastructure_error": problem})
    write_cell(tmp_path, result)
    assert "\\ud83d" in (tmp_path / "result.json").read_text()
    assert read_cell(tmp_path).infrastructure_error.detail == lone  # type: ignore[union-attr]

    log_file = tmp_path / "model-exchanges.jsonl"
    log_file.write_text('{"an earlier attempt": true}\n')
    log = ExchangeLog(log_file, Scrubber({}))
    log.write({"request": {"body": {"text": lone}}})
    log.close()
    [line] = log_file.read_text().splitlines()  # written anew, not appended to the earlier attempt's
    assert json.loads(line)["request"]["body"]["text"] == lone


@pytest.mark.parametrize(("kind", "detail", "named", "tries"), [
    ("mcp_not_connected", "the CLI never opened an MCP session on the mounted socket", "mcp_never_opened", 1),
    ("OSError", "[Errno 28] No space left on device", "runner_error", 1),
    ("EngineError", "the engine answered 503", "engine_call_failed", 3),
    ("disk_budget_exceeded", "the CLI wrote 2 GiB", "disk_budget_exceeded", 3),
])
def test_an_attempt_is_retried_by_its_failures_rule_and_the_clis_conduct_never(
    tmp_path: Path, kind: str, detail: str, named: str, tries: int
) -> None:
    """Whether ``runner run`` tries a cell again is its failure kind's rule (runner.conformance.failures): the
    engine and the box are retried, a CLI that never connected its MCP server (its conduct) and runner's own bug
    never are, whatever the retry budget."""
    calls: list[int] = []

    async def failing(plan: CellPlan, directory: Path) -> CellResult:
        calls.append(1)
        return broken(plan, directory, kind, detail)

    summary = anyio.run(lambda: run_matrix(plans("escalation"), tmp_path, failing, planned, retries=2))
    assert len(calls) == tries and summary.infrastructure == [ESCALATION]
    result = summary.results[ESCALATION]
    assert result.why is not None and result.why.kind == named
    if tries > 1:
        assert [a.failure.kind for a in result.cell_attempts if a.failure] == [named] * tries
        assert json.loads((tmp_path / ESCALATION / "result.json").read_text())["version"] == 5
