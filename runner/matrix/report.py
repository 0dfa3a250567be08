"""Merge cell directories into one report: the manifest (JSON, every cell), a Markdown summary (counts per column
and grade, each column's pins and unavailability said once, then what a reader acts on), JUnit XML for CI, and the
expected-failures gate.

A cell directory holds ``result.json`` (a :class:`~runner.matrix.result.CellResult`, written by
:mod:`runner.matrix.artifact`). The gate passes on known failures, fails on new ones, and fails on stale entries
(an expected failure that now passes). Which grades fail is the judge's rule (``CellResult.strict_failure``).
Cells are comparable only when their pins match; the report says which pins differ when they do not.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from runner.conformance.failures import Cause
from runner.conformance.hashing import judge_version_text
from runner.conformance.prices import Prices
from runner.core.visible import visible
from runner.matrix import report_figures as figures
from runner.matrix.artifact import RESULT
from runner.matrix.gate import Expected, Gate, gate, load_expected
from runner.matrix.manifest import KeptApart, Manifest, ManifestCell, ManifestHarness, ManifestRow, PricesUsed, Run
from runner.matrix.result import INFRASTRUCTURE_ERROR, CellPins, CellResult
from runner.matrix.series import (
    SHARED_PINS,
    Group,
    ReportError,
    findings,
    group_runs,
    load_runs,
    locate_runs,
    outcome,
    series_status,
    stability,
)

__all__ = ["SHARED_PINS", "Expected", "Gate", "Manifest", "ReportError", "gate", "junit", "load_cells",
           "load_expected", "locate_cells", "manifest", "markdown", "write_reports"]


def locate_cells(paths: list[Path]) -> list[tuple[CellResult, Path]]:
    """:func:`load_cells`, each run with the directory it was read from (what ``--html`` links to)."""
    return locate_runs(paths)


def load_cells(paths: list[Path]) -> list[CellResult]:
    """Every run under the given directories (or the files themselves), sorted by cell id, then run order: each
    trial, each output directory's copy of a cell, each rerun is a run of its own (:func:`load_runs`)."""
    return load_runs(paths)


def write_reports(out: Path, cell_dirs: list[Path], prices: Prices | None = None) -> list[str]:
    """The run's own report files beside its cells: manifest.json, report.md, junit.xml (no gate; with ``prices``,
    the costs). Every trial below a cell directory is read. Returns the findings (scripted runs of one cell that
    differ; cells whose measured tool policy is not the mode their harness declares)."""
    loaded = load_cells([d for d in cell_dirs if (d / RESULT).exists()])
    data = manifest(loaded, prices=prices)
    for name, text in (("manifest.json", json.dumps(data.to_dict(), indent=2) + "\n"),
                       ("report.md", markdown(loaded, prices=prices)),
                       ("junit.xml", junit(loaded))):
        # what a CLI printed may hold what UTF-8 cannot encode (a lone surrogate): written escaped, never an error
        (out / name).write_text(text, encoding="utf-8", errors="backslashreplace")
    return list(data.findings)


def comparability(cells: list[CellResult]) -> list[str]:
    """Problems that make cells not comparable: differing shared pins, differing per-case catalogues."""
    problems = []
    for pin in SHARED_PINS:
        values = sorted({str(c.pins.to_dict().get(pin)) for c in cells})
        if len(values) > 1:
            problems.append(f"{pin} differs between cells: {', '.join(values)}")
    by_case: dict[str, set[str]] = {}
    for cell in cells:
        if cell.pins.catalog_hash:
            by_case.setdefault(cell.cell.case + "." + cell.cell.condition, set()).add(cell.pins.catalog_hash)
    problems += [
        f"{row}: the harnesses were served different catalogues ({', '.join(sorted(h))})"
        for row, h in sorted(by_case.items())
        if len(h) > 1
    ]
    return problems


