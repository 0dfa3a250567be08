"""``runner report --html FILE``: the matrix as one self-contained page, read at a glance and cell by cell.

The page is one file: its style and script are inline (:mod:`runner.matrix.assets`), allowed by their hashes
(:func:`content_security_policy`), nothing is fetched, and it opens from disk or from a CI artifact. It holds

- the pins that make the runs comparable (shared ones once, each column's once, an unavailable column's reason
  once), the comparability problems, the findings and the gate;
- per group of comparable runs (:func:`runner.matrix.series.group_runs`), the grid of rows by columns, compact enough
  that a full matrix fits a laptop's screen: each cell's grade as a short word (:data:`GRADE_SHORT`, with a legend)
  and a colour, its number of runs when several and the cause of its failure, all of it said whole in the cell's
  accessible name and tooltip; the columns of harnesses that are only unavailable folded into one narrow column;
  filters by column, row and grade (the figures per harness, and each run's, stay out of the grid);
- per cell, a drill-down: for each run its evidence line, its turn (``callsAfterEscalation``, ``windDownSeconds``),
  its timeline on a time axis (``timeline.jsonl``: model requests, MCP calls and how each was answered, the latch,
  the calls refused after it, deadline signals, the exit), the tails of its transcript and its stderr, links to its
  files and its repro command.

**Small.** Only what a drill-down shows is inlined, bounded: a transcript tail (:data:`TRANSCRIPT`), a stderr tail
(:data:`STDERR`), at most :data:`MAX_EVENTS` timeline events and the evidence. Everything else is a link, relative
to the page, to the cell's own files: a page is written beside the cell directories it links to, and published
with them (the workflow's report job uploads both in one artifact).

**Escaped.** A CLI's output is data: the server-side parts are HTML-escaped, the drill-down data is JSON in a
``<script type="application/json">`` with ``<``, ``>`` and ``&`` written as JSON escapes (so no ``</script>`` in a
transcript can end it), and the script builds the drill-down from text nodes only. Were anything to get through,
the browser would still run no script and apply no style but the page's own: the policy names their hashes, never
``'unsafe-inline'``.

Runs written before timelines existed have no ``timeline.jsonl``: their drill-down says so and shows the rest.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
from collections import Counter
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from urllib.parse import quote

from runner.conformance.prices import Prices
from runner.harnesses.stream import Tail
from runner.matrix import report_figures as figures
from runner.matrix.gate import Gate
from runner.matrix.options import SETTINGS
from runner.matrix.result import UNAVAILABLE, CellResult, UsageRecord, summed_usage
from runner.matrix.series import SHARED_PINS, Group, group_runs, outcome, series_status, stability

TIMELINE = "timeline.jsonl"
STDOUT, STDERR_LOG = "stdout.log", "stderr.log"
MAX_EVENTS = 100  # per run; past it the plain model requests and answered calls are thinned (the file has them all)
READ_BYTES = 64 * 1024  # read from a log's end to find its tail
EVENT_TEXT = 300  # longest text kept in a timeline event's field


@dataclass(frozen=True)
class TailBounds:
    lines: int
    bytes: int
    line: int


TRANSCRIPT = TailBounds(lines=16, bytes=3072, line=400)
STDERR = TailBounds(lines=8, bytes=1536, line=400)
# the pins each column shows (the shared ones, SHARED_PINS, are shown once for the group): what the harness and its
# image are, then every cell setting that is pinned (one row of SETTINGS each: a new setting shows without an edit
# here), then the profile
COLUMN_PINS = ("cliVersion", "imageId", "runnerVersion",
               *(setting.pin for setting in SETTINGS if setting.pin is not None), "profileHash")
# timeline events that are frequent and plain: thinned first when a run has more than MAX_EVENTS
CHATTY = ("model_request", "mcp_call")
ASK_TOOL = "sharedos.escalate"
# each grade as the grid shows it, short enough for a full matrix's cell (the legend and each cell's name say it whole)
GRADE_SHORT = {
    "pass": "pass", "fail": "fail", "not_exercised": "n-ex", "unstable": "unst", "infrastructure_error": "infra",
    "interrupted": "intr", "unavailable": "unav", "not_implemented": "n-im", "not_applicable": "n/a",
    "out_of_scope": "oos",
}
FOLD_LIST = 8  # the gate's new and stale cells listed open up to this many
# grades that say the cell ran nothing worth a column of its own: an unavailable harness with only these is folded
QUIET = ("unavailable", "not_applicable", "not_implemented", "out_of_scope")


def html_report(located: list[tuple[CellResult, Path]], page: Path, gate_result: Gate | None = None,
                problems: list[str] | None = None, findings: list[str] | None = None,
                prices: Prices | None = None) -> str:
    """The page for these runs (each with the directory it was read from), its links relative to ``page``'s
    directory; ``problems`` (comparability) and ``findings`` as the manifest words them; with ``prices``, each run's
    and each harness's tokens say what they cost, and the models left unpriced are listed."""
    where = {id(run): directory for run, directory in located}
    runs = [run for run, _ in located]
    groups = group_runs(runs) or [Group({})]
    base = page.resolve().parent
    cells: list[dict[str, object]] = []
    sections = [_group(number, group, cells, where, base, prices) for number, group in enumerate(groups, 1)]
    data: dict[str, object] = {"cells": cells}
    grades = sorted({run.status for run in runs} | {str(c["status"]) for c in cells})
    harnesses = sorted({run.cell.harness for run in runs}, key=_harness_order)
    rows = list(dict.fromkeys(str(c["row"]) for c in cells))
    head = [
        "<h1>Conformance report</h1>",
        _counts(cells),
        _gate(gate_result),
        _list("Not comparable", problems or []),
        _list("Findings", findings or []),
        _list("Unpriced models (the price file has no price for them: their runs have no cost)",
              list(figures.cost(runs, prices).unpriced) if prices is not None else []),
        _filters(harnesses, rows, grades),
    ]
    body = "\n".join(part for part in head if part) + "\n" + "\n".join(sections)
    return _page(body, data)


