"""``runner report --html``: the page is one self-contained file, escapes what the cells hold, draws each run's
timeline in the order things happened, and stays small. (The page in a real browser, on a real matrix:
tests/integration/test_html_report.py.)"""

from __future__ import annotations

import base64
import hashlib
import json
import re
import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

from runner.matrix import html as page_module
from runner.matrix.artifact import trial_dir, write_cell
from runner.matrix.html import MAX_EVENTS, STDERR, TRANSCRIPT, html_report, script_json, tail, timeline
from runner.matrix.report import gate, locate_cells
from runner.matrix.result import CellResult
from tests.html_tree import FAILING, GOLDEN, HOSTILE, TIMELINE, build_tree
from tests.support import RUNNER
from tests.unit.test_matrix_report import result_json


class Page(HTMLParser):
    """What a browser's parser makes of the page: its elements' tags and attributes, and each script's text."""

    def __init__(self, text: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.scripts: list[tuple[dict[str, str | None], str]] = []
        self.styles: list[str] = []
        self._script: dict[str, str | None] | None = None
        self._style = False
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self._script = dict(attrs)
            self.scripts.append((self._script, ""))
        elif tag == "style":
            self._style = True
            self.styles.append("")

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            attrs, text = self.scripts[-1]
            self.scripts[-1] = (attrs, text + data)
        elif self._style:
            self.styles[-1] += data

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._script = None
        elif tag == "style":
            self._style = False

    def data(self) -> dict[str, Any]:
        [(_, text)] = [s for s in self.scripts if s[0].get("id") == "report-data"]
        loaded: dict[str, Any] = json.loads(text)
        return loaded


def render(tmp_path: Path, run: Path) -> tuple[str, Path]:
    located = locate_cells([run])
    target = tmp_path / "report.html"
    text = html_report(located, target, gate([r for r, _ in located], []))
    target.write_text(text, encoding="utf-8")
    return text, target


def test_the_page_fetches_nothing_and_the_cells_text_cannot_become_markup(tmp_path: Path) -> None:
    text, _ = render(tmp_path, build_tree(tmp_path))
    parsed = Page(text)
    # two scripts, both inline: the data and the page's own; no element loads anything from anywhere
    assert [(a.get("type"), a.get("src")) for a, _ in parsed.scripts] == [("application/json", None), (None, None)]
    assert not [t for t, a in parsed.tags if t in ("link", "img", "iframe", "object", "embed") or "src" in a]
    assert "default-src 'none'" in text
    assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text)  # the SVG namespace is a name, not a fetch
    # the hostile text is nowhere as markup, and intact as data
    assert HOSTILE not in text and "<img" not in text and "onerror=" not in text.replace('onerror=\\"', "")
    assert text.count("</script>") == 2 and "<!--" not in text
    data = parsed.data()
    [cell] = [c for c in data["cells"] if c["id"] == FAILING]
    failing = cell["runs"][1]
    assert failing["status"] == "fail" and HOSTILE in failing["evidence"]
    assert failing["transcript"][-1] == HOSTILE and failing["stderr"] == ["warning: something", HOSTILE]


def test_the_page_runs_its_own_script_and_style_by_their_hashes_and_nothing_inline_besides(tmp_path: Path) -> None:
    """The policy names the sha256 of the one inline script and the one inline style, exactly as the browser hashes
    them (the element's whole text), and never ``'unsafe-inline'``: a script or a style attribute that got into the
    page any other way would not run (the browser test proves both in Chromium)."""
    text, _ = render(tmp_path, build_tree(tmp_path))
    parsed = Page(text)
    [policy] = [a["content"] for tag, a in parsed.tags
                if tag == "meta" and a.get("http-equiv") == "Content-Security-Policy"]
    assert policy is not None and "unsafe" not in policy
    directives = dict(d.split(" ", 1) for d in policy.split("; "))

    def sha256(source: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(source.encode("utf-8")).digest()).decode() + "'"

    [own] = [body for attrs, body in parsed.scripts if attrs.get("type") is None]
    [style] = parsed.styles
    assert directives == {"default-src": "'none'", "script-src": sha256(own), "style-src": sha256(style),
                          "img-src": "data:"}
    assert "function ()" in own and "{" in style  # the hashes cover the assets themselves, not an empty element
    # nothing inline but those two: no handler attribute, no style attribute anywhere in the page
    assert not [(t, a) for t, a in parsed.tags if "style" in a or any(name.startswith("on") for name in a)]


