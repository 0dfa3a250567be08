"""The pure parts of ``runner.bench``: percentiles, ratios, target verdicts, the figures built from
samples, and the JSON and table it writes.

No timing is asserted here; the measurements themselves run only under ``make bench``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.bench.cell import cell_figures
from runner.bench.figures import INFO, MISS, NOT_MEASURED, PASS, TARGETS, Figure, Target, not_measured, verdict
from runner.bench.images import cold_figures
from runner.bench.matrix import count_turn_cells
from runner.bench.plan import SECTIONS, plan_for
from runner.bench.report import SCHEMA, document, table
from runner.bench.run import SECTION_FIGURES, failed, parse
from runner.bench.startup import startup_commands, startup_figures
from runner.bench.stats import median, percentile, ratio, summarise
from runner.images import timings

# --- percentiles ------------------------------------------------------------------------------


def test_percentile_interpolates_between_closest_ranks() -> None:
    values = [4.0, 1.0, 3.0, 2.0]  # order does not matter
    assert percentile(values, 0) == 1.0
    assert percentile(values, 100) == 4.0
    assert percentile(values, 50) == pytest.approx(2.5)
    assert percentile(values, 95) == pytest.approx(3.85)  # numpy.percentile([1,2,3,4], 95)


def test_percentile_of_one_sample_is_that_sample() -> None:
    assert percentile([7.5], 50) == 7.5
    assert percentile([7.5], 95) == 7.5


def test_percentile_of_a_hundred_samples_matches_numpy() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == pytest.approx(50.5)
    assert percentile(values, 95) == pytest.approx(95.05)


def test_median_of_odd_and_even_samples() -> None:
    assert median([3.0, 1.0, 2.0]) == 2.0
    assert median([1.0, 2.0, 3.0, 10.0]) == 2.5


@pytest.mark.parametrize("q", [-1, 100.5])
def test_percentile_refuses_a_rank_outside_0_100(q: float) -> None:
    with pytest.raises(ValueError):
        percentile([1.0, 2.0], q)


def test_percentile_refuses_no_samples() -> None:
    with pytest.raises(ValueError):
        percentile([], 50)


def test_summarise_gives_the_shape_and_nothing_for_no_samples() -> None:
    body = summarise([1.0, 2.0, 3.0, 4.0])
    assert set(body) == {"n", "p50", "p95", "min", "max", "mean"}
    assert body["n"] == 4 and body["min"] == 1.0 and body["max"] == 4.0 and body["mean"] == 2.5
    assert summarise([]) == {"n": 0}


# --- ratios and verdicts ----------------------------------------------------------------------


def test_ratio_and_its_missing_cases() -> None:
    assert ratio(3.0, 1.5) == 2.0
    assert ratio(None, 1.0) is None
    assert ratio(1.0, None) is None
    assert ratio(1.0, 0.0) is None
    assert ratio(1.0, -2.0) is None


@pytest.mark.parametrize(
    ("op", "value", "met"),
    [("<", 0.99, True), ("<", 1.0, False), ("<=", 1.0, True), ("<=", 1.01, False),
     (">", 1.01, True), (">", 1.0, False), (">=", 1.0, True), (">=", 0.99, False)],
)
def test_target_operators(op: str, value: float, met: bool) -> None:
    target = Target(op, 1.0)  # type: ignore[arg-type]
    assert target.met(value) is met
    assert verdict(value, target) == (PASS if met else MISS)


def test_verdict_without_a_value_or_a_target() -> None:
    assert verdict(None, Target("<", 1.0)) == NOT_MEASURED
    assert verdict(None, None) == NOT_MEASURED
    assert verdict(3.0, None) == INFO


def test_the_briefed_targets() -> None:
    assert str(TARGETS["mcp.real.p50"]) == "< 1"
    assert str(TARGETS["mcp.ratio.p50"]) == "< 4"
    assert str(TARGETS["cell.ratio.median"]) == "< 1.3"
    assert str(TARGETS["matrix.speedup"]) == ">= 1.6"
    assert str(TARGETS["rss.flood"]) == "< 200"
    assert str(TARGETS["rss.matrix.j2"]) == "< 300"
    assert str(TARGETS["images.warm"]) == "< 5"
    assert str(TARGETS["cell.exec.ratio"]) == "< 1.3"
    assert str(TARGETS["startup.help.ratio"]) == "< 5"
    assert str(TARGETS["startup.cases.ratio"]) == "< 5"
    assert verdict(1.6, TARGETS["matrix.speedup"]) == PASS
    assert verdict(1.3, TARGETS["cell.ratio.median"]) == MISS


def test_a_figure_takes_its_target_by_key() -> None:
    assert Figure("mcp.ratio.p50", 1, "ratio", 2.0, "×").verdict == PASS
    assert Figure("mcp.ratio.p50", 1, "ratio", 4.0, "×").verdict == MISS
    assert Figure("mcp.floor.p50", 1, "floor", 0.3, "ms").verdict == INFO
    assert not_measured("images.cold", 5, "cold", "s", "nothing recorded").verdict == NOT_MEASURED


# --- the JSON ---------------------------------------------------------------------------------


def test_document_shape() -> None:
    figures = [
        Figure("mcp.real.p50", 1, "real p50", 0.8, "ms", "how", "note", {"n": 200}),
        Figure("mcp.ratio.p50", 1, "ratio", 5.0, "×"),
        Figure("mcp.floor.p50", 1, "floor p50", 0.16, "ms"),
        not_measured("images.cold", 5, "cold", "s", "not measured in this run"),
    ]
    machine = {"cores": 2, "memoryMiB": 2048.0, "kernel": "6.1", "docker": {"server": "20.10"}}
    versions = {"runner": "0.1.0", "mcp": "2.3.0", "python": "3.11.7"}
    doc = document(figures, machine, versions, plan_for(True).to_json(), "2026-01-01T00:00:00+00:00", 12.34)
    assert json.loads(json.dumps(doc)) == doc  # plain JSON throughout
    assert doc["schema"] == SCHEMA
    assert set(doc) == {"schema", "startedAt", "elapsedSeconds", "machine", "versions", "options", "figures",
                        "summary"}
    assert doc["elapsedSeconds"] == 12.3
    assert doc["summary"] == {"pass": 1, "miss": 1, "notMeasured": 1, "missed": ["mcp.ratio.p50"]}
    first = doc["figures"][0]
    assert set(first) == {"key", "item", "label", "value", "unit", "target", "verdict", "how", "note", "detail"}
    assert first["target"] == {"op": "<", "threshold": 1.0}
    assert first["verdict"] == PASS and first["detail"] == {"n": 200}
    assert doc["figures"][2]["target"] is None and doc["figures"][2]["verdict"] == INFO
    cold = doc["figures"][3]
    assert cold["value"] is None and cold["verdict"] == NOT_MEASURED and cold["note"]
    assert doc["options"]["quick"] is True


def test_plans() -> None:
    full, quick = plan_for(False), plan_for(True)
    assert (full.mcp_warmup, full.mcp_calls, full.cell_reps, full.matrix_cases) == (20, 200, 5, "all")
    assert quick.mcp_calls < full.mcp_calls and quick.cell_reps < full.cell_reps and quick.matrix_cases != "all"
    assert 3 <= quick.startup_reps < full.startup_reps  # start-up stays cheap under --quick
    assert quick.to_json()["startupRepetitions"] == quick.startup_reps
    assert full.sections == SECTIONS
    assert plan_for(False, ["images", "mcp"]).sections == ("mcp", "images")  # run in item order


def test_cold_figures_come_from_what_each_step_recorded(tmp_path: Path) -> None:
    assert [f.verdict for f in cold_figures(timings.read(tmp_path))] == ["not measured"]
    timings.record(tmp_path, "image.codex", 15.84, recipe="abc")
    timings.record(tmp_path, "base.base", 27.8, bootstrapped=True)
    timings.record(tmp_path, "engine.install", 41.0)
    (tmp_path / timings.DIRECTORY / "image.pi.json").write_text('{"seconds": true}')  # not a number: skipped
    (tmp_path / timings.DIRECTORY / "image.qwen.json").write_text("{not json")
    figures = cold_figures(timings.read(tmp_path))
    assert [(f.key, f.value, f.verdict) for f in figures] == [
        ("cold.engine.install", 41.0, "info"), ("cold.base.base", 27.8, "info"), ("cold.image.codex", 15.84, "info")]
    assert figures[2].label == "cold: build codex" and figures[2].detail["recipe"] == "abc"


def test_count_turn_cells(tmp_path: Path) -> None:
    cells = {
        "escalation.baseline.reference": {"turn": {"status": "escalated"}},
        "hidden-tool.baseline.reference": {"turn": {"status": "succeeded"}},
        "runtime-crashed.baseline.reference": {"grade": {"status": "not_applicable"}},
        "flaky.baseline.reference": {"infrastructureError": {"kind": "mcp_not_connected"}},
    }
    for name, body in cells.items():
        (tmp_path / name).mkdir()
        (tmp_path / name / "result.json").write_text(json.dumps(body))
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "result.json").write_text("{")
    assert count_turn_cells(tmp_path) == {"turn": 2, "declared": 1, "infrastructure": 1}


def test_the_flags_make_the_plan() -> None:
    args, plan = parse(["--quick", "--only", "startup, cell", "--strict", "--out", "x.json"])
    assert plan.quick and plan.sections == ("cell", "startup") and args.strict and args.out == Path("x.json")
    args, plan = parse([])
    assert plan.sections == SECTIONS and not plan.quick and args.out == Path("bench-results.json")
    with pytest.raises(SystemExit):
        parse(["--only", "mcp,nonsense"])


def test_every_section_names_its_headline_figures_and_each_has_a_target() -> None:
    assert set(SECTION_FIGURES) == set(SECTIONS)
    for section in SECTIONS:
        figures = failed(section, "no engine")
        assert figures and all(f.verdict == NOT_MEASURED and f.note == "no engine" for f in figures)
        assert all(f.target is not None for f in figures)


# --- start-up and the cell, from their samples --------------------------------------------------


def test_startup_runs_the_console_script_beside_the_floor() -> None:
    commands = startup_commands()
    assert list(commands) == ["bare", "help", "cases"]
    assert commands["bare"][1:] == ["-c", "pass"]
    assert commands["help"][-1] == "--help" and commands["cases"][-1] == "cases"


def test_startup_ratios_are_medians_over_the_bare_interpreter() -> None:
    walls = {"bare": [0.02, 0.03, 0.025], "help": [0.09, 0.2, 0.1], "cases": [0.5, 0.4, 0.45]}
    figures = {f.key: f for f in startup_figures(walls, 3)}
    assert list(figures) == ["startup.bare.median", "startup.help.median", "startup.help.ratio",
                             "startup.cases.median", "startup.cases.ratio"]
    assert figures["startup.bare.median"].value == pytest.approx(0.025)
    assert figures["startup.help.ratio"].value == pytest.approx(0.1 / 0.025)
    assert figures["startup.help.ratio"].verdict == PASS  # 4×
    assert figures["startup.cases.ratio"].value == pytest.approx(18.0)
    assert figures["startup.cases.ratio"].verdict == MISS
    assert figures["startup.bare.median"].verdict == INFO and figures["startup.help.median"].verdict == INFO
    assert figures["startup.cases.median"].detail["samples"] == [0.5, 0.4, 0.45]


def test_cell_figures_compare_the_exec_process_and_the_running_cell_to_one_floor() -> None:
    walls = {"cell": [1.1, 1.2, 1.0], "exec": [2.0, 2.2, 2.1], "turn": [0.9, 1.0, 1.1],
             "floor": [1.0, 1.0, 1.0], "imports": [0.6, 0.7, 0.8]}
    figures = {f.key: f for f in cell_figures(walls, 3)}
    assert figures["cell.ratio.median"].value == pytest.approx(1.1)
    assert figures["cell.ratio.median"].verdict == PASS
    assert figures["cell.exec.ratio"].value == pytest.approx(2.1)
    assert figures["cell.exec.ratio"].verdict == MISS  # the whole process is held to the same 1.3×
    assert figures["cell.outside.median"].value == pytest.approx(1.1)
    assert figures["cell.ratio.median"].detail == {"turnOverFloor": pytest.approx(1.0)}


# --- the table ----------------------------------------------------------------------------------


def test_the_table_shows_each_value_beside_its_target_and_verdict() -> None:
    from rich.console import Console

    figures = [Figure("startup.help.ratio", 6, "runner --help / python -c pass", 15.04, "×", "how"),
               Figure("cell.exec.ratio", 2, "exec / floor", 1.2, "×"),
               not_measured("images.warm", 5, "warm", "s", "no engine")]
    machine = {"cores": 2, "memoryMiB": 2048.0, "kernel": "6.1", "docker": {"server": "20.10"}}
    doc = document(figures, machine, {"runner": "0.1.0"}, plan_for(True).to_json(), "t", 1.0)
    console = Console(width=200, record=True)
    console.print(table(doc))
    lines = console.export_text().splitlines()
    help_row = next(line for line in lines if "runner --help" in line)
    assert "15.0 ×" in help_row and "< 5" in help_row and "MISS" in help_row
    exec_row = next(line for line in lines if "exec / floor" in line)
    assert "1.200 ×" in exec_row and "< 1.3" in exec_row and "PASS" in exec_row
    warm_row = next(line for line in lines if "warm" in line)
    assert "—" in warm_row and "not measured" in warm_row and "no engine" in warm_row
    assert any("--quick" in line for line in lines)