def _group(number: int, group: Group, cells: list[dict[str, object]], where: dict[int, Path],
           base: Path, prices: Prices | None = None) -> str:
    """One group's pins, its unavailable columns and its grid; its cells are appended to ``cells``."""
    harnesses = sorted({run.cell.harness for run in group.runs}, key=_harness_order)
    rows: dict[str, CellResult] = {}
    for cell_id in sorted(group.series):
        first = group.series[cell_id][0]
        rows.setdefault(f"{first.cell.case}.{first.cell.condition}", first)
    from runner.matrix.report import suite_order

    ordered = sorted(rows, key=lambda r: suite_order((rows[r].cell.case, rows[r].cell.condition)))
    by_place = {(runs[0].cell.case + "." + runs[0].cell.condition, runs[0].cell.harness): runs
                for runs in group.series.values()}
    unavailable = _unavailable(group, harnesses)
    folded = [h for h in harnesses if h in unavailable
              and all(r.status in QUIET for r in group.runs if r.cell.harness == h)]
    columns = [h for h in harnesses if h not in folded]
    out = [f'<section class="group" data-group="{number}">']
    if number > 1:
        out.append(f"<h2>Group {number}: kept apart</h2>")
        out += [f"<p class=\"apart\">Not merged with {_e(reason)}</p>" for reason in group.apart]
    out.append(_pins(group, harnesses, unavailable))
    out.append(_figures(group, harnesses, prices))
    out.append(_legend())
    out.append('<table class="grid"><thead><tr><th scope="col" class="corner">Row</th>')
    out += [f'<th scope="col" class="col head" data-harness="{_e(c)}" title="{_e(c)}"><span>{_e(c)}</span></th>'
            for c in columns]
    if folded:
        names = ", ".join(folded)
        out.append(f'<th scope="col" class="folded head" data-folded="{_e(" ".join(folded))}" '
                   f'title="unavailable here: {_e(names)} (their reasons are above; each cell opens as any other)">'
                   f"<span>{_e(' · '.join(folded))}</span></th>")
    out.append("</tr></thead><tbody>")
    for row in ordered:
        about = rows[row].row
        label = " — ".join(x for x in (about.invariant, about.expected_outcome) if x) if about else ""
        case, _, condition = row.partition(".")
        out.append(f'<tr data-row="{_e(row)}"><th scope="row" title="{_e(row)}"><code>{_e(case)}.<wbr>'
                   f'{_e(condition)}</code>' + (f'<div class="about" title="{_e(label)}">{_e(label)}</div>'
                                              if label else "") + "</th>")

        def slot(harness: str, tag: str, mini: bool, row: str = row) -> str:
            series = by_place.get((row, harness))
            if series is None:
                return f'<{tag} class="col slot" data-harness="{_e(harness)}" data-grades="">—</{tag}>'
            index = len(cells)
            cells.append(_cell(number, series, row, unavailable.get(harness), where, base, prices))
            status = series_status(series)
            grades = " ".join(sorted({status} | {r.status for r in series}))
            return (f'<{tag} class="col slot" data-harness="{_e(harness)}" data-grades="{_e(grades)}">'
                    f"{_button(index, series, status, mini)}</{tag}>")

        out += [slot(harness, "td", mini=False) for harness in columns]
        if folded:
            out.append(f'<td class="folded" data-folded="{_e(" ".join(folded))}">'
                       + "".join(slot(harness, "span", mini=True) for harness in folded) + "</td>")
        out.append("</tr>")
    out.append("</tbody></table></section>")
    return "\n".join(out)