def test_script_json_closes_no_element() -> None:
    value = {"a": "</script><!-- & \u2028 \u2029 -->"}
    text = script_json(value)
    assert not set("<>&\u2028\u2029") & set(text)
    assert json.loads(text) == value


def test_the_grid_has_every_cell_its_grade_and_the_unavailable_reason_once(tmp_path: Path) -> None:
    text, _ = render(tmp_path, build_tree(tmp_path))
    cells = re.findall(r'data-id="([^"]+)" data-status="([^"]+)"', text)
    assert sorted(cells) == [
        ("escalation.baseline.amp", "unavailable"), ("escalation.baseline.model", "unstable"),
        ("escalation.baseline.reference", "pass"), ("hidden-tool.baseline.amp", "unavailable"),
        ("hidden-tool.baseline.model", "pass"), ("hidden-tool.baseline.reference", "pass"),
    ]
    assert "1/2 pass, 1/2 fail" in text  # the unstable cell's stability, in the grid
    assert text.count("Amp talks only to the Amp service") == 1
    data = Page(text).data()
    amp = [c for c in data["cells"] if c["harness"] == "amp"]
    assert all("files" not in run for c in amp for run in c["runs"])  # a declared cell ran nothing: no logs


def test_the_grid_folds_an_unavailable_harness_and_each_compact_cell_names_its_grade_runs_and_cause(
        tmp_path: Path) -> None:
    """The grid's cells are compact (the grade short, the runs when several, the cause of a failure) and their
    accessible names and tooltips say it whole; a harness that is only unavailable is folded into one narrow column
    of small cells, not a column of its own (the browser test measures a full matrix at 1440 px)."""
    text, _ = render(tmp_path, build_tree(tmp_path))
    grid = text[text.index('<table class="grid">'):]
    head = grid[:grid.index("</thead>")]
    assert re.findall(r'<th scope="col" class="col head" data-harness="([^"]+)"', head) == ["reference", "model"]
    assert '<th scope="col" class="folded head" data-folded="amp" title="unavailable here: amp' in head
    buttons = dict(re.findall(r'data-id="([^"]+)" data-status="[^"]+" aria-label="([^"]+)"', text))
    assert buttons[FAILING] == (f"{FAILING}: unstable; 2 runs (1/2 pass, 1/2 fail); open its runs")
    assert buttons["escalation.baseline.amp"] == "escalation.baseline.amp: unavailable; 1 run; open its runs"
    button = re.search(f'<button [^>]*data-id="{re.escape(FAILING)}"[^>]*>(.*?)</button>', text)
    assert button and button.group(1) == '<b>unst</b> <span class="runs">×2</span>'
    amp = re.search(r'<button [^>]*class="cell g-unavailable mini"[^>]*>(.*?)</button>', text)
    assert amp and amp.group(1) == "<b>unav</b>"
    assert all(f'<b class="g-{grade}">{short}</b>' in text for grade, short in page_module.GRADE_SHORT.items())


def test_a_failed_cells_cause_is_in_the_grid(tmp_path: Path) -> None:
    run = CellResult.read(result_json("a.base.x", "fail"))
    failure = {"cause": "cli", "kind": "tools_never_offered", "evidence": "no tools", "retried": False,
               "counts": True}
    run = CellResult.read({**run.to_dict(), "version": 5, "failure": failure})
    write_cell(tmp_path / run.id, run)
    text = html_report(locate_cells([tmp_path]), tmp_path / "report.html")
    assert 'aria-label="a.base.x: fail; 1 run; cause cli (tools_never_offered); open its runs"' in text
    assert "<b>fail</b><small>cli</small></button>" in text


