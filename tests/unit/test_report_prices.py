"""Costs (issue 31): the model id a usage was spent on, recorded and read back byte for byte, and a price file turning
the recorded tokens into money in the reports, ``runner show`` and ``runner report``, with known numbers; a model the
file does not name is unpriced and said so, never guessed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runner.cli import app
from runner.conformance.prices import parse_prices
from runner.core.usage import Usage, UsageTotals
from runner.errors import Exit
from runner.matrix import report_figures as figures
from runner.matrix.artifact import write_cell
from runner.matrix.report import locate_cells, manifest, markdown
from runner.matrix.result import CellAttempt, CellResult, TurnSummary, UsageRecord, summed_usage
from tests.unit.test_report_measures import run, write

PRICES = parse_prices("currency: EUR\nmodels:\n  m-1: {input: 2.0, cached_input: 0.5, output: 8.0, reasoning: 10.0}\n",
                      "prices.yaml")
TOTALS = UsageTotals(Usage(1000, 400, 50, 10), Usage(200, 0, 10, 0), answers=3)  # in 1,200 (cached 400) out 60 (10)
PRICED = UsageRecord.of(TOTALS, "m-1")
# (1,200 - 400) x 2.0 + 400 x 0.5 + (60 - 10) x 8.0 + 10 x 10.0 = 2,300 per million tokens
ONE = 2300 / 1_000_000


def test_the_model_id_is_written_first_in_the_usage_and_read_back_byte_for_byte(tmp_path: Path) -> None:
    assert list(PRICED.to_dict())[:2] == ["model", "total"] and PRICED.model == "m-1"
    assert "model" not in UsageRecord.of(TOTALS).to_dict()  # not recorded: left out, as before it was
    assert summed_usage([PRICED, None, PRICED]) == UsageRecord.of(TOTALS + TOTALS, "m-1")
    assert summed_usage([PRICED, UsageRecord.of(TOTALS, "m-2")]).model is None  # type: ignore[union-attr]
    result = run("a.base.x", "pass", usage=PRICED).model_copy(update={
        "turns": (TurnSummary(status="succeeded", usage=PRICED),),
        "cell_attempts": (CellAttempt(attempt=1, status="infrastructure_error", usage=PRICED),
                          CellAttempt(attempt=2, status="pass", usage=PRICED))})
    write_cell(tmp_path, result)
    written = (tmp_path / "result.json").read_bytes()
    body = json.loads(written)
    assert body["version"] == 5  # an optional key of version 5: no new version
    assert body["usage"]["model"] == body["turn"]["usage"]["model"] == body["cellAttempts"][0]["usage"]["model"]
    again = CellResult.read(body)
    assert again == result and again.usage is not None and again.usage.model == "m-1"
    write_cell(tmp_path / "again", again)
    assert (tmp_path / "again" / "result.json").read_bytes() == written


def test_a_spend_prices_each_usage_by_its_own_model_and_lists_the_unpriced() -> None:
    spend = figures.spend([PRICED, PRICED, UsageRecord.of(TOTALS, "m-other"), UsageRecord.of(TOTALS)], PRICES)
    assert spend.amount == pytest.approx(2 * ONE) and spend.currency == "EUR"
    assert spend.unpriced == ("(model not recorded)", "m-other")
    assert spend.shown == "0.0046 EUR (unpriced: (model not recorded), m-other)"
    assert figures.spend([UsageRecord.of(TOTALS, "m-other")], PRICES).shown == "- (unpriced: m-other)"
    assert figures.money(12.3456789, "USD") == "12.3457 USD" and figures.money(0.000123456, "USD") == "0.000123 USD"


def priced_runs(tmp_path: Path) -> list[CellResult]:
    """x: a.base.x one run of m-1; b.base.x a run of m-1 after an attempt of m-1 (spent too); y: a model the file does
    not name."""
    retried = (CellAttempt(attempt=1, status="infrastructure_error", usage=PRICED),
               CellAttempt(attempt=2, status="pass"))
    return write(tmp_path, [run("a.base.x", "pass", usage=PRICED), run("b.base.x", "pass", usage=PRICED,
                                                                       attempts=retried),
                            run("a.base.y", "pass", usage=UsageRecord.of(TOTALS, "m-unpriced"))])


def test_the_manifest_and_the_markdown_say_each_cells_and_each_harnesss_cost(tmp_path: Path) -> None:
    runs = priced_runs(tmp_path)
    data = manifest(runs, prices=PRICES).to_dict()
    assert data["prices"] == {"currency": "EUR", "unpriced": ["m-unpriced"]}
    x, y = data["harnesses"]  # type: ignore[misc]
    assert x["cost"] == pytest.approx(3 * ONE) and "unpriced" not in x  # type: ignore[index,operator]
    assert "cost" not in y and y["unpriced"] == ["m-unpriced"]  # type: ignore[index,operator]
    cells = {f"{row['caseId']}.{c['harnessId']}": c for row in data["rows"] for c in row["cells"]}  # type: ignore[union-attr,index]
    assert cells["a.x"]["cost"] == ONE and cells["b.x"]["cost"] == pytest.approx(2 * ONE)
    assert "cost" not in cells["a.y"]
    assert "prices" not in manifest(runs).to_dict() and "cost" not in json.dumps(manifest(runs).to_dict())

    text = markdown(runs, prices=PRICES)
    tokens = text[text.index("## Tokens per harness"):].splitlines()
    assert tokens[2].endswith("| Answers without usage | Cost |")
    assert tokens[4] == "| x | 2 | 3,600 | 1,200 | 180 | 30 | 630 (17%) |  | 0.0069 EUR |"
    assert tokens[5] == "| y | 1 | 1,200 | 400 | 60 | 10 | 210 (17%) |  | - (unpriced: m-unpriced) |"
    costs = text[text.index("## Cost per cell"):].splitlines()
    assert ("**Unpriced models** (the price file names no price for them; their runs have no cost): `m-unpriced`"
            in costs)
    table = costs.index("| Cell | Cost |")
    assert costs[table + 2:table + 6] == ["| `a.base.x` | 0.0023 EUR |", "| `a.base.y` | - (unpriced: m-unpriced) |",
                          "| `b.base.x` | 0.0046 EUR |", ""]
    assert "Cost" not in markdown(runs)


def test_the_html_page_says_the_cost_per_run_and_per_harness(tmp_path: Path) -> None:
    from runner.matrix.html import html_report

    priced_runs(tmp_path)
    page = html_report(locate_cells([tmp_path]), tmp_path / "report.html", prices=PRICES)
    assert "side requests 630 (17%) · cost 0.0069 EUR</td>" in page
    assert "Unpriced models (the price file has no price for them: their runs have no cost)" in page
    data = json.loads(page.split('<script type="application/json" id="report-data">', 1)[1].split("</script>", 1)[0])
    first = next(c for c in data["cells"] if c["id"] == "a.base.x")["runs"][0]
    assert first["tokens"].endswith(" · cost 0.0023 EUR")
    assert "cost" not in html_report(locate_cells([tmp_path]), tmp_path / "report.html")


def test_report_and_show_take_prices_and_refuse_a_bad_file_naming_the_file_and_field(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    priced_runs(runs)
    prices = tmp_path / "prices.yaml"
    prices.write_text("currency: EUR\nmodels:\n  m-1: {input: 2.0, cached_input: 0.5, output: 8.0, reasoning: 10.0}\n")
    manifest_file = tmp_path / "manifest.json"
    done = CliRunner().invoke(app, ["report", str(runs), "--prices", str(prices), "--manifest", str(manifest_file)])
    assert done.exit_code == 0, done.output
    assert "| x | 2 | 3,600 |" in done.stdout and "0.0069 EUR |" in done.stdout
    assert json.loads(manifest_file.read_text())["prices"]["unpriced"] == ["m-unpriced"]

    shown = CliRunner().invoke(app, ["show", str(runs / "b.base.x"), "--prices", str(prices), "--json"])
    assert shown.exit_code == 0, shown.output
    assert json.loads(shown.stdout)["verdict"]["cost"] == {"currency": "EUR", "amount": pytest.approx(2 * ONE),
                                                           "unpriced": []}
    text = CliRunner().invoke(app, ["show", str(runs / "b.base.x"), "--prices", str(prices)]).stdout
    # both attempts' tokens, and it says so: the one retried was spent too (the tokens row is the last attempt's)
    assert "\ncost                  0.0046 EUR (all 2 attempts)\n" in text
    unpriced = CliRunner().invoke(app, ["show", str(runs / "b.base.x"), "--json"]).stdout
    assert json.loads(unpriced)["verdict"]["cost"] is None

    prices.write_text("models:\n  m-1: {input: 2.0, output: -1}\n")
    for command in (["report", str(runs)], ["show", str(runs / "b.base.x")]):
        refused = CliRunner().invoke(app, [*command, "--prices", str(prices)])
        assert refused.exit_code == int(Exit.USAGE), refused.output
        assert f"{prices}: field 'models.m-1.output'" in refused.output and "Traceback" not in refused.output
