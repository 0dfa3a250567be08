"""The GitHub Actions job matrix (``runner matrix --format github``) and ``--shard``: one job per column (or per
shard of a slow column) whatever the number of rows, every cell that runs a turn in exactly one job, no job for a
cell that runs none, compact deterministic JSON that ``fromJSON`` reads, and never more than GitHub's 256 jobs."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from runner.conformance.cases import CASES, Case
from runner.harnesses.profile import Profile, find_profile, shipped_profile
from runner.matrix.cells import MatrixCell, cells
from runner.matrix.github import (
    DEFAULT_SHARD_MINUTES,
    KEYS,
    MAX_JOBS,
    MatrixTooLarge,
    dumps,
    github_matrix,
    plan_shards,
    render_github_output,
)
from runner.matrix.shards import Shard, ShardError, parse_shard, shard_of, shards_needed, sizes


def turn_cells(found: list[MatrixCell]) -> list[str]:
    return [c.id for c in found if c.runs_a_turn()]


def jobs_holding(matrix: dict[str, list[dict[str, str]]], found: list[MatrixCell]) -> dict[str, list[str]]:
    """Which jobs each cell that runs a turn lands in (every job's shard applied to its column's cells)."""
    held: dict[str, list[str]] = {}
    for job in matrix["include"]:
        shard = parse_shard(job["shard"])
        for cell in found:
            if cell.profile.id == job["harness"] and cell.runs_a_turn() and shard.holds(cell.id):
                held.setdefault(cell.id, []).append(job["job"])
    return held


# --- the shipped suite ----------------------------------------------------------------------------------------


def test_the_matrix_survives_a_json_round_trip_as_an_include_list_of_string_entries() -> None:
    matrix = github_matrix(cells())
    assert json.loads(dumps(matrix)) == matrix
    assert list(matrix) == ["include"]  # any other top-level key would become a matrix dimension
    assert matrix["include"], "the shipped profiles and cases give at least one job"
    for job in matrix["include"]:
        assert tuple(job) == KEYS
        assert all(isinstance(value, str) for value in job.values())


def test_todays_full_matrix_is_at_most_two_jobs_per_column_and_every_turn_cell_is_in_one_job() -> None:
    everything = cells()
    matrix = github_matrix(everything)
    per_column: dict[str, int] = {}
    for job in matrix["include"]:
        per_column[job["harness"]] = per_column.get(job["harness"], 0) + 1
    assert per_column and max(per_column.values()) <= 2
    held = jobs_holding(matrix, everything)
    assert sorted(held) == sorted(turn_cells(everything))
    assert all(len(jobs) == 1 for jobs in held.values())
    # and a job says how many cells it holds
    assert sum(int(job["cells"]) for job in matrix["include"]) == len(turn_cells(everything))


def test_each_job_carries_the_profiles_image_and_credential_names() -> None:
    jobs = {job["harness"]: job for job in github_matrix(cells("reference,codex,pi-direct", "escalation"))["include"]}
    assert jobs["reference"]["credentials"] == ""
    assert jobs["codex"]["credentials"] == "OPENAI_API_KEY,CODEX_API_KEY"
    assert jobs["pi-direct"]["image"] == "pi"  # the image build takes the image, run the harness
    for harness, job in jobs.items():
        profile = find_profile(harness)
        assert job["image"] == profile.image and job["job"] == harness and job["shard"] == "1/1"
        assert set(filter(None, job["credentials"].split(","))) == set(profile.credentials)


def test_the_json_is_compact_one_line_and_the_same_every_time() -> None:
    text = dumps(github_matrix(cells()))
    assert "\n" not in text and ": " not in text and ", " not in text
    assert text == json.dumps(json.loads(text), separators=(",", ":"))
    assert dumps(github_matrix(cells())) == text
    # another process, another hash seed: the same bytes (shards are by sha256, never by hash())
    code = "from runner.matrix.cells import cells; from runner.matrix.github import dumps, github_matrix; " \
        "print(dumps(github_matrix(cells(), 1.0)), end='')"
    other = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True,
        env={**os.environ, "PYTHONHASHSEED": "12345"},
    )
    assert other.stdout == dumps(github_matrix(cells(), 1.0))


def test_a_dispatch_for_one_cell_plans_one_job() -> None:
    matrix = github_matrix(cells("codex", "escalation"))
    assert [(j["job"], j["harness"], j["shard"], j["cells"]) for j in matrix["include"]] == [
        ("codex", "codex", "1/1", "1")
    ]


def test_columns_in_the_cells_order_reference_first() -> None:
    matrix = github_matrix(cells("codex,reference", "escalation"))
    assert [job["job"] for job in matrix["include"]] == ["reference", "codex"]


def test_a_repeated_filter_plans_each_cell_once() -> None:
    matrix = github_matrix(cells("reference,reference", "escalation,escalation"))
    assert [(j["job"], j["cells"]) for j in matrix["include"]] == [("reference", "1")]


def test_rows_that_run_no_turn_start_no_job() -> None:
    declared = [c for c in cells("reference", "all") if not c.runs_a_turn()]
    assert declared, "the case set declares rows that run no turn (not implemented, not applicable)"
    assert github_matrix(declared) == {"include": []}


def _profile_dir(tmp_path: Path) -> Path:
    """The shipped reference profile under two more ids: one unavailable, one not."""
    text = shipped_profile("reference").read_text(encoding="utf-8")
    (tmp_path / "spare.yaml").write_text(text.replace("id: reference", "id: spare"), encoding="utf-8")
    (tmp_path / "broken.yaml").write_text(
        text.replace("id: reference", "id: broken") + "\nunavailable: >-\n  cannot run here:\n  no such CLI\n",
        encoding="utf-8",
    )
    return tmp_path


def test_unavailable_columns_start_no_job(tmp_path: Path) -> None:
    all_cells = cells("spare,broken", "escalation", profiles_dirs=[_profile_dir(tmp_path)])
    assert [job["harness"] for job in github_matrix(all_cells)["include"]] == ["spare"]


def test_no_turn_to_run_gives_the_empty_include_the_workflow_checks_for(tmp_path: Path) -> None:
    only_broken = cells("broken", "all", profiles_dirs=[_profile_dir(tmp_path)])
    assert dumps(github_matrix(only_broken)) == '{"include":[]}'
    assert dumps(github_matrix([])) == '{"include":[]}'


def test_github_output_is_one_matrix_line_that_parses() -> None:
    matrix = github_matrix(cells())
    line = render_github_output(matrix)
    assert line.endswith("\n") and line.count("\n") == 1
    key, _, value = line.rstrip("\n").partition("=")
    assert key == "matrix"
    assert json.loads(value) == matrix
    assert len(line.encode()) < 1_000_000  # GitHub's limit for one job output


# --- synthetic suites: many rows, many columns ------------------------------------------------------------------


def synthetic(rows: int, harnesses: int, cell_seconds: float = 20.0, spread: bool = True) -> list[MatrixCell]:
    """``rows`` copies of the escalation row (each its own case id) by ``columns`` copies of the reference
    column, each column with its own measured cell time (spread up to ``cell_seconds``, or all the same)."""
    base: Case = CASES["escalation"]
    reference: Profile = find_profile("reference")
    cases = [dataclasses.replace(base, id=f"row-{n:03d}") for n in range(rows)]
    seconds = [cell_seconds * ((m % 4 + 1) / 4 if spread else 1) for m in range(harnesses)]
    profiles = [
        reference.model_copy(update={"id": f"column-{m:03d}", "cell_seconds": seconds[m]}) for m in range(harnesses)
    ]
    return [MatrixCell(case, condition, profile)
            for case in cases for condition in case.conditions for profile in profiles]


@pytest.mark.parametrize(("rows", "harnesses"), [(1, 1), (32, 9), (60, 16), (60, 1), (1, 16), (45, 12)])
def test_synthetic_suites_stay_within_64_jobs_and_every_cell_lands_in_exactly_one(rows: int, harnesses: int) -> None:
    found = synthetic(rows, harnesses, cell_seconds=40.0)
    matrix = github_matrix(found)
    assert len(matrix["include"]) <= 64
    held = jobs_holding(matrix, found)
    assert sorted(held) == sorted(turn_cells(found))
    assert all(len(jobs) == 1 for jobs in held.values()), "a cell in two jobs"
    # no job holds more turn time than the budget (the budget is met, not merely aimed at)
    assert all(float(job["minutes"]) <= DEFAULT_SHARD_MINUTES for job in matrix["include"])
    assert len({job["job"] for job in matrix["include"]}) == len(matrix["include"]), "artifact names are unique"


def test_a_shard_the_hash_leaves_empty_starts_no_job() -> None:
    found = cells("codex", "escalation,hidden-tool,forged-grant")  # three cells: four shards leave one empty
    one_cell = find_profile("codex").cell_seconds / 60  # whatever the profile's calibrated figure is
    matrix = github_matrix(found, shard_minutes=1.2 * one_cell)  # room for one cell a job, not two
    assert {job["shard"] for job in matrix["include"]} < {f"{k}/4" for k in range(1, 5)}
    assert all(int(job["cells"]) > 0 for job in matrix["include"])
    held = jobs_holding(matrix, found)
    assert sorted(held) == sorted(turn_cells(found)) and all(len(j) == 1 for j in held.values())


def test_the_job_count_does_not_grow_with_the_rows() -> None:
    # cells fast enough to fit one job each: 10 or 60 rows, the same jobs
    few, many = github_matrix(synthetic(10, 16, 4.0)), github_matrix(synthetic(60, 16, 4.0))
    assert len(few["include"]) == len(many["include"]) == 16


def test_a_smaller_budget_gives_more_shards_and_each_job_fits_it() -> None:
    found = synthetic(60, 2, cell_seconds=20.0, spread=False)
    shards = plan_shards(found, shard_minutes=5.0)
    assert all(n >= 4 for n in shards.values())  # 60 cells x 20 s = 20 min, at least four 5-minute slices
    for job in github_matrix(found, shard_minutes=5.0)["include"]:
        assert float(job["minutes"]) <= 5.0 and "of" in job["job"]


def test_trials_count_each_cells_turn_time_n_times_and_keep_a_cells_trials_in_one_job() -> None:
    found = synthetic(30, 2, cell_seconds=20.0, spread=False)  # 10 min a column: one 20-minute job each
    assert all(n == 1 for n in plan_shards(found, shard_minutes=20.0).values())
    tripled = plan_shards(found, shard_minutes=20.0, trials=3)  # 30 min a column: at least two jobs
    assert all(n >= 2 for n in tripled.values())
    matrix = github_matrix(found, shard_minutes=20.0, trials=3)
    assert all(float(job["minutes"]) <= 20.0 for job in matrix["include"])
    held = jobs_holding(matrix, found)
    assert sorted(held) == sorted(turn_cells(found)) and all(len(j) == 1 for j in held.values())


def test_the_plan_makes_jobs_longer_rather_than_refuse_a_selection_that_fits() -> None:
    found = synthetic(60, 100, cell_seconds=60.0)  # a 1-minute budget would want 60 shards a column
    matrix = github_matrix(found, shard_minutes=1.0)
    assert len(matrix["include"]) <= MAX_JOBS
    held = jobs_holding(matrix, found)
    assert sorted(held) == sorted(turn_cells(found)) and all(len(j) == 1 for j in held.values())


def test_256_columns_are_accepted_and_more_are_refused_with_a_hint() -> None:
    assert len(github_matrix(synthetic(1, MAX_JOBS))["include"]) == MAX_JOBS
    with pytest.raises(MatrixTooLarge) as error:
        github_matrix(synthetic(1, MAX_JOBS + 1))
    message = str(error.value)
    assert "257" in message and "256" in message and "--harness" in message


def test_unavailable_columns_do_not_count_towards_the_limit() -> None:
    spare = synthetic(1, MAX_JOBS)
    gone = [MatrixCell(c.case, c.condition,
                       c.profile.model_copy(update={"id": c.profile.id + "-x", "unavailable": "no"}))
            for c in spare[:10]]
    assert len(github_matrix(spare + gone)["include"]) == MAX_JOBS


def test_a_column_id_that_cannot_name_an_artifact_is_refused() -> None:
    [cell] = synthetic(1, 1)
    odd = MatrixCell(cell.case, cell.condition, cell.profile.model_copy(update={"id": "a/b"}))
    with pytest.raises(ValueError, match="artifact"):
        github_matrix([odd])


# --- shards ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text", ["", "1", "0/2", "3/2", "1/0", "a/b", "1/2/3", "-1/2"])
def test_a_malformed_shard_is_refused_with_the_expected_form(text: str) -> None:
    with pytest.raises(ShardError, match="K/N"):
        parse_shard(text)


def test_every_cell_is_in_exactly_one_shard_and_adding_a_row_moves_no_other_cell() -> None:
    ids = [f"row-{n:03d}.baseline.codex" for n in range(50)]
    for count in (1, 2, 3, 7):
        assert sum(sizes(ids, count)) == len(ids)
        assert all(sum(Shard(k, count).holds(i) for k in range(1, count + 1)) == 1 for i in ids)
    before = {i: shard_of(i, 3) for i in ids}
    after = {i: shard_of(i, 3) for i in [*ids[:20], "a-new-row.baseline.codex", *ids[20:]]}
    assert all(after[i] == before[i] for i in ids)


def test_shards_needed_is_the_fewest_whose_largest_slice_fits() -> None:
    ids = [f"c{n}" for n in range(30)]
    count = shards_needed(ids, 10.0, 100.0, most=16)
    assert max(sizes(ids, count)) * 10.0 <= 100.0
    assert count == 1 or max(sizes(ids, count - 1)) * 10.0 > 100.0
    assert shards_needed(ids, 10.0, 100.0, most=2) == 2  # capped: the job is longer, nothing is refused
    assert shards_needed([], 10.0, 100.0, most=4) == 0
