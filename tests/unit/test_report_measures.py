"""The reports of runs that carry issue 31's figures: tokens per harness and per cell, failed attempts by cause,
pass rates with their Wilson interval (and pass@k / pass^k per cell) when a cell ran more than once, JUnit naming the
cause, and two runs compared beyond noise."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from runner.conformance.failures import failure
from runner.core.usage import Usage, UsageTotals
from runner.matrix.artifact import write_cell
from runner.matrix.report import junit, load_cells, manifest, markdown
from runner.matrix.report_compare import compare_runs, comparison_markdown
from runner.matrix.result import (
    MEASURED_VERSION,
    CellAttempt,
    CellPins,
    CellResult,
    FailureRecord,
    InfrastructureProblem,
    SystemRecord,
    ToolPolicyRecord,
    UsageRecord,
)
from runner.model.tool_policy import ToolPolicy
from tests.unit.test_matrix_report import result_json

USAGE = UsageRecord.of(UsageTotals(Usage(1000, 400, 50, 10), Usage(200, 0, 10, 0), answers=3))
BROKER = ToolPolicy("broker-only", "complete", ("sharedos",), evidence=("model-exchanges.jsonl#seq=1",))
MIXED = ToolPolicy("mixed", "complete", ("sharedos",), harness_local=("shell",), evidence=("x#seq=1",))


def run(cell_id: str, status: str, trial: int = 1, *, kind: str | None = None, policy: ToolPolicy = BROKER,
        usage: UsageRecord | None = USAGE, attempts: tuple[CellAttempt, ...] = ()) -> CellResult:
    base = CellResult.read({**result_json(cell_id, "pass" if status == "infrastructure_error" else status),
                            "version": MEASURED_VERSION})
    update: dict[str, object] = {
        "usage": usage, "system": SystemRecord(tool_policy=ToolPolicyRecord.of(policy)),
        "failure": FailureRecord.of(failure(kind, f"{kind} seen")) if kind else None,
        "pins": CellPins.model_validate({**base.pins.to_dict(), **({"trial": trial} if trial > 1 else {})}),
        "cell_attempts": attempts,
    }
    if status == "infrastructure_error":
        update["infrastructure_error"] = InfrastructureProblem(kind="ContainerStartError", detail="no room")
    return base.model_copy(update=update)


def write(tmp: Path, runs: list[CellResult]) -> list[CellResult]:
    for each in runs:
        directory = tmp / each.id / (f"trial-{each.trial}" if each.trial > 1 else "")
        write_cell(directory, each)
    return load_cells([tmp])


def test_the_markdown_totals_tokens_breaks_failures_down_by_cause_and_rates_trials(tmp_path: Path) -> None:
    retried = (CellAttempt(attempt=1, status="infrastructure_error", usage=USAGE, failure=FailureRecord.of(
        failure("container_not_started", "no room"))), CellAttempt(attempt=2, status="pass"))
    runs = write(tmp_path, [
        run("a.base.x", "pass"), run("a.base.x", "fail", 2, kind="conduct"), run("a.base.x", "pass", 3),
        run("b.base.x", "fail", kind="tools_never_offered"),
        run("a.base.y", "pass", usage=None, attempts=retried), run("b.base.y", "infrastructure_error",
                                                                   kind="container_not_started"),
    ])
    text = markdown(runs)
    tokens = text[text.index("## Tokens per harness"):].splitlines()
    # x: four runs; y: the run that reported usage, and the attempt before the last of the other (spent too)
    assert tokens[4] == "| x | 4 | 4,800 | 1,600 | 240 | 40 | 840 (17%) |  |"
    assert tokens[5] == "| y | 1 | 2,400 | 800 | 120 | 20 | 420 (17%) |  |"
    causes = text[text.index("## Failed attempts by cause, per harness"):].splitlines()
    assert causes[2] == "| Harness | engine | cli |"
    assert causes[4] == "| x |  | 2 (conduct 1, tools_never_offered 1) |"
    assert causes[5] == "| y | 2 (container_not_started 2) |  |"
    rates = text[text.index("## Pass rates per harness (runs that count)"):].splitlines()
    # y's infrastructure error does not count toward its rate: 1 of 1 run counted
    assert rates[4] == "| x | 2/4 (95% CI 15-85%) | 0 | 1 | 1 |"
    assert rates[5] == "| y | 1/1 (95% CI 21-100%) | 1 | 0 | 0 |"
    assert "  - cause: cli (conduct)" in text and "  - runs: 2/3 (95% CI 21-94%) · pass@3 100% · pass^3 0%" in text

    data = manifest(runs).to_dict()
    x = next(h for h in data["harnesses"] if h["id"] == "x")  # type: ignore[union-attr,index]
    assert x["failures"] == {"cli": 2} and x["toolPolicy"]["mode"] == "broker-only"  # type: ignore[index]
    assert x["usage"]["total"]["input"] == 4800 and x["rate"]["trials"] == 4  # type: ignore[index]
    cell = data["rows"][0]["cells"][0]  # type: ignore[index]
    assert cell["harnessId"] == "x" and cell["rate"]["passAtK"] == {"1": 2 / 3, "3": 1.0}  # type: ignore[index]
    assert cell["failure"]["kind"] == "conduct" and cell["usage"]["answers"] == 9  # type: ignore[index]
    assert [t.get("failure", {}).get("kind") for t in cell["trials"]] == [None, "conduct", None]  # type: ignore[index,union-attr]

    suites = ET.fromstring(junit(runs))
    failing = suites.find("testsuite[@name='x']/testcase[@name='b.base']/failure")
    assert failing is not None and failing.get("type") == "tools_never_offered"
    assert (failing.get("message") or "").startswith("cli (tools_never_offered): fail: ")
    error = suites.find("testsuite[@name='y']/testcase[@name='b.base']/error")
    assert error is not None and error.get("type") == "container_not_started"
    assert error.get("message") == "engine (container_not_started): no room"


def test_a_run_without_the_figures_reports_as_it_always_did(tmp_path: Path) -> None:
    runs = write(tmp_path, [CellResult.read(result_json("a.base.x", "fail"))])
    text = markdown(runs)
    for heading in ("Tokens per harness", "by cause", "Pass rates"):
        assert heading not in text
    assert "cause:" not in text and "type=" not in junit(runs)


def test_two_runs_are_compared_beyond_noise_and_a_new_local_tool_is_a_finding(tmp_path: Path) -> None:
    before = [run("a.base.x", "pass", n) for n in range(1, 11)] + [run("a.base.y", "pass")]
    after = [run("a.base.x", "fail", n, kind="conduct", policy=MIXED) for n in range(1, 11)] + [
        run("a.base.y", "pass"), run("b.base.y", "pass")]
    found = compare_runs(before, after)
    x, y = found.harnesses
    assert x.rate.differs and x.rate.direction == "lower" and x.rate.p_value < 1e-4
    assert x.findings == ["tool policy broker-only -> mixed", "new local tools: shell"]
    assert not y.rate.differs and y.findings == []
    assert [cell for cell, c in found.cells] == ["a.base.x"] and found.only_in_b == ("b.base.y",)
    text = comparison_markdown(found, "main", "bump")
    assert "| x | 10/10 (95% CI 72-100%) -> 0/10 (95% CI 0-28%): lower beyond noise" in text
    assert "tool policy broker-only -> mixed; new local tools: shell |" in text
    assert "- `a.base.x`: 10/10" in text and found.differs
    noise = compare_runs([run("a.base.x", "pass", n) for n in (1, 2)],
                         [run("a.base.x", "pass"), run("a.base.x", "fail", 2, kind="conduct")])
    assert not noise.differs and "within noise" in comparison_markdown(noise)
    assert json.dumps(x.rate.to_json())  # what a --json comparison would carry


def test_the_html_page_says_each_harnesss_figures_and_each_runs_in_its_drill_down(tmp_path: Path) -> None:
    from runner.matrix.html import html_report
    from runner.matrix.report import locate_cells

    write(tmp_path, [run("a.base.x", "pass"), run("a.base.x", "fail", 2, kind="conduct", policy=MIXED)])
    page = html_report(locate_cells([tmp_path]), tmp_path / "report.html")
    assert "Per harness: tokens, failures by cause, pass rate, tool policy" in page
    assert ("<td>in 2,400 (cached 800) · out 120 (reasoning 20) · side requests 420 (17%)</td><td>cli 1</td>"
            "<td>1/2 (95% CI 9-91%)</td><td>mixed (inventory complete); the CLI&#x27;s own: shell</td>") in page
    data = json.loads(page.split('<script type="application/json" id="report-data">', 1)[1].split("</script>", 1)[0])
    second = data["cells"][0]["runs"][1]
    assert second["failure"] == "cli (conduct): conduct seen" and second["toolPolicy"].startswith("mixed")
    assert second["tokens"].startswith("in 1,200 (cached 400)")


def test_report_compare_run_says_per_harness_beyond_noise_and_exits_1_on_a_drop(tmp_path: Path) -> None:
    """`runner report B --compare A` with A a run's directory: the comparison (Markdown, or JSON with --json), and
    exit 1 when a harness's rate dropped beyond noise, whatever the gate."""
    from typer.testing import CliRunner

    from runner.cli import app

    a, b, noise = tmp_path / "a", tmp_path / "b", tmp_path / "noise"
    write(a, [run("a.base.x", "pass", n) for n in range(1, 11)] + [run("a.base.y", "pass")])
    write(b, [run("a.base.x", "fail", n, kind="conduct", policy=MIXED) for n in range(1, 11)] + [run("a.base.y",
                                                                                                     "pass")])
    write(noise, [run("a.base.x", "pass", n) for n in range(1, 10)] + [run("a.base.x", "fail", 10, kind="conduct"),
                                                                      run("a.base.y", "pass")])
    expected = tmp_path / "expected.yml"
    expected.write_text("- cell: a.base.x\n  reason: broken on purpose\n  unstable: true\n")
    gated = ["--expected-failures", str(expected)]  # the gate passes: what exits is the comparison

    printed = CliRunner().invoke(app, ["report", str(b), "--compare", str(a), "--json", *gated])
    assert printed.exit_code == 1 and "lower beyond noise than" in printed.stderr and "a.base.x" in printed.stderr
    assert "gate passed" in printed.stderr
    body = json.loads(printed.stdout)  # one object, and nothing else, on stdout
    assert body["dropped"] == ["x", "a.base.x"] and body["differs"] is True
    x, y = body["harnesses"]
    assert x["harness"] == "x" and x["rate"]["direction"] == "lower" and x["rate"]["pValue"] < 1e-4
    assert x["rate"]["a"] == {"passes": 10, "trials": 10} and x["rate"]["b"] == {"passes": 0, "trials": 10}
    assert x["toolPolicy"] == {"measured": True, "findings": ["tool policy broker-only -> mixed",
                                                              "new local tools: shell"]}
    assert y["rate"]["differs"] is False and body["onlyInA"] == body["onlyInB"] == []

    text = CliRunner().invoke(app, ["report", str(b), "--compare", str(a), "--compare-label", "main", *gated])
    assert text.exit_code == 1 and text.stdout.startswith(f"# `{b}` against main\n")
    assert "| x | 10/10 (95% CI 72-100%) -> 0/10 (95% CI 0-28%): lower beyond noise" in text.stdout
    assert "# Conformance report" not in text.stdout  # the comparison replaces the report on stdout

    within = CliRunner().invoke(app, ["report", str(noise), "--compare", str(a), "--diff", str(tmp_path / "d.md"),
                                      *gated])
    assert within.exit_code == 0, within.stderr  # 9/10 against 10/10 is noise: read, not failed
    assert "within noise" in (tmp_path / "d.md").read_text()
    assert CliRunner().invoke(app, ["report", str(b), "--json"]).exit_code == 2  # --json needs a run to compare
