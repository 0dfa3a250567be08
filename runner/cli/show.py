"""``runner show CELL_DIR``: one cell's verdict and its timeline, in a terminal or a pipe (or ``--json``).

The text is plain lines: the verdict as ``key  value`` (keys aligned, the value last), then the timeline, one moment
a line (time, source and event aligned, the details last). No line is padded past its own content, none ends in a
space, none is folded: it reads the same in a terminal, through ``less``, in a file or in ``grep``. A reason, a
detail or a tool name is what a CLI or a model wrote: each field is shown with its control characters as escapes
(:func:`runner.core.visible.visible`), never obeyed, and ``--json`` writes them as JSON escapes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypedDict

import typer

from runner.cli.render import PricesFile, fail, line, print_json, reported
from runner.core.visible import visible
from runner.errors import Exit

if TYPE_CHECKING:
    from runner.conformance.prices import Prices
    from runner.core.outcomes import JsonValue
    from runner.matrix.result import CellResult
    from runner.matrix.timeline import CellTimeline, Moment

GAP = "  "


def show(
    cell_dir: Annotated[Path, typer.Argument(metavar="CELL_DIR", help="A cell directory (it holds result.json).")],
    as_json: Annotated[bool, typer.Option("--json", help="Print exactly one JSON object on stdout.")] = False,
    prices_file: PricesFile = None,
) -> None:
    """Print a cell's verdict and its timeline: the turn's moments, the MCP events and the model requests, merged by
    their time since the turn's start. Exit 2 when CELL_DIR is not a cell directory or one of its files cannot be
    read (the message names the file and the line).

    Example: runner show runs/matrix/escalation.baseline.codex
    """
    from runner.conformance.prices import load_prices
    from runner.matrix.artifact import RESULT, load_result
    from runner.matrix.timeline import read_cell_timeline

    if not (cell_dir / RESULT).is_file():
        what = "does not exist" if not cell_dir.exists() else f"holds no {RESULT}"
        fail(Exit.USAGE, f"{cell_dir}: not a cell directory ({what})", as_json)
    with reported(as_json):
        prices = load_prices(prices_file) if prices_file is not None else None
        result = load_result(cell_dir / RESULT)
        timeline = read_cell_timeline(cell_dir)
    body = verdict(result, prices)
    if as_json:
        print_json(json.dumps({"cell": str(cell_dir), "verdict": body,
                               "timeline": [m.to_json() for m in timeline.moments], "untimed": timeline.untimed},
                              ensure_ascii=False))
        return
    line("\n".join(render(body, timeline)))


class Verdict(TypedDict):
    """What ``runner show --json`` says a cell came to (``verdict``)."""

    cell: str
    grade: str
    status: str | None
    reasonCode: str | None
    reason: str | None
    harness: str
    behaviour: str | None
    exitCode: int | None
    deadlineHit: bool | None
    callsAfterEscalation: int | None
    windDownSeconds: float | None
    startedAt: str | None
    evidence: str | None
    infrastructureError: dict[str, JsonValue] | None
    failure: dict[str, JsonValue] | None  # why the cell's attempt failed: cause, kind, evidence, retried, counts
    usage: dict[str, JsonValue] | None  # the tokens of its model answers (total, conversation, side)
    cost: dict[str, JsonValue] | None  # with --prices: what every attempt's tokens cost (currency, amount, unpriced)
    toolPolicy: dict[str, JsonValue] | None  # upstream's system.toolPolicy, measured
    attempts: list[str]  # each attempt of a cell that took more than one, on a line


def verdict(result: CellResult, prices: Prices | None = None) -> Verdict:
    """What the cell came to: its grade and how its turn ended (None where it ran no turn); with ``prices``, what
    its tokens cost."""
    from runner.matrix import report_figures as figures

    turn = result.turn
    problem = result.infrastructure_error
    return {
        "cell": result.id,
        "grade": result.status,
        "status": turn.status if turn else None,
        "reasonCode": turn.reason_code if turn else None,
        "reason": turn.reason if turn else None,
        "harness": result.cell.harness,
        "behaviour": result.pins.behaviour,
        "exitCode": turn.exit_code if turn else None,
        "deadlineHit": turn.deadline_hit if turn else None,
        "callsAfterEscalation": turn.calls_after_escalation if turn else None,
        "windDownSeconds": turn.wind_down_seconds if turn else None,
        "startedAt": result.started_at,
        "evidence": result.evidence,
        "infrastructureError": problem.to_dict() if problem else None,
        "failure": result.why.to_dict() if result.why else None,
        "usage": result.usage.to_dict() if result.usage else None,
        "cost": figures.cost([result], prices).to_json() if prices is not None else None,
        "toolPolicy": result.tool_policy.to_dict() if result.tool_policy else None,
        "attempts": [attempt.summary() for attempt in result.cell_attempts],
    }


def render(body: Verdict, timeline: CellTimeline) -> list[str]:
    """The text ``runner show`` prints: the verdict, then the timeline."""
    status = body["status"]
    if status is not None and body["reasonCode"]:
        status = f"{status} ({body['reasonCode']})"
    exit_code = body["exitCode"]
    exited = None if body["status"] is None else "unknown" if exit_code is None else str(exit_code)
    if exited is not None and body["deadlineHit"]:
        exited += " (stopped by the deadline)"
    problem = body["infrastructureError"]
    rows = [
        ("cell", body["cell"]), ("grade", body["grade"]), ("status", status), ("reason", body["reason"]),
        ("harness", body["harness"]), ("behaviour", body["behaviour"]), ("exit", exited),
        ("callsAfterEscalation", body["callsAfterEscalation"]), ("windDownSeconds", body["windDownSeconds"]),
        ("startedAt", body["startedAt"]), ("evidence", body["evidence"]),
        ("infrastructureError", f"{problem['kind']}: {problem['detail']}" if problem else None),
        ("failure", _failure_line(body["failure"])), ("tokens", _tokens(body["usage"])),
        *((("cost", _cost(body["cost"]) + _over(body["attempts"])),) if body["cost"] is not None else ()),
        ("toolPolicy", _policy(body["toolPolicy"])),
        *((f"attempt {n}", said) for n, said in enumerate(body["attempts"], 1)),
    ]
    shown = [(key, "-" if value is None else str(value)) for key, value in rows]
    lines = aligned([[key, value] for key, value in shown])
    lines.append("")
    if not timeline.moments:
        lines.append("timeline: none (the cell ran no turn, or its files carry no times)")
    else:
        lines.append("timeline (t: seconds since the turn's start)")
        lines += aligned([[f"{m.t:.3f}", m.source, m.event, details(m)] for m in timeline.moments], right=(0,))
    for name, count in timeline.untimed.items():
        lines.append(f"{name}: {count} lines carry no time (written by an older runner), not on the timeline")
    return lines


def _failure_line(failure: dict[str, JsonValue] | None) -> str | None:
    if failure is None:
        return None
    rule = "retried" if failure.get("retried") else "not retried"
    return f"{failure['cause']} ({failure['kind']}, {rule}): {failure['evidence']}"


def _tokens(usage: dict[str, JsonValue] | None) -> str | None:
    from runner.matrix import report_figures as figures
    from runner.matrix.result import UsageRecord

    return figures.tokens(UsageRecord.model_validate(usage)) if usage is not None else None


def _cost(cost: dict[str, JsonValue]) -> str:
    from runner.matrix import report_figures as figures

    amount, unpriced = cost["amount"], cost["unpriced"]
    return figures.Spend(str(cost["currency"]), float(amount) if isinstance(amount, int | float) else None,
                         tuple(str(m) for m in unpriced) if isinstance(unpriced, list) else ()).shown


def _over(attempts: list[str]) -> str:
    """The cost counts every attempt's tokens (a retried attempt was spent too), the tokens row the last one's."""
    return f" (all {len(attempts)} attempts)" if len(attempts) > 1 else ""


def _policy(policy: dict[str, JsonValue] | None) -> str | None:
    from runner.matrix import report_figures as figures
    from runner.matrix.result import ToolPolicyRecord

    return figures.policy(ToolPolicyRecord.model_validate(policy)) if policy is not None else None


def details(moment: Moment) -> str:
    """A moment's fields as ``key=value`` words: a string as it is (quoted when it holds a space), anything else as
    compact JSON."""
    words = []
    for key, value in moment.fields.items():
        if isinstance(value, str) and value and not any(c.isspace() for c in value) and '"' not in value:
            text = value
        else:
            text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        words.append(f"{key}={text}")
    return " ".join(words)


def aligned(rows: list[list[str]], right: tuple[int, ...] = ()) -> list[str]:
    """Rows as lines whose columns align; the last column is never padded and no line ends in a space. Each field is
    :func:`~runner.core.visible.visible` first (a reason, a detail or a tool's argument is what a CLI or a model
    wrote: shown, never obeyed), so the columns align on what is printed."""
    if not rows:
        return []
    rows = [[visible(cell) for cell in row] for row in rows]
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [cell.rjust(widths[i]) if i in right else cell.ljust(widths[i]) for i, cell in enumerate(row[:-1])]
        lines.append(GAP.join([*cells, " ".join(row[-1].splitlines())]).rstrip())
    return lines
