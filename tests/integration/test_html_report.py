"""``runner report --html`` on a real matrix, read in a real browser.

The matrix is three ``runner run``s merged by one ``runner report``, as CI merges its column jobs: columns reference,
model and amp (unavailable here), rows hidden-tool, escalation-refused (declared: no turn) and escalation, two trials
of every cell that runs a turn, and one failing cell (the reference column's escalation cell, run with ``--behaviour
control-after-ask``: it asks, makes its control call after the ask, where the latch refuses it, and exits; the row is
not exercised).

The browser is Debian's headless Chromium driven through Debian's chromedriver by selenium (pinned in the dev
extra): ``make test`` installs both (``make test-tools``), and nothing downloads a browser or a driver at run time
(selenium is given the driver's path, so Selenium Manager never runs). Screenshots of the grid and of the failing
cell's drill-down are kept in ``test-artifacts/html-report/`` (ignored by git).

A full matrix (every harness in the registry by every row: the declared cells written by ``runner run
--declared-only``, each turn cell built from its harness's declared result with a grade of its own) is read at 1440 x
900: the page does not scroll sideways, each cell still says its grade, runs and cause, and a screenshot is kept in
the test's tmp directory (its path is printed).

The page's policy allows its script and its style by their hashes, never ``'unsafe-inline'``: the grid's filters
and drill-down working, with nothing severe in the browser's log, prove the page's own script runs under it, and a
copy of the page with a script, a handler and a style attribute written into it proves Chromium runs none of them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import Select

from runner.images import ImageRecord
from runner.matrix.artifact import RESULT, trial_dir, write_cell
from runner.matrix.cells import cells as matrix_cells
from runner.matrix.html import GRADE_SHORT
from runner.matrix.result import CellResult
from runner.matrix.series import stability
from tests.support import RUNNER

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

CHROMIUM, CHROMEDRIVER = Path("/usr/bin/chromium"), Path("/usr/bin/chromedriver")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "html-report"
FAILING = "escalation.baseline.reference"
# (columns, rows, behaviour, directory): disjoint cells, so every cell's two trials come from one behaviour
RUNS = [
    ("reference,model,amp", "hidden-tool,escalation-refused", "cooperative", "rows"),
    ("reference", "escalation", "control-after-ask", "failing"),
    ("model,amp", "escalation", "cooperative", "escalation"),
]


# a laptop's screen: the grid of a full matrix fits it without scrolling sideways
LAPTOP = (1440, 900)
# the turn cells of the synthesized full matrix, by their index: (grade, failure kind and cause, second trial's grade)
FAILURES = {"fail": ("conduct", "cli"), "not_exercised": ("tools_never_offered", "cli"), "unstable": ("deadline",
                                                                                                 "deadline")}


def runner(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RUNNER, *args], capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def matrix(tmp_path_factory: pytest.TempPathFactory, reference_image: ImageRecord) -> Path:
    """The three runs and the page written beside them: ``<root>/report.html``."""
    root = tmp_path_factory.mktemp("html-matrix")
    for harness, case, behaviour, name in RUNS:
        done = runner("run", "--harness", harness, "--case", case, "--behaviour", behaviour, "--trials", "2",
                      "--out", str(root / name))
        # runner run gates its own cells: the failing run's is a new failure (exit 1), the others pass
        assert done.returncode == (1 if name == "failing" else 0), done.stderr
    page = root / "report.html"
    reported = runner("report", *(str(root / name) for *_, name in RUNS), "--html", str(page),
                      "--markdown", str(root / "report.md"))
    assert reported.returncode == 1 and "1 new" in reported.stderr, reported.stderr  # the failing cell is new
    return page


def grades(root: Path) -> dict[str, tuple[str, list[str]]]:
    """Each cell's two trials as their result.json say (read here, not by the runner), and the word the grid must
    show: the grade they share, or ``unstable``."""
    trials: dict[str, list[tuple[int, str]]] = {}
    for file in root.rglob("result.json"):
        data = json.loads(file.read_text(encoding="utf-8"))
        status = data["grade"]["status"] if data.get("grade") else "infrastructure_error"
        trials.setdefault(data["cell"]["id"], []).append((data["pins"].get("trial", 1), status))
    out = {}
    for cell, runs in trials.items():
        statuses = [s for _, s in sorted(runs)]
        out[cell] = (statuses[0] if len(set(statuses)) == 1 else "unstable", statuses)
    return out


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[WebDriver]:
    for tool in (CHROMIUM, CHROMEDRIVER):
        assert tool.is_file(), f"{tool} is missing: make test-tools installs Debian's chromium and chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for arg in ("--headless", "--disable-gpu", "--no-first-run", "--disable-background-networking",
                "--disable-component-update", "--disable-sync", "--window-size=1400,1000",
                f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(arg)
    if os.geteuid() == 0:
        options.add_argument("--no-sandbox")  # Chromium refuses to run as root with its sandbox on
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def shown(driver: WebDriver) -> dict[str, bool]:
    return {b.get_attribute("data-id") or "": b.is_displayed()
            for b in driver.find_elements(By.CSS_SELECTOR, "button.cell")}


def test_the_report_of_a_real_matrix_reads_in_a_browser(matrix: Path, browser: WebDriver) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    expected = grades(matrix.parent)
    assert len(expected) == 9 and expected[FAILING] == ("not_exercised", ["not_exercised", "not_exercised"])
    # every cell that ran a turn ran it twice; a declared cell (amp, the row escalation-refused) is graded once
    turns = {c for c in expected if not c.endswith(".amp") and not c.startswith("escalation-refused.")}
    assert {c for c, (_, runs) in expected.items() if len(runs) == 2} == turns, expected
    assert all(word != "unstable" for word, _ in expected.values()), expected
    assert {cell for cell, (word, _) in expected.items() if word in ("fail", "not_exercised")} == {FAILING}
    assert expected["escalation.baseline.amp"][0] == expected["hidden-tool.baseline.amp"][0] == "unavailable"
    browser.get(matrix.as_uri())

    # the grid: every cell, with its grade as a word (colour aside) and its two runs' stability
    cells = {b.get_attribute("data-id"): b for b in browser.find_elements(By.CSS_SELECTOR, "button.cell")}
    assert set(cells) == set(expected)
    for cell, (word, runs) in expected.items():
        said = word.replace("_", " ")
        stable = f"{len(runs)} runs ({len(runs)}/{len(runs)} {said})" if len(runs) > 1 else "1 run"
        label = cells[cell].get_attribute("aria-label") or ""
        assert label.startswith(f"{cell}: {said}; {stable}"), (cell, label)
        assert cells[cell].text.split()[0] == GRADE_SHORT[word], cell  # the grade, short, as the legend says
    assert "Amp" in browser.find_element(By.CSS_SELECTOR, ".unavailable li[data-harness='amp']").text
    browser.save_screenshot(str(ARTIFACTS / "grid.png"))

    # the filters hide what they should, and only that
    harness = Select(browser.find_element(By.ID, "filter-harness"))
    harness.select_by_value("model")
    assert shown(browser) == {cell: cell.endswith(".model") for cell in expected}
    harness.select_by_value("")
    grade = Select(browser.find_element(By.ID, "filter-grade"))
    grade.select_by_value("not_exercised")
    assert shown(browser) == {cell: cell == FAILING for cell in expected}
    assert browser.find_element(By.ID, "shown").text == f"1 of {len(expected)} cells shown"
    grade.select_by_value("")
    assert all(shown(browser).values())

    # the failing cell's drill-down: each run's timeline has the ask, the call refused after it, then the exit
    cells[FAILING].click()
    dialog = browser.find_element(By.ID, "drill")
    assert dialog.is_displayed() and dialog.get_attribute("data-cell") == FAILING
    runs = dialog.find_elements(By.CSS_SELECTOR, "section.run")
    assert len(runs) == 2
    for number, run in enumerate(runs, 1):
        events = [row.get_attribute("data-event") for row in run.find_elements(By.CSS_SELECTOR, "table.events tr")
                  if row.get_attribute("data-event")]
        details = [row.text for row in run.find_elements(By.CSS_SELECTOR, "table.events tbody tr")]
        ask = next(i for i, d in enumerate(details) if "sharedos.escalate" in d and events[i] == "mcp_call")
        latched = events.index("ask_answered")
        refused = [i for i, e in enumerate(events) if e == "refused_after_ask"]
        exited = events.index("cli_exited")
        assert ask < latched < refused[0] and len(refused) == 1 and refused[-1] < exited, events
        assert "exit 0, by itself" in details[exited]
        assert run.find_element(By.CSS_SELECTOR, "svg.timeline .m-refused").is_displayed()
        assert run.find_element(By.CSS_SELECTOR, "[data-fact='callsAfterEscalation']").text == "1"
        trial_dir = matrix.parent / "failing" / FAILING / ("" if number == 1 else f"trial-{number}")
        recorded = json.loads((trial_dir / "result.json").read_text(encoding="utf-8"))
        wind_down = recorded["turn"]["windDownSeconds"]  # the ask answered -> the exit by itself, as recorded
        assert wind_down is not None and wind_down > 0
        assert run.find_element(By.CSS_SELECTOR, "[data-fact='windDownSeconds']").text == f"{wind_down:.3f} s"
        assert run.find_element(By.CSS_SELECTOR, ".repro pre").text == recorded["repro"]
        assert "--behaviour control-after-ask" in recorded["repro"]
        # its files are links, relative to the page, to the cell's own files
        links = {a.text: a.get_attribute("href") for a in run.find_elements(By.CSS_SELECTOR, "ul.files a")}
        assert links["stdout.log"] == (trial_dir / "stdout.log").as_uri()
    browser.save_screenshot(str(ARTIFACTS / "drill-down.png"))
    severe = [e for e in browser.get_log("browser") if e.get("level") == "SEVERE"]  # the page's script threw nothing
    assert not severe, severe
    print(f"screenshots: {ARTIFACTS}")


def test_the_page_runs_its_own_script_by_its_hash_and_an_injected_one_not_at_all(matrix: Path, browser: WebDriver
                                                                                 ) -> None:
    """The policy allows the page's script and style by their sha256, never 'unsafe-inline': the page's own script
    runs (it counts the cells it shows), and a script, a handler and a style attribute written into a copy of the
    page are refused by Chromium itself, each with a policy violation in the browser's log."""
    text = matrix.read_text(encoding="utf-8")
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', text)
    assert policy and "'unsafe-inline'" not in policy.group(1), policy
    assert re.fullmatch(r"default-src 'none'; style-src 'sha256-[A-Za-z0-9+/=]{44}'; "
                        r"script-src 'sha256-[A-Za-z0-9+/=]{44}'; img-src data:", policy.group(1)), policy.group(1)
    injected = matrix.with_name("injected.html")  # beside the real one: the same links, the same cells
    injected.write_text(text.replace(
        "<main>", '<main><script>window.injected = "script";</script>'
        '<p id="injected-style" style="color: rgb(255, 0, 0)">injected</p>'
        '<img id="injected-handler" src="data:," onerror="window.injected = \'handler\'">', 1), encoding="utf-8")
    browser.get_log("browser")  # what the first page logged is not this page's
    browser.get(injected.as_uri())
    count = browser.find_element(By.ID, "shown").text
    assert re.fullmatch(r"(\d+) of \1 cells shown", count), count  # the page's own script ran, under the policy
    assert browser.execute_script("return window.injected === undefined")
    colour = browser.execute_script(
        "return getComputedStyle(document.getElementById('injected-style')).color")
    assert colour != "rgb(255, 0, 0)"
    refused = [e["message"] for e in browser.get_log("browser") if "Content Security Policy" in e.get("message", "")]
    assert any("script" in m for m in refused) and any("style" in m for m in refused), refused