def manifest(cells: list[CellResult], gate_result: Gate | None = None, every_run: bool = False,
             prices: Prices | None = None) -> Manifest:
    """The report as JSON: the first group of comparable runs at the top (one row per case and condition, one cell
    per column; a cell with more than one run, or any with ``every_run``, carries its ``stability``, its
    ``turnOutcome`` and every run under ``trials``), the groups kept apart under ``keptApart`` with the pins
    that kept them apart, and under ``findings`` the scripted runs that differ and the cells whose measured tool
    policy is not their harness's declared mode. With ``prices``, each cell and
    harness says what its tokens cost (``cost``, in the file's currency, under ``prices``), and ``prices.unpriced``
    the models the file has no price for."""
    groups = group_runs(cells) or [Group({})]
    first = _group(groups[0], every_run, prices)
    kept = [KeptApart(apart=tuple(g.apart), **_group(g, every_run, prices).model_dump(exclude={"apart"}))
            for g in groups[1:]]
    apart = [f"kept apart as group {n}, from {reason}" for n, g in enumerate(groups[1:], 2) for reason in g.apart]
    return Manifest(
        **first.model_dump(exclude={"apart"}),
        comparability=tuple(comparability(groups[0].runs) + apart),
        kept_apart=tuple(kept),
        findings=tuple(findings(groups) + figures.undeclared_policies(cells)),
        prices=PricesUsed(currency=prices.currency, unpriced=figures.cost(cells, prices).unpriced)
        if prices is not None else None,
        gate=gate_result,
    )


def _group(group: Group, every_run: bool, prices: Prices | None = None) -> KeptApart:
    runs = group.runs
    described: dict[tuple[str, str], CellResult] = {}
    cells: dict[tuple[str, str], list[ManifestCell]] = {}
    for cell_id in sorted(group.series):
        series = group.series[cell_id]
        cell = series[0]
        key = (cell.cell.case, cell.cell.condition)
        described.setdefault(key, cell)
        graded = cell.grade.model_dump(exclude={"status", "attempts", "harness_id"}) if cell.grade is not None else {}
        # one run: the cell is its only trial, and reads as it always did (``every_run``: every cell's runs)
        runs_shown = len(series) > 1 or every_run
        turn = cell.turn  # the CLI's own outcome and version, when a turn ran (what ``report --compare`` diffs)
        cells.setdefault(key, []).append(ManifestCell(
            harness_id=cell.cell.harness,
            status=series_status(series),
            **graded,
            cli_version=cell.pins.cli_version,
            harness_outcome=turn.harness_outcome if turn else None,
            harness_error_code=turn.harness_error_code if turn else None,
            stability=stability(series) if runs_shown else None,
            turn_outcome=outcome(series) if runs_shown else None,
            failure=next((r.failure for r in reversed(series) if r.failure is not None), None),
            usage=figures.total_usage(series),
            cost=figures.cost(series, prices).amount if prices is not None else None,
            tool_policy=figures.last_policy(series),
            rate=figures.pass_rate(series).summary().to_json() if len(series) > 1 else None,
            trials=tuple(_trial(n, run) for n, run in enumerate(series, 1)) if runs_shown else None,
        ))
    shared = group.shared
    judge, cases, worlds = shared.get("judgeVersion"), shared.get("caseSetHash"), shared.get("worldSetHash")
    firsts = [group.series[k][0] for k in sorted(group.series)]
    return KeptApart(
        judge_version=judge_version_text(judge),
        case_set_hash=cases if isinstance(cases, str) else None,
        world_set_hash=worlds if isinstance(worlds, str) else None,
        harnesses=tuple(_harness(col, firsts, group, prices) for col in sorted({c.cell.harness for c in runs})),
        rows=tuple(_row(key, described[key], cells[key]) for key in sorted(cells, key=suite_order)),
    )