def _button(index: int, series: list[CellResult], status: str, mini: bool) -> str:
    """A cell of the grid, compact: its grade (short), its number of runs when several, and the cause of its failure
    (the latest a run names); the whole of each, with the cell's id, in its accessible name and its tooltip."""
    runs = len(series)
    why = next((run.why for run in reversed(series) if run.why is not None), None)
    said = [f"{_spaced(status)}", f"{runs} run{'s' if runs > 1 else ''}"
            + (f" ({stability(series, spaced=True)})" if runs > 1 else "")]
    if why is not None:
        said.append(f"cause {why.cause} ({why.kind})")
    label = f"{series[0].id}: {'; '.join(said)}; open its runs"
    shown = f"<b>{_e(GRADE_SHORT.get(status, status))}</b>"
    if not mini:
        shown += f' <span class="runs">×{runs}</span>' if runs > 1 else ""
        shown += f"<small>{_e(_spaced(why.cause))}</small>" if why is not None else ""
    return (f'<button type="button" class="cell g-{_e(status)}{" mini" if mini else ""}" data-cell="{index}" '
            f'data-id="{_e(series[0].id)}" data-status="{_e(status)}" aria-label="{_e(label)}" '
            f'title="{_e(label)}">{shown}</button>')


def _legend() -> str:
    """What the grid's short grades stand for (each cell's tooltip says its grade in full)."""
    items = "".join(f'<li><b class="g-{_e(status)}">{_e(short)}</b> {_e(_spaced(status))}</li>'
                    for status, short in GRADE_SHORT.items())
    return f'<ul class="legend-grades" aria-label="The grid\'s short grades">{items}</ul>'


def _cell(group: int, series: list[CellResult], row: str, unavailable: str | None, where: dict[int, Path],
          base: Path, prices: Prices | None = None) -> dict[str, object]:
    first = series[0]
    runs = [_run(number, run, where.get(id(run)), base, prices) for number, run in enumerate(series, 1)]
    for run in runs:
        if unavailable is not None and run["evidence"] == f"{UNAVAILABLE}; {unavailable}":
            run["evidence"] = None  # the column's reason, said once in the group's section
    return {
        "id": first.id,
        "group": group,
        "row": row,
        "harness": first.cell.harness,
        "status": series_status(series),
        "stability": stability(series) if len(series) > 1 else None,
        "outcome": outcome(series),
        "invariant": first.row.invariant if first.row else None,
        "expected": first.row.expected_outcome if first.row else None,
        "runs": runs,
    }


def _run(number: int, run: CellResult, directory: Path | None, base: Path,
         prices: Prices | None = None) -> dict[str, object]:
    turn = run.turn.to_dict() if run.turn is not None else None
    wind_down = (turn or {}).get("windDownSeconds", run.to_dict().get("windDownSeconds"))
    data: dict[str, object] = {
        "run": number,
        "trial": run.trial,
        "status": run.status,
        "evidence": run.evidence,
        "repro": run.repro,
        "startedAt": run.started_at,
        "elapsedSeconds": run.elapsed_seconds,
        "turn": turn,
        "windDownSeconds": wind_down,
        "infrastructureError": run.infrastructure_error.to_dict() if run.infrastructure_error else None,
        "interrupted": run.interrupted,
        # a run that took more than one attempt says each (runner run retried an infrastructure error)
        "attempts": " · ".join(a.summary(EVENT_TEXT) for a in run.cell_attempts) or None,
        "failure": run.failure.line if run.failure else None,  # why it failed: its cause, kind and evidence
        "tokens": _tokens([run.usage], prices) if run.usage else None,
        "toolPolicy": figures.policy(run.tool_policy) if run.tool_policy else None,
    }
    if directory is not None and (run.turn is not None or run.infrastructure_error is not None or run.interrupted):
        data.update(_files(directory, base))  # a declared cell ran nothing: it has no logs to show
    return data