def full_matrix(root: Path) -> Path:
    """Every harness in the registry by every row, the way a full CI matrix writes it: the cells that run no turn
    written by ``runner run --declared-only`` itself, and each cell that runs a turn built from its harness's
    declared result (its real pins) with a grade of its own: most pass, some fail, some are not exercised, some ran
    two trials (some of those unstable), each failure with its cause. The page is ``runner report``'s."""
    declared = root / "declared"
    done = runner("run", "--declared-only", "--harness", "all", "--case", "all", "--out", str(declared))
    assert done.returncode == 0, done.stderr
    written = {d.name: json.loads((d / RESULT).read_text(encoding="utf-8"))
               for d in declared.iterdir() if (d / RESULT).is_file()}
    by_harness = {data["cell"]["harness"]: data for data in written.values()}
    by_row = {(data["cell"]["case"], data["cell"]["condition"]): data["row"] for data in written.values()}
    turns = root / "turns"
    wanted = matrix_cells("all", "all")
    for index, cell in enumerate(c for c in wanted if c.runs_a_turn()):
        word = "fail" if index % 23 == 3 else "not_exercised" if index % 29 == 5 else "pass"
        trials = [word, "fail" if index % 30 == 0 else word] if index % 6 == 0 else [word]
        for trial, status in enumerate(trials, 1):
            data = json.loads(json.dumps(by_harness[cell.profile.id]))
            data["cell"] = {"id": cell.id, "case": cell.case.id, "condition": cell.condition.id,
                            "harness": cell.profile.id}
            data["row"] = by_row[(cell.case.id, cell.condition.id)]
            data["pins"] = {**data["pins"], "trial": trial, "modelMode": "scripted"}
            data["repro"] = f"runner exec --harness {cell.profile.id} --case {cell.case.id} " \
                            f"--condition {cell.condition.id}"
            data["grade"] = {**data["grade"], "caseId": cell.case.id, "conditionId": cell.condition.id,
                             "status": status, "evidence": f"{status}; synthesized for the layout test"}
            data["turn"] = {"status": "escalated", "exitCode": 0, "callsAfterEscalation": 0}
            data.pop("turns", None)
            if status != "pass":
                kind, cause = FAILURES["unstable" if status != word else status]
                data["failure"] = {"cause": cause, "kind": kind, "evidence": f"{kind} here", "retried": False,
                                   "counts": True}
            write_cell(trial_dir(turns / cell.id, trial), CellResult.read(data))
    page = root / "report.html"
    reported = runner("report", str(declared), str(turns), "--html", str(page), "--markdown", str(root / "r.md"))
    assert reported.returncode == 1, reported.stderr  # new failures: the gate fails, the page is written
    assert len({c.id for c in wanted}) == len(wanted)
    return page