def _harness(harness: str, firsts: list[CellResult], group: Group, prices: Prices | None) -> ManifestHarness:
    """A harness of the group: its prompt set, and what its runs measured (tokens, failures by cause, its pass rate
    when a cell ran more than once, its tool policy)."""
    runs = [r for r in group.runs if r.cell.harness == harness]
    several = any(len(s) > 1 for s in group.series.values() if s[0].cell.harness == harness)
    failures = figures.by_cause(figures.failed_attempts(runs))
    cost = figures.cost(runs, prices) if prices is not None else None
    return ManifestHarness(
        id=harness, prompt_set_hash=_prompt_set(firsts, harness), usage=figures.total_usage(runs),
        cost=cost.amount if cost else None, unpriced=cost.unpriced if cost else (),
        failures=failures or None, rate=figures.pass_rate(runs).summary(ks=()).to_json() if several else None,
        tool_policy=figures.last_policy(runs),
    )


def _row(key: tuple[str, str], first: CellResult, cells: list[ManifestCell]) -> ManifestRow:
    about = first.row
    return ManifestRow(
        case_id=key[0], condition_id=key[1], kind=about.kind if about else None,
        invariant=about.invariant if about else None, expected_outcome=about.expected_outcome if about else None,
        cells=tuple(cells),
    )


def _trial(number: int, run: CellResult) -> Run:
    """One run of a cell, as the manifest carries it: what it found, never when or where."""
    return Run(run=number, trial=run.trial, status=run.status, evidence=run.evidence, turn=run.turn,
               infrastructure_error=run.infrastructure_error, failure=run.failure, usage=run.usage)


def suite_order(key: tuple[str, str]) -> tuple[int, int, str, str]:
    """Rows in the case set's own order (upstream's suite order), unknown ones last."""
    from runner.conformance.cases import CASES

    order = list(CASES)
    case = CASES.get(key[0])
    conditions = [c.id for c in case.conditions] if case else []
    return (
        order.index(key[0]) if case else len(order),
        conditions.index(key[1]) if key[1] in conditions else 0,
        key[0],
        key[1],
    )


def _prompt_set(cells: list[CellResult], harness: str) -> str | None:
    from runner.core.canonical import sha256_hex

    entries = [
        {"case": c.cell.case, "condition": c.cell.condition, "turn": 1, "promptHash": c.pins.prompt_hash}
        for c in cells
        if c.cell.harness == harness and c.pins.prompt_hash
    ]
    return sha256_hex(entries) if entries else None


def _spaced(status: str) -> str:
    return status.replace("_", " ")


# the grades a count is shown for, in this order (any other after them, by name)
GRADE_ORDER = ("pass", "fail", "not_exercised", "unstable", INFRASTRUCTURE_ERROR, "interrupted", "out_of_scope",
               "not_applicable", "not_implemented", "unavailable")
EVIDENCE_SHOWN = 400  # characters of a failing cell's evidence the summary quotes (the full text is in its cell)


def markdown(cells: list[CellResult], gate_result: Gate | None = None, full_detail: str | None = None,
             prices: Prices | None = None) -> str:
    """The report as Markdown: a summary a reader takes in at a glance (the GitHub step summary), whatever the
    matrix's size. Said once: the shared pins, each column's pins and, for an unavailable column, its reason.
    Counted: each column's cells by grade (a cell whose runs differ counts as ``unstable``). Listed: only what a
    reader acts on: failing cells with the command that reproduces each, cells that took more than one attempt with
    each attempt, cells whose runs differ side by side, findings, the gate. Each cell's evidence and runs are in
    ``manifest.json`` and in the HTML report; ``full_detail`` (Markdown, e.g. ``report.html``) is where the summary
    points for them. With ``prices``, each harness's tokens say what they cost, then each cell's cost and the models
    left unpriced."""
    groups = group_runs(cells)
    data = manifest(cells, gate_result, prices=prices)
    out = ["# Conformance report", ""]
    if full_detail:
        out += [f"Full detail, every cell: {full_detail}", ""]
    out += _pin_lines(data, cells)
    several = max((len(s) for g in groups for s in g.series.values()), default=1)
    if several > 1:
        out.append(f"- Runs per cell: up to {several}")
    out += [f"- **Not comparable:** {problem}" for problem in data.comparability]
    out += _section(data, groups[0] if groups else Group({}), "##")
    for number, (kept, group) in enumerate(zip(data.kept_apart, groups[1:], strict=True), 2):
        out += ["", f"## Group {number}: kept apart", ""]
        out += [f"- **Not merged** with {reason}" for reason in kept.apart]
        out += _pin_lines(kept, group.runs) + _section(kept, group, "###")
    out += _tokens(groups, prices)
    out += _costs(groups, prices) if prices is not None else []
    out += _causes(groups)
    out += _rates(groups)
    out += _unavailable(groups)
    out += _failing(groups, gate_result)
    out += _retried(groups)
    out += _unstable(groups)
    if data.findings:
        out += ["", "## Findings", ""] + [f"- {finding}" for finding in data.findings]
    if gate_result is not None:
        out += [
            "",
            "## Gate",
            "",
            f"**{'passed' if gate_result.passed else 'FAILED'}** — "
            f"{len(gate_result.new)} new failure(s), {len(gate_result.known)} known, {len(gate_result.stale)} stale",
        ]
        if gate_result.new or gate_result.stale:
            out.append("")
        out += [f"- new: `{c}`" for c in gate_result.new] + [f"- stale (now passes): `{c}`" for c in gate_result.stale]
    return visible("\n".join(out) + "\n")  # what a CLI said is shown, never obeyed, wherever the summary is read