def _files(directory: Path, base: Path) -> dict[str, object]:
    """What the drill-down inlines from a cell directory (bounded) and links to (everything in it)."""
    events, note = timeline(directory / TIMELINE)
    files: list[object] = [
        {"name": f.name, "href": _href(f, base), "bytes": f.stat().st_size}
        for f in sorted(directory.iterdir()) if f.is_file() and not f.name.startswith(".")
    ]
    return {
        "dir": _href(directory, base) + "/",
        "timeline": events,
        "timelineNote": note,
        "transcript": tail(directory / STDOUT, TRANSCRIPT),
        "stderr": tail(directory / STDERR_LOG, STDERR),
        "files": files,
    }


def timeline(file: Path) -> tuple[list[object], str | None]:
    """The events of a ``timeline.jsonl`` in the order they happened (by ``t``, never the file's order; equal
    times keep the file's), each without its wall-clock ``at`` (the first keeps it: the others are ``t`` after it),
    long text cut; past :data:`MAX_EVENTS` the plain ones are thinned. The note says what was left out, or that
    the run has no timeline."""
    try:
        text = file.read_text(encoding="utf-8", errors="replace")
    except FileNotFoundError:
        return [], "No timeline was recorded for this run (a runner from before timelines wrote it)."
    except OSError as err:
        return [], f"The timeline could not be read: {err}"
    timed: list[tuple[float, dict[str, object]]] = []
    unreadable = 0
    for line in text.splitlines():
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except ValueError:
            event = None
        t = event.get("t") if isinstance(event, dict) else None
        if not isinstance(event, dict) or not isinstance(t, int | float) or isinstance(t, bool) or "event" not in event:
            unreadable += 1
            continue
        timed.append((float(t), event))
    found = [event for _, event in sorted(timed, key=lambda pair: pair[0])]  # stable: equal times keep file order
    kept = _thinned(found)
    notes = []
    if len(kept) < len(found):
        notes.append(f"{len(found) - len(kept)} plain events left out here (timeline.jsonl has every one)")
    if unreadable:
        notes.append(f"{unreadable} unreadable line(s) skipped")
    events: list[object] = [_compact(e, keep_at=i == 0) for i, e in enumerate(kept)]
    return events, "; ".join(notes) or None


def _thinned(events: list[dict[str, object]]) -> list[dict[str, object]]:
    """At most :data:`MAX_EVENTS`: every event that tells (the ask, refusals, signals, the exit) and the earliest
    and latest of the plain ones (model requests, calls answered ``ok`` before the ask)."""
    if len(events) <= MAX_EVENTS:
        return events

    def plain(e: dict[str, object]) -> bool:
        return e.get("event") in CHATTY and e.get("answer", "ok") == "ok" and not e.get("afterAsk") \
            and e.get("tool") != ASK_TOOL

    plain_ones = [i for i, e in enumerate(events) if plain(e)]
    room = max(0, MAX_EVENTS - (len(events) - len(plain_ones)))
    keep = set(range(len(events))) - set(plain_ones)
    keep |= set(plain_ones[: room - room // 2]) | (set(plain_ones[-(room // 2):]) if room // 2 else set())
    return [e for i, e in enumerate(events) if i in keep]


def _compact(event: dict[str, object], keep_at: bool) -> dict[str, object]:
    out: dict[str, object] = {}
    for key, value in event.items():
        if (key == "at" and not keep_at) or value is None or value is False:
            continue  # the time is t after the first event's; a flag that is off, or nothing, is left out
        if isinstance(value, str):
            out[key] = _cut(value, EVENT_TEXT)
        elif value is None or isinstance(value, bool | int | float):
            out[key] = value
        else:
            out[key] = _cut(json.dumps(value, ensure_ascii=False), EVENT_TEXT)
    return out


def tail(file: Path, bounds: TailBounds) -> list[str]:
    """The last lines of a log, bounded as :class:`~runner.harnesses.stream.Tail` bounds the turn's own tail; a
    missing file has none."""
    try:
        with file.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - READ_BYTES))
            chunk = fh.read()
    except OSError:
        return []
    lines = chunk.decode("utf-8", errors="replace").splitlines()
    if size > READ_BYTES and lines:
        lines = lines[1:]  # the first line read is cut at its start
    kept = Tail(max_lines=bounds.lines, max_bytes=bounds.bytes, max_line=bounds.line)
    for line in lines:
        kept.add(line)
    return kept.lines()