def test_a_full_matrix_fits_a_laptop_screen_and_each_cell_says_its_grade_runs_and_cause(
        tmp_path: Path, browser: WebDriver) -> None:
    """The grid of every harness by every row, at 1440 x 900: no sideways scroll, and every cell still says its
    grade, how many runs it has and (for a failure) its cause, in its text and its accessible name."""
    page = full_matrix(tmp_path)
    expected = {c.id: c for c in matrix_cells("all", "all")}
    assert len({c.profile.id for c in expected.values()}) >= 19 and len({c.case.id for c in expected.values()}) >= 30
    browser.set_window_size(*LAPTOP)
    try:
        browser.get(page.as_uri())
        inner = browser.execute_script("return window.innerWidth")
        wide = browser.execute_script("return document.scrollingElement.scrollWidth")
        grid = browser.execute_script("return document.querySelector('table.grid').getBoundingClientRect().right")
        shot = tmp_path / "full-grid.png"
        browser.execute_script("document.querySelector('.legend-grades').scrollIntoView()")
        browser.save_screenshot(str(shot))
        print(f"full matrix at {LAPTOP}: innerWidth {inner}, scrollWidth {wide}, grid right edge {grid}; "
              f"screenshot: {shot}")
        assert inner == LAPTOP[0]
        assert wide <= inner and grid <= inner, (wide, grid, inner)
        buttons = browser.find_elements(By.CSS_SELECTOR, "button.cell")
        assert {b.get_attribute("data-id") for b in buttons} == set(expected)
        results = [CellResult.read(json.loads(f.read_text(encoding="utf-8"))) for f in tmp_path.rglob(RESULT)]
        series: dict[str, list[CellResult]] = {}
        for result in sorted(results, key=lambda r: r.trial):
            series.setdefault(result.id, []).append(result)
        for button in buttons:
            runs = series[button.get_attribute("data-id") or ""]
            statuses = {r.status for r in runs}
            word = statuses.pop() if len(statuses) == 1 else "unstable"
            label = button.get_attribute("aria-label") or ""
            assert button.get_attribute("data-status") == word and word.replace("_", " ") in label, label
            assert f"{len(runs)} run" in label, label
            shown = button.text.splitlines()
            mini = "mini" in (button.get_attribute("class") or "")  # a folded harness's cell: its grade, short
            assert shown[0].split()[0] == GRADE_SHORT[word], (label, shown)  # the legend says each grade whole
            if len(runs) > 1:
                assert stability(runs, spaced=True) in label and (mini or f"×{len(runs)}" in shown[0]), (label, shown)
            why = next((r.why for r in reversed(runs) if r.why is not None), None)
            if why is not None:
                assert f"cause {why.cause} ({why.kind})" in label and (mini or shown[-1] == why.cause.replace(
                    "_", " ")), (label, shown)
        # the unavailable harnesses are one narrow column, not one column each spelling their grade
        folded = browser.find_elements(By.CSS_SELECTOR, "table.grid thead th.folded")
        assert len(folded) == 1 and "amp" in (folded[0].get_attribute("title") or "")
        assert folded[0].size["width"] < 60, folded[0].size
    finally:
        browser.set_window_size(1400, 1000)