def _pin_lines(data: Manifest | KeptApart, runs: list[CellResult]) -> list[str]:
    lines = [
        f"- Case set: `{data.case_set_hash}`",
        f"- World set: `{data.world_set_hash}`",
        f"- Grading rules: version {data.judge_version}",
    ]
    runner = _distinct(r.pins.runner_version for r in runs)
    runtime = _distinct(r.pins.runtime for r in runs)  # pinned only when not runc, the engine's default
    return lines + ([f"- Runner: {runner}"] if runner != "—" else []) + (
        [f"- OCI runtime: {runtime}"] if runtime != "—" else [])


def _distinct(values: Iterable[object]) -> str:
    """The values as one reads them once: each distinct one, in the order met; ``—`` for none."""
    found = list(dict.fromkeys(str(v) for v in values if v not in (None, "")))
    return ", ".join(found) if found else "—"


def _section(data: Manifest | KeptApart, group: Group, level: str) -> list[str]:
    """One group's columns: how many cells of each grade, then each column's pins, said once."""
    harnesses = [c.id for c in data.harnesses]
    counts: dict[str, Counter[str]] = {c: Counter() for c in harnesses}
    for row in data.rows:
        for cell in row.cells:
            counts[cell.harness_id][cell.status] += 1
    seen = {status for count in counts.values() for status in count}
    grades = [g for g in GRADE_ORDER if g in seen] + sorted(seen - set(GRADE_ORDER))
    out = [
        "",
        f"{level} Cells by grade, per harness",
        "",
        "| Harness | Cells | " + " | ".join(_spaced(g) for g in grades) + " |",
        "|---|---:|" + "---:|" * len(grades),
    ]
    for harness in harnesses:
        count = counts[harness]
        out.append(f"| {harness} | {sum(count.values())} | "
                   + " | ".join(str(count[g]) if count[g] else "" for g in grades) + " |")
    out += ["", f"{level} Pins per harness", "",
            "| Harness | CLI | Image | Model | Behaviour | Prompt set |", "|---|---|---|---|---|---|"]
    by_harness: dict[str, list[CellResult]] = {}
    for run in group.runs:
        by_harness.setdefault(run.cell.harness, []).append(run)
    prompt_sets = {c.id: c.prompt_set_hash for c in data.harnesses}
    for harness in harnesses:
        runs = by_harness.get(harness, [])
        pins = [r.pins for r in runs]
        images = _distinct(p.image_id[:19] if p.image_id else None for p in pins)
        model = _distinct(_model(p) for p in pins)
        prompt = prompt_sets.get(harness)
        out.append(f"| {harness} | {_distinct(p.cli_version for p in pins)} | "
                   f"{images if images == '—' else '`' + images + '`'} | {model} | "
                   f"{_distinct(p.behaviour for p in pins)} | {f'`{prompt}`' if prompt else '—'} |")
    rows = [f"`{row.case_id}.{row.condition_id}`" for row in data.rows
            if row.cells and all(c.status == "not_implemented" for c in row.cells)]
    if rows:
        out += ["", f"Not implemented in any harness ({len(rows)} rows): " + ", ".join(rows)]
    return out