# --- the page's fixed parts ---------------------------------------------------------------------------------------


def _unavailable(group: Group, harnesses: list[str]) -> dict[str, str]:
    """Each unavailable column with its reason, said once, not once per row (its rows the case set declares, or
    that it could not run anyway, keep their own grades)."""
    out = {}
    for harness in harnesses:
        said = {r.evidence for r in group.runs if r.cell.harness == harness and r.status == UNAVAILABLE}
        if len(said) == 1:
            out[harness] = said.pop().removeprefix(f"{UNAVAILABLE}; ")
    return out


def _tokens(usages: list[UsageRecord], prices: Prices | None) -> str:
    """Usages' tokens, summed, on one line, and with ``prices`` what they cost."""
    text = figures.tokens(summed_usage(usages))
    return text + (f" · cost {figures.spend(usages, prices).shown}" if prices is not None else "")


def _figures(group: Group, harnesses: list[str], prices: Prices | None = None) -> str:
    """Per harness, what its runs measured: tokens, failed attempts by cause, the pass rate with its Wilson interval
    (with several runs of a cell), the tool policy; nothing for runs that measured none (written before them)."""
    several = any(len(s) > 1 for s in group.series.values())
    lines = []
    for harness in harnesses:
        runs = [r for r in group.runs if r.cell.harness == harness]
        usage, failed, policy = figures.total_usage(runs), figures.failed_attempts(runs), figures.last_policy(runs)
        if usage is None and not failed and policy is None:
            continue
        causes = ", ".join(f"{cause} {n}" for cause, n in figures.by_cause(failed).items())
        rate = figures.pass_rate(runs).shown if several else ""
        values = [_tokens(figures.spent(runs), prices) if usage else "", causes, rate,
                  figures.policy(policy) if policy else ""]
        lines.append(f'<tr class="col" data-harness="{_e(harness)}"><th scope="row">{_e(harness)}</th>'
                     + "".join(f"<td>{_e(v)}</td>" for v in values) + "</tr>")
    if not lines:
        return ""
    head = "".join(f'<th scope="col">{name}</th>' for name in (
        "harness", "tokens", "failed attempts by cause", "pass rate (95% Wilson)", "tool policy"))
    return ("<details class=\"figures\"><summary>Per harness: tokens, failures by cause, pass rate, tool policy"
            f"</summary><table><thead><tr>{head}</tr></thead><tbody>{''.join(lines)}</tbody></table></details>")


def _pins(group: Group, harnesses: list[str], unavailable: dict[str, str]) -> str:
    shared = "".join(f"<li>{_e(pin)}: <code>{_e(str(group.shared.get(pin)))}</code></li>" for pin in SHARED_PINS)
    head = "".join(f"<th scope=\"col\">{_e(pin)}</th>" for pin in COLUMN_PINS)
    lines = []
    for harness in harnesses:
        pins = [r.pins.to_dict() for r in group.runs if r.cell.harness == harness]
        values = ["; ".join(dict.fromkeys(str(p[k]) for p in pins if p.get(k) is not None)) for k in COLUMN_PINS]
        lines.append(f'<tr class="col" data-harness="{_e(harness)}"><th scope="row">{_e(harness)}</th>'
                     + "".join(f"<td><code>{_e(_short(v))}</code></td>" for v in values) + "</tr>")
    out = ["<details class=\"pins\"><summary>Pins: what makes these runs comparable</summary>",
           f"<ul>{shared}</ul>",
           f"<table><thead><tr><th scope=\"col\">harness</th>{head}</tr></thead><tbody>{''.join(lines)}</tbody>"
           "</table></details>"]
    if unavailable:
        out.append("<details class=\"unavailable\" open><summary>Unavailable harnesses</summary><ul>")
        out += [f'<li class="col" data-harness="{_e(c)}"><b>{_e(c)}</b>: <span class="reason">{_e(reason)}</span></li>'
                for c, reason in unavailable.items()]
        out.append("</ul></details>")
    return "\n".join(out)


def _counts(cells: list[dict[str, object]]) -> str:
    counts = Counter(str(c["status"]) for c in cells)
    chips = "".join(f'<li class="g-{_e(s)}">{_e(_spaced(s))}: {n}</li>' for s, n in sorted(counts.items()))
    return f'<p class="counts">{len(cells)} cells</p><ul class="chips">{chips}</ul>'