def test_an_unavailable_columns_reason_is_said_once_beside_its_rows_declared_otherwise(tmp_path: Path) -> None:
    run = build_tree(tmp_path)
    declared = "escalation-refused.escalation-withheld.amp"  # not_applicable: declared before the column is asked
    shutil.copytree(GOLDEN / "matrix" / declared, run / declared)
    text, _ = render(tmp_path, run)
    assert re.search(f'data-id="{re.escape(declared)}" data-status="not_applicable"', text)
    assert text.count("Amp talks only to the Amp service") == 1
    assert '<li class="col" data-harness="amp"><b>amp</b>: <span class="reason">Amp talks only' in text


def test_a_run_links_its_files_relative_to_the_page_and_inlines_only_tails(tmp_path: Path) -> None:
    run = build_tree(tmp_path)
    text, target = render(tmp_path, run)
    [cell] = [c for c in Page(text).data()["cells"] if c["id"] == FAILING]
    trial = cell["runs"][1]
    names = {f["name"]: f["href"] for f in trial["files"]}
    assert {"stdout.log", "stderr.log", "timeline.jsonl", "result.json", "record.json"} <= set(names)
    for href in names.values():
        assert not href.startswith("/") and (target.parent / href).is_file()
    assert trial["dir"] == f"run/{FAILING}/trial-2/"
    assert len(trial["transcript"]) == TRANSCRIPT.lines  # the log has 201 lines: only its tail is inlined


def test_the_timeline_is_in_the_order_things_happened_whatever_the_file_order(tmp_path: Path) -> None:
    file = tmp_path / "timeline.jsonl"
    lines = [json.dumps(e) for e in reversed(TIMELINE)] + ["not json", json.dumps({"event": "no time"})]
    file.write_text("\n".join(lines) + "\n")
    events, note = timeline(file)
    assert [e["event"] for e in events] == [e["event"] for e in TIMELINE]  # type: ignore[index]
    assert [e["t"] for e in events] == sorted(e["t"] for e in TIMELINE)  # type: ignore[index, type-var]
    assert "at" in events[0] and not any("at" in e for e in events[1:])  # type: ignore[operator]
    assert note == "2 unreadable line(s) skipped"
    assert timeline(tmp_path / "missing.jsonl") == (
        [], "No timeline was recorded for this run (a runner from before timelines wrote it).")


def test_a_long_timeline_is_thinned_of_plain_events_only(tmp_path: Path) -> None:
    plain = [{"t": k / 100, "event": "model_request", "n": k} for k in range(1000)]
    telling = [{"t": 5.0, "event": "ask_answered", "tool": "sharedos.escalate"},
               {"t": 5.5, "event": "mcp_call", "tool": "files.read", "answer": "escalation_pending", "afterAsk": True},
               {"t": 9.99, "event": "cli_exited", "exitCode": 0, "by": "itself"}]
    file = tmp_path / "timeline.jsonl"
    file.write_text("\n".join(json.dumps(e) for e in plain + telling) + "\n")
    events, note = timeline(file)
    assert len(events) == MAX_EVENTS and note == f"{1003 - MAX_EVENTS} plain events left out here " \
                                                 "(timeline.jsonl has every one)"
    kinds = [e["event"] for e in events]  # type: ignore[index]
    assert kinds.count("ask_answered") == kinds.count("cli_exited") == kinds.count("mcp_call") == 1
    ns = [e["n"] for e in events if e["event"] == "model_request"]  # type: ignore[index]
    assert ns[0] == 0 and ns[-1] == 999  # the first and the last plain ones are kept


def test_a_tail_is_bounded_in_lines_bytes_and_line_length(tmp_path: Path) -> None:
    log = tmp_path / "stdout.log"
    log.write_text("".join(f"line {n}\n" for n in range(100_000)) + "x" * 10_000 + "\n")
    lines = tail(log, STDERR)
    assert len(lines) <= STDERR.lines and sum(map(len, lines)) <= STDERR.bytes + 100
    assert lines[-1].startswith("x" * STDERR.line) and lines[-1].endswith(f"[{10_000 - STDERR.line} more characters]")
    assert tail(tmp_path / "none.log", STDERR) == []