def _model(pins: CellPins) -> str | None:
    """The model a cell's turn spoke to, as one reads it: ``scripted (openai-chat, fault error@2)``."""
    extras = [e for e in (pins.model_dialect, pins.model_fault and f"fault {pins.model_fault}") if e]
    return f"{pins.model_mode} ({', '.join(extras)})" if pins.model_mode and extras else pins.model_mode


def _by_harness(groups: list[Group]) -> dict[str, list[CellResult]]:
    found: dict[str, list[CellResult]] = {}
    for run in (r for g in groups for r in g.runs):
        found.setdefault(run.cell.harness, []).append(run)
    return dict(sorted(found.items()))


def _tokens(groups: list[Group], prices: Prices | None = None) -> list[str]:
    """Each harness's tokens over every run that reported any (every attempt's): what the matrix cost (with
    ``prices``, in money too)."""
    rows = []
    for harness, runs in _by_harness(groups).items():
        usage = figures.total_usage(runs)
        if usage is None:
            continue
        total, side = usage.total, usage.side
        spent, side_spent = total.input + total.output, side.input + side.output
        share = f"{side_spent:,} ({side_spent / spent:.0%})" if side_spent else "0"
        measured = sum(1 for r in runs if r.usage is not None)
        cost = f" {figures.cost(runs, prices).shown} |" if prices is not None else ""
        rows.append(f"| {harness} | {measured} | {total.input:,} | {total.cached_input:,} | {total.output:,} | "
                    f"{total.reasoning:,} | {share} | {usage.unreported or ''} |{cost}")
    if not rows:
        return []
    priced = (" Cost |", "---:|") if prices is not None else ("", "")
    return ["", "## Tokens per harness", "",
            "| Harness | Runs | Input | Cached input | Output | Reasoning | Side requests | Answers without usage |"
            + priced[0], "|---|---:|---:|---:|---:|---:|---:|---:|" + priced[1], *rows]


def _costs(groups: list[Group], prices: Prices) -> list[str]:
    """Each cell's cost (every run and attempt of it), and the models the price file has no price for."""
    rows = []
    for group in groups:
        for cell_id in sorted(group.series):
            usages = figures.spent(group.series[cell_id])
            if usages:
                rows.append(f"| `{cell_id}` | {figures.spend(usages, prices).shown} |")
    unpriced = figures.cost((r for g in groups for r in g.runs), prices).unpriced
    out = ["", "## Cost per cell", "", f"Prices per million tokens from the price file, in {prices.currency}."]
    if unpriced:
        out += ["", f"**Unpriced models** (the price file names no price for them; their runs have no cost): "
                   f"{', '.join(f'`{m}`' for m in unpriced)}"]
    return out + (["", "| Cell | Cost |", "|---|---:|", *rows] if rows else [])


def _causes(groups: list[Group]) -> list[str]:
    """Each harness's failed attempts by cause (every attempt of a retried cell too), each cause by kind."""
    failed = {h: figures.failed_attempts(runs) for h, runs in _by_harness(groups).items()}
    failed = {h: f for h, f in failed.items() if f}
    if not failed:
        return []
    causes = [c for c in Cause if any(f.cause == c.value for fs in failed.values() for f in fs)]
    out = ["", "## Failed attempts by cause, per harness", "",
           "| Harness | " + " | ".join(_spaced(c.value) for c in causes) + " |", "|---|" + "---|" * len(causes)]
    for harness, failures in failed.items():
        out.append(f"| {harness} | " + " | ".join(figures.kinds_text(failures, c.value) for c in causes) + " |")
    return out