def _gate(gate_result: Gate | None) -> str:
    if gate_result is None:
        return ""
    verdict = "passed" if gate_result.passed else "FAILED"
    lines = [f"<p class=\"gate gate-{verdict.lower()}\">Gate <b>{verdict}</b>: {len(gate_result.new)} new "
             f"failure(s), {len(gate_result.known)} known, {len(gate_result.stale)} stale</p>"]
    items = [f"<li>new: <code>{_e(c)}</code></li>" for c in gate_result.new]
    items += [f"<li>stale (now passes): <code>{_e(c)}</code></li>" for c in gate_result.stale]
    if len(items) > FOLD_LIST:  # a long list would push the grid off the screen: it opens on a click
        return "\n".join([*lines, f"<details><summary>{len(items)} cells named</summary><ul>{''.join(items)}</ul>"
                                     "</details>"])
    return "\n".join(lines + ([f"<ul>{''.join(items)}</ul>"] if items else []))


def _list(title: str, items: list[str]) -> str:
    if not items:
        return ""
    return f"<h2>{_e(title)}</h2><ul>" + "".join(f"<li>{_e(i)}</li>" for i in items) + "</ul>"


def _filters(harnesses: list[str], rows: list[str], grades: list[str]) -> str:
    def select(name: str, label: str, values: list[str], spaced: bool = False) -> str:
        options = "".join(f'<option value="{_e(v)}">{_e(_spaced(v) if spaced else v)}</option>' for v in values)
        return (f'<label>{label} <select id="filter-{name}"><option value="">all</option>{options}</select>'
                "</label>")

    return ('<form class="filters" id="filters">' + select("harness", "Harness", harnesses)
            + select("row", "Row", rows) + select("grade", "Grade", grades, spaced=True)
            + '<output id="shown"></output></form>')


def _page(body: str, data: object) -> str:
    assets = resources.files("runner.matrix").joinpath("assets")
    style = assets.joinpath("report.css").read_text(encoding="utf-8")
    script = assets.joinpath("report.js").read_text(encoding="utf-8")
    for name, text, end in (("report.css", style, "</style"), ("report.js", script, "</script")):
        if end in text.lower():
            raise ValueError(f"runner/matrix/assets/{name} must not hold {end}")
    style, script = f"\n{style}", f"\n{script}"  # each element's whole text, as its hash covers it
    return (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{content_security_policy(style, script)}\">\n"
        "<title>Conformance report</title>\n"
        f"<style>{style}</style>\n</head>\n<body>\n<main>\n{body}\n</main>\n"
        "<dialog id=\"drill\" aria-labelledby=\"drill-title\"><form method=\"dialog\" class=\"close\">"
        "<button type=\"submit\" aria-label=\"Close\">Close ✕</button></form><div id=\"drill-body\"></div></dialog>\n"
        f"<script type=\"application/json\" id=\"report-data\">{script_json(data)}</script>\n"
        f"<script>{script}</script>\n</body>\n</html>\n"
    )


def content_security_policy(style: str, script: str) -> str:
    """The page's policy: nothing is fetched (no script, style or connection from anywhere), and the one inline
    style and the one inline script run only because their hashes are named: a ``<script>`` or a ``style``
    attribute that got into the page any other way is refused by the browser, not just escaped by runner. (The
    JSON data block is not a script a browser runs: no policy names it.)"""
    def digest(text: str) -> str:
        return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"

    return f"default-src 'none'; style-src {digest(style)}; script-src {digest(script)}; img-src data:"


def script_json(data: object) -> str:
    """JSON that is safe inside a ``<script>`` element: ``<``, ``>`` and ``&`` (and the two line separators) are
    written as JSON escapes, so no string in it can close the element or open a comment."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    for char, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                          ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        text = text.replace(char, escaped)
    return text


def _href(path: Path, base: Path) -> str:
    return quote(Path(os.path.relpath(path.resolve(), base)).as_posix())


def _harness_order(harness: str) -> tuple[bool, str]:
    return (harness != "reference", harness)  # as runner.matrix.cells orders them: the reference first


def _e(text: str) -> str:
    return html.escape(text, quote=True)


def _spaced(status: str) -> str:
    return status.replace("_", " ")


def _short(value: str) -> str:
    """A sha256 pin, as the Markdown report shows it: its first 19 characters (``sha256:`` and 12 hex)."""
    return value[:19] + "…" if value.startswith("sha256:") and len(value) > 19 else value


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[:most] + f"… [{len(text) - most} more characters]"