def test_a_full_matrix_stays_small(tmp_path: Path) -> None:
    """17 columns by 36 rows (612 cells, today's full matrix is 608), half of them run a turn that left full logs
    and a timeline as long as the page keeps: the page stays under 4.5 MB (a drill-down inlines tails, never logs;
    real turns stay well inside the bounds, so a real matrix is smaller)."""
    run = tmp_path / "run"
    big = tmp_path / "big.log"  # longer than the page reads of a log's end; each cell's logs are links to it
    big.write_text("".join(f'{{"type":"item.completed","text":"{"y" * 300} {n}"}}\n' for n in range(300)))
    events = "".join(json.dumps({"t": k / 10, "at": "2026-12-02T07:00:00.000Z", "event": "mcp_call",
                                 "tool": "files.read", "answer": "ok", "afterAsk": False}) + "\n"
                     for k in range(MAX_EVENTS * 3))
    for row in range(36):
        for harness in range(17):
            cell_id = f"case{row}.baseline.col{harness}"
            result = CellResult.read(result_json(cell_id, "pass" if (row + harness) % 2 else "not_implemented"))
            if result.status == "pass":
                result = CellResult.read({**result.to_dict(), "turn": {"status": "escalated", "exitCode": 0}})
            directory = trial_dir(run / cell_id, 1)
            write_cell(directory, result)
            if result.turn is not None:
                for name in ("stdout.log", "stderr.log"):
                    (directory / name).hardlink_to(big)
                (directory / "timeline.jsonl").write_text(events)
    text, target = render(tmp_path, run)
    size = target.stat().st_size
    assert len(re.findall(r'<button type="button" class="cell', text)) == 612
    assert size < 4_500_000, f"{size} bytes"


def test_runner_report_writes_the_page_beside_its_other_reports(tmp_path: Path) -> None:
    run = build_tree(tmp_path)
    target = tmp_path / "report.html"
    proc = subprocess.run([RUNNER, "report", str(run), "--html", str(target), "--markdown", str(tmp_path / "r.md")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 1, proc.stderr  # the failing trial is a new failure: the gate fails, the page is written
    assert "Gate <b>FAILED</b>: 1 new failure(s)" in target.read_text()
    assert len(re.findall(r'<button type="button" class="cell', target.read_text())) == 6


def test_the_page_assets_hold_no_closing_tag() -> None:
    assets = Path(page_module.__file__).parent / "assets"
    assert "</script" not in (assets / "report.js").read_text().lower()
    assert "</style" not in (assets / "report.css").read_text().lower()


def test_each_columns_pins_are_every_pinned_cell_setting(tmp_path: Path) -> None:
    """The per-column pins come from the settings' rows: every pinned setting is shown (protocolVersion, which the
    hand-kept list missed, included), with the harness's own pins before them and the profile after."""
    from runner.matrix.options import SETTINGS
    from runner.matrix.result import CellPins

    pinned = [s.pin for s in SETTINGS if s.pin is not None]
    assert "protocolVersion" in pinned and list(page_module.COLUMN_PINS) == [
        "cliVersion", "imageId", "runnerVersion", *pinned, "profileHash"]
    run = CellResult.read(result_json("a.base.x", "pass"))
    run = run.model_copy(update={"pins": CellPins.model_validate({**run.pins.to_dict(), "protocolVersion": "2"})})
    write_cell(tmp_path / run.id, run)
    text = html_report(locate_cells([tmp_path]), tmp_path / "report.html")
    table = text[text.index("Pins: what makes these runs comparable"):]
    assert '<th scope="col">protocolVersion</th>' in table
    head = table[:table.index("</thead>")]
    row = table[table.index('<tr class="col" data-harness="x">'):].split("</tr>", 1)[0]
    cells = re.findall(r"<td><code>(.*?)</code></td>", row)
    assert len(cells) == len(page_module.COLUMN_PINS) == head.count('<th scope="col">') - 1
    assert cells[page_module.COLUMN_PINS.index("protocolVersion")] == "2"