def _rates(groups: list[Group]) -> list[str]:
    """With several runs of a cell: each harness's pass rate over the runs that count toward one, with its 95%
    Wilson interval, and how many of its cells passed every run, some or none."""
    if max((len(s) for g in groups for s in g.series.values()), default=1) < 2:
        return []
    out = ["", "## Pass rates per harness (runs that count)", "",
           "| Harness | Pass rate (95% Wilson) | Cells passing every run | some | none |", "|---|---|---:|---:|---:|"]
    for harness, runs in _by_harness(groups).items():
        rates = [figures.pass_rate(s) for g in groups for s in g.series.values() if s[0].cell.harness == harness]
        rates = [r for r in rates if r.trials]
        if not rates:
            continue
        every = sum(1 for r in rates if r.passes == r.trials)
        none = sum(1 for r in rates if r.passes == 0)
        shown = figures.pass_rate(runs).shown
        out.append(f"| {harness} | {shown} | {every} | {len(rates) - every - none} | {none} |")
    return out


def _unavailable(groups: list[Group]) -> list[str]:
    """Each unavailable column's reason, once (every one of its cells carries the same words)."""
    why: dict[str, dict[str, int]] = {}
    for group in groups:
        for run in group.runs:
            if run.status == "unavailable":
                said = " ".join(run.evidence.removeprefix("unavailable; ").split())  # one line, whatever it holds
                reasons = why.setdefault(run.cell.harness, {})
                reasons[said] = reasons.get(said, 0) + 1
    if not why:
        return []
    out = ["", "## Unavailable harnesses", ""]
    for harness, reasons in sorted(why.items()):
        for said, count in reasons.items():
            out.append(f"- **{harness}** ({count} cell{'s' if count != 1 else ''}): {said}")
    return out


def _failing(groups: list[Group], gate_result: Gate | None) -> list[str]:
    """Each failing cell (a strict failure or an infrastructure error in any of its runs): what it found, and the
    command that reproduces it alone."""
    failing = [
        runs for g in groups for _, runs in sorted(g.series.items())
        if any(r.strict_failure or r.status == INFRASTRUCTURE_ERROR for r in runs)
    ]
    if not failing:
        return []
    out = ["", "## Failing cells: reproduce one alone", ""]
    known = set(gate_result.known) if gate_result is not None else set()
    for runs in failing:
        worst = next(r for r in reversed(runs) if r.strict_failure or r.status == INFRASTRUCTURE_ERROR)
        said = _spaced(runs[0].status) if len(runs) == 1 else stability(runs, spaced=True)
        problem = worst.infrastructure_error
        evidence = " ".join((f"infrastructure error ({problem.kind}): {problem.detail}" if problem
                             else worst.evidence).split())
        if len(evidence) > EVIDENCE_SHOWN:
            evidence = evidence[:EVIDENCE_SHOWN - 1].rstrip() + "…"
        out += [f"- `{worst.id}` ({said}{', known' if worst.id in known else ''}): `{worst.repro}`",
                f"  - {evidence}"]
        if worst.failure is not None:
            out.append(f"  - cause: {worst.failure.cause} ({worst.failure.kind})")
        if len(runs) > 1:
            out.append(f"  - runs: {figures.rate_text(figures.pass_rate(runs).summary())}")
    return out


def _retried(groups: list[Group]) -> list[str]:
    """Each run that took more than one attempt (``runner run`` retried an infrastructure error), with every attempt:
    a CLI can cause the error that is retried, so a pass after a retry is never a plain pass."""
    retried = [run for g in groups for _, runs in sorted(g.series.items()) for run in runs if run.cell_attempts]
    if not retried:
        return []
    out = ["", "## Retried cells: every attempt", ""]
    for run in retried:
        trial = f" trial {run.trial}" if run.trial > 1 else ""
        out.append(f"- `{run.id}`{trial} ({_spaced(run.status)} after {len(run.cell_attempts)} attempts)")
        for attempt in run.cell_attempts:
            out.append(f"  - {attempt.summary(EVIDENCE_SHOWN)}")
    return out


