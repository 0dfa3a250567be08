"""The bench's phase table (item 8), from turns whose clocks are given: the phases, the floor, runner's share, the
CLI's start beyond its bare boot, the targets and which phase holds the difference."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.bench.figures import MISS, PASS, target_of
from runner.bench.phases import Turn, exchanges_of, harness_figures, holder, phase_table
from runner.bench.plan import plan_for
from runner.bench.run import parse


def turn(began: float = 100.0, before: float = 0.5, boot: float = 1.0, exchanging: float = 0.2,
         wind_down: float = 0.1, after: float = 0.2, containers: int = 1) -> Turn:
    started = began + before
    first = started + boot
    last = first + exchanging
    exited = last + wind_down
    return Turn(began, exited + after, started, exited, ((first, first + exchanging / 2), (first + 0.15, last)),
                containers)


def test_a_turn_splits_into_its_five_phases() -> None:
    phases = turn().phases()
    assert phases == pytest.approx({"before": 0.5, "boot": 1.0, "exchanges": 0.2, "windDown": 0.1, "after": 0.2})
    t = turn()
    assert t.floor == pytest.approx(1.3) and t.wall == pytest.approx(2.0) and t.runner == pytest.approx(0.7)


def test_a_turn_with_no_model_has_no_model_phases() -> None:
    t = Turn(0.0, 3.0, 1.0, 2.5)
    assert t.phases() == {"before": 1.0, "boot": None, "exchanges": None, "windDown": None, "after": 0.5}


def test_the_exchange_log_gives_when_each_request_arrived_and_its_answer_left(tmp_path: Path) -> None:
    log = tmp_path / "model-exchanges.jsonl"
    log.write_text("\n".join(json.dumps(r) for r in [
        {"ts": "2026-12-02T10:00:01.500+00:00", "seq": 1, "duration_s": 0.25},
        {"ts": "2026-12-02T10:00:01.000+00:00", "seq": 2, "duration_s": 0.5},
    ]) + "\n")
    [(a_start, a_end), (b_start, b_end)] = exchanges_of(log)
    assert a_end - a_start == pytest.approx(0.5) and b_end - b_start == pytest.approx(0.25)
    assert b_start - a_start == pytest.approx(0.75)
    assert exchanges_of(tmp_path / "absent.jsonl") == ()


@pytest.mark.parametrize(("phases", "boot", "expected"), [
    ({"before": 1.2, "boot": 0.5, "after": 0.4}, 0.3, "before"),
    ({"before": 0.2, "boot": 0.5, "after": 0.4}, 0.3, "after"),
    ({"before": 0.2, "boot": 9.0, "after": 0.4}, 1.2, "boot"),
    ({"before": 0.2, "boot": None, "after": 0.1}, None, "before"),
])
def test_the_phase_holding_the_difference_is_the_largest(phases: dict[str, float | None], boot: float | None,
                                                          expected: str) -> None:
    assert holder(phases, boot) == expected


def test_a_column_gets_its_ratio_shares_and_boot_excess_with_targets() -> None:
    execs = [turn(before=1.0, boot=3.0, after=0.4, containers=2), turn(before=1.2, boot=3.2, after=0.4)]
    cells = [turn(before=0.1, after=0.1), turn(before=0.2, after=0.1)]
    figures, row = harness_figures("kilo", execs, cells, [1.2, 1.4], 2)
    by_key = {f.key: f for f in figures}
    assert by_key["phases.kilo.runner.exec"].value == pytest.approx(1.5)
    assert by_key["phases.kilo.runner.exec"].verdict == MISS  # target <= 0.8
    assert by_key["phases.kilo.runner.run"].value == pytest.approx(0.25)
    assert by_key["phases.kilo.runner.run"].verdict == PASS  # target <= 0.3
    assert by_key["phases.kilo.boot.excess"].value == pytest.approx(3.1 - 1.3)
    assert by_key["phases.kilo.boot.excess"].verdict == MISS  # target <= 1.0
    assert row["containersPerExec"] == 2 and row["holds"] == "boot"
    assert row["floor"] == pytest.approx(3.4)  # the exec turns' own container start → exit
    assert row["ratio"] == pytest.approx(4.9 / 3.4, abs=1e-3)


def test_the_headline_is_the_worst_column() -> None:
    from runner.bench.phases import headline

    rows = [{"harness": "codex", "runnerExec": 0.6, "runnerRun": 0.2}, {"harness": "kilo", "runnerExec": 0.9,
                                                                        "runnerRun": None}]
    by_key = {f.key: f for f in headline(rows)}
    assert by_key["phases.runnerExec.worst"].value == 0.9 and by_key["phases.runnerExec.worst"].verdict == MISS
    assert by_key["phases.runnerRun.worst"].value == 0.2 and by_key["phases.runnerRun.worst"].verdict == PASS


def test_column_targets_apply_to_every_column_and_nowhere_else() -> None:
    assert target_of("phases.pi-adapter.runner.exec") is not None
    assert target_of("phases.table") is None and target_of("runtime.codex.runner.exec") is None


def test_the_table_prints_a_row_per_column() -> None:
    from rich.console import Console

    _, row = harness_figures("codex", [turn()], [turn()], [0.3], 1)
    console = Console(width=400, record=True)
    console.print(phase_table([row]))
    text = console.export_text()
    assert "codex" in text and "runner → container start" in text and "0.50" in text


def test_the_columns_flag_narrows_the_phases_section() -> None:
    _, plan = parse(["--only", "phases", "--harness", "codex, kilo", "--quick"])
    assert plan.sections == ("phases",) and plan.phase_harnesses == ("codex", "kilo") and plan.phase_reps == 1
    assert plan_for(False).phase_harnesses == ()