def _unstable(groups: list[Group]) -> list[str]:
    """The cells whose runs differ, their runs side by side (a cell whose runs agree is only counted)."""
    moving = [(cell_id, runs) for g in groups for cell_id, runs in sorted(g.series.items())
              if series_status(runs) == "unstable"]
    if not moving:
        return []
    width = max(len(runs) for _, runs in moving)
    out = ["", "## Unstable cells: runs that differ", "",
           "| Cell | " + "".join(f"Run {n} | " for n in range(1, width + 1)) + "Turn outcome | Stability |",
           "|---|" + "---|" * (width + 2)]
    for cell_id, runs in moving:
        grades = [_spaced(r.status) for r in runs] + ["—"] * (width - len(runs))
        out.append(f"| `{cell_id}` | " + " | ".join(grades) + f" | {outcome(runs)} | {stability(runs, spaced=True)} |")
    return out


def junit(cells: list[CellResult]) -> str:
    """One test case per cell (per group it is in), its trials in its output when it has more than one: a failure
    when any run fails, else an error when any hit infrastructure, else skipped unless every run passed. Well-formed
    XML whatever a CLI printed (:func:`_well_formed`)."""
    suites = ET.Element("testsuites", name="runner conformance")
    groups = group_runs(cells)
    series = [(n, runs) for n, g in enumerate(groups, 1) for _, runs in sorted(g.series.items())]
    for harness in sorted({c.cell.harness for c in cells}):
        mine = [(n, runs) for n, runs in series if runs[0].cell.harness == harness]
        suite = ET.SubElement(suites, "testsuite", name=harness, tests=str(len(mine)))
        failures = skipped = errors = 0
        for number, runs in mine:
            cell = runs[0]
            name = f"{cell.cell.case}.{cell.cell.condition}" + (f" (group {number})" if number > 1 else "")
            case = ET.SubElement(suite, "testcase", classname=harness, name=name)
            failing = [r for r in runs if r.strict_failure]
            broken = [r for r in runs if r.infrastructure_error is not None]
            said = stability(runs) if len(runs) > 1 else ""
            if failing:
                failures += 1
                first = failing[0]
                cause = f"{first.failure.cause} ({first.failure.kind}): " if first.failure else ""
                element = ET.SubElement(case, "failure", message=f"{said + ': ' if said else ''}{cause}{first.status}: "
                                                                 f"{first.evidence}")
                element.text = first.repro
                if first.failure is not None:
                    element.set("type", first.failure.kind)
            elif broken:
                errors += 1
                problem, why = broken[0].infrastructure_error, broken[0].failure
                assert problem is not None
                cause = f"{why.cause} ({why.kind}): " if why else ""
                element = ET.SubElement(case, "error", message=f"{said + ': ' if said else ''}{cause}{problem.detail}")
                element.text = broken[0].repro
                if why is not None:
                    element.set("type", why.kind)
            elif any(r.status != "pass" for r in runs):
                skipped += 1
                ET.SubElement(case, "skipped", message=said or f"{cell.status}: {cell.evidence}")
            if len(runs) > 1:
                ET.SubElement(case, "system-out").text = "\n".join(
                    f"run {n} (trial {r.trial}): {r.status}: {r.evidence}" + (f" [turn {r.turn_outcome}]"
                                                                             if r.turn_outcome else "")
                    for n, r in enumerate(runs, 1)
                )
        suite.set("failures", str(failures))
        suite.set("skipped", str(skipped))
        suite.set("errors", str(errors))
    _well_formed(suites)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _well_formed(root: ET.Element) -> None:
    """Every text and attribute value with its control characters, lone surrogates and noncharacters written as
    visible escapes (:func:`~runner.core.visible.visible`): ElementTree escapes ``&``, ``<`` and ``>`` (so ``]]>``
    is harmless) but writes a character XML 1.0 forbids as it is, and a CLI's output can hold any."""
    for node in root.iter():
        node.attrib = {name: visible(value) for name, value in node.attrib.items()}
        if node.text:
            node.text = visible(node.text)
