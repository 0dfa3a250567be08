"""What the commands write, and how an error ends a command.

Output fits where it goes, and :func:`is_terminal` is the one place that decides where that is. On a terminal,
rich's tables and colour, fitted to its width. Written to a pipe or a file, plain text: never hard-wrapped (CI logs,
grep and anything that parses stderr see whole lines), a table is plain aligned columns (no box, its long free-text
column last) whose lines are only as long as their own fields make them, and no line ends in spaces. Rich sizes a
console from the terminal (80 columns when there is none), so each print asks for a console fitted to the stream
as it is now (a test runner or a redirect may have replaced it since import). Message text is escaped: a path
holding ``[brackets]`` is not markup.

Shown, never obeyed: what a CLI or a model wrote (a reason, a message, an error, a version line) can hold terminal
escape sequences, carriage returns, bidi overrides. Every printer of the CLI writes through this module, and this
module passes every text through :func:`runner.core.visible.visible` (JSON through ``visible_json``), to a terminal
and to a pipe alike: the consoles' ``print``, a table's rows (:func:`listing`, :func:`record`), :func:`line` and
:func:`print_json`. No other module of the CLI calls ``print`` or makes a console or a table (a unit test holds it).
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.table import Table

from runner.core.visible import visible, visible_json
from runner.errors import Exit, RunnerError

if TYPE_CHECKING:
    from runner.conformance.prices import Prices
    from runner.matrix.result import CellResult
    from runner.turn.run_turn import TurnReport

UNWRAPPED = 1 << 16  # columns for a pipe or file: wide enough that no line or table is ever folded


class _Shown(Console):
    """A console whose every printed text is :func:`~runner.core.visible.visible` first (markup is printable, so a
    markup string keeps its styles; only the characters a terminal would obey are escaped)."""

    def print(self, *objects: Any, **kwargs: Any) -> None:
        super().print(*(visible(o) if isinstance(o, str) else o for o in objects), **kwargs)


class _Records(Table):
    """A table whose every text cell is :func:`~runner.core.visible.visible` as it is added."""

    def add_row(self, *renderables: Any, **kwargs: Any) -> None:
        super().add_row(*(visible(r) if isinstance(r, str) else r for r in renderables), **kwargs)


def is_terminal(stderr: bool = False) -> bool:
    """Whether stdout (or stderr) is a terminal now: the one test of where the output goes."""
    return (sys.stderr if stderr else sys.stdout).isatty()


def _console(stderr: bool) -> Console:
    if is_terminal(stderr):
        return _Shown(stderr=stderr)
    return _Shown(stderr=stderr, soft_wrap=True, width=UNWRAPPED)


def listing(*headers: str) -> Table:
    """A table of records for :func:`print_table`: boxed on a terminal; for a pipe or a file, plain columns two
    spaces apart (no box, no padding at the edges). Put the long free-text column last."""
    if is_terminal():
        return _Records(*headers)
    return _Records(*headers, box=None, pad_edge=False, show_edge=False)


def record() -> Table:
    """A table of ``key  value`` rows (no header, no box): one record, such as ``runner exec``'s summary."""
    return _Records(show_header=False, box=None, pad_edge=False)


def line(text: str = "", end: str = "\n") -> None:
    """Text on stdout as it is (no markup, no wrap), shown, never obeyed."""
    print(visible(text), end=end)


def print_json(document: str, end: str = "\n") -> None:
    """JSON text on stdout (``json.dumps(..., ensure_ascii=False)``): the same document for a parser, with every
    character a terminal would obey written as a JSON escape."""
    print(visible_json(document), end=end)


def print_table(table: Table) -> None:
    """A table on stdout. On a terminal, rich fits it to the terminal's width. To a pipe or a file, rich lays it out
    unwrapped and uncoloured, and each line ends where its last field does: a column is padded only to align the
    next one, never to an artificial width, so no line carries trailing spaces."""
    if is_terminal():
        out().print(table)
        return
    plain = Console(file=io.StringIO(), width=UNWRAPPED, color_system=None, soft_wrap=True)
    for row in plain.render_lines(table, plain.options, pad=False):
        print(visible("".join(segment.text for segment in row).rstrip()))


def err() -> Console:
    return _console(stderr=True)


def out() -> Console:
    return _console(stderr=False)


def escape(text: str) -> str:
    """``text`` inside markup: its brackets are not markup, its control characters are shown."""
    from rich.markup import escape as rich_escape

    return rich_escape(visible(text))


def say(message: str) -> None:
    """One progress line on stderr (``… message``)."""
    err().print(f"[dim]…[/] {escape(message)}", highlight=False)


def warn(message: str) -> None:
    err().print(f"[yellow]runner:[/] {escape(message)}", highlight=False)


def fail(code: Exit, text: str, as_json: bool = False) -> NoReturn:
    """End the command with ``code``: the message on stderr (and, with ``--json``, one error object on stdout)."""
    if as_json:
        print_json(json.dumps({"error": {"exitCode": int(code), "kind": code.name.lower(), "message": text}}))
    err().print(f"[bold red]runner:[/] {escape(text)}", highlight=False, markup=True)
    raise typer.Exit(int(code))


@contextmanager
def reported(as_json: bool = False) -> Iterator[None]:
    """Any :class:`~runner.errors.RunnerError` raised inside ends the command with the exit code its class
    carries and its message: the one place errors become exit codes."""
    try:
        yield
    except RunnerError as error:
        fail(error.exit_code, str(error), as_json)


# --prices, one declaration for every command that shows tokens (exec, show, run, report)
PricesFile = Annotated[Path | None, typer.Option(
    "--prices", metavar="FILE",
    help="A price file (YAML, per million tokens, keyed by model id: docs/prices.md): say what the tokens cost, in "
         "its currency; a model it does not name has no cost.")]


def print_turn_summary(report: TurnReport, cell: CellResult, prices: Prices | None = None) -> None:
    """``runner exec``'s account of one turn: how it settled, the CLI's own outcome, its tokens (with ``prices``,
    their cost) and tool policy, why it failed (when it did), pins, files, repro."""
    from pathlib import Path

    from runner.matrix import report_figures as figures

    result, request, drive = report.result, report.request, report.drive
    meta = result.metadata
    status = result.status.value
    colour = {"escalated": "magenta", "succeeded": "green", "failed": "red", "cancelled": "yellow"}.get(status, "white")
    table = record()
    reason_code = f"  ({escape(result.reason_code)})" if result.reason_code else ""
    table.add_row("status", f"[bold {colour}]{status}[/]" + reason_code)
    if result.escalation is not None:
        table.add_row("reason", escape(result.escalation.reason))
    if result.error is not None:
        table.add_row("error", escape(f"{result.error.code}: {result.error.message}"))
    table.add_row("harness outcome", escape(str(meta.get("harnessOutcome",
                                                         "(no ask: the CLI's own outcome is the turn's)")))
                  + (f"  ({escape(str(meta['harnessErrorCode']))})" if meta.get("harnessErrorCode") else ""))
    table.add_row("calls after the ask", str(meta.get("callsAfterEscalation", "-")))
    wind_down = report.wind_down_seconds
    table.add_row("wind-down", "-" if wind_down is None
                  else f"{wind_down:.2f}s  (the ask answered -> the CLI's exit by itself)")
    if cell.grade:
        table.add_row("cell grade", escape(cell.evidence))
    table.add_row("harness", f"{request.profile.id} · behaviour {request.behaviour.value} · exit {drive.exit_code}"
                  + ("  · stopped at the deadline" if drive.deadline_hit else ""))
    model = request.model
    fault = f"  · fault {model.fault}" if model.fault else ""
    table.add_row("model", escape(f"{model.mode}  ({model.why}){fault}"))
    table.add_row("image", escape(f"{(result.text('imageId') or '')[:19]}  ({meta.get('cliVersion')})"))
    table.add_row("catalogue",
                  f"{(result.text('catalogHash') or '')[:19]}…  prompt {(result.text('promptHash') or '')[:12]}…")
    mcp = report.mcp
    table.add_row("mcp", f"{mcp.get('sessionsInitialized', 0)} session(s), {mcp.get('calls', 0)} call(s)")
    if cell.usage is not None or request.profile.model is not None:
        table.add_row("tokens", escape(figures.tokens(cell.usage)))
        if prices is not None:
            table.add_row("cost", escape(figures.cost([cell], prices).shown))
        table.add_row("tool policy", escape(figures.policy(cell.tool_policy)))
    if cell.why is not None:
        table.add_row("failure", escape(cell.why.line))
    table.add_row("elapsed", f"{round(report.elapsed, 3):.2f}s")
    print_table(table)
    console = out()
    tail = meta.get("transcriptTail")
    if isinstance(tail, list) and tail:
        console.print("[bold]transcript tail[/]")
        for said in tail[-12:]:  # on a terminal, each cut to its width; to a pipe, whole (its own spaces dropped)
            console.print(f"  {str(said).rstrip()}", highlight=False, markup=False, overflow="ellipsis", no_wrap=True)
    console.print(f"[bold]files[/]  {escape(str(Path(report.files['record']).parent))}", highlight=False)
    console.print("[bold]repro[/]  ", end="")
    console.print(cell.repro, highlight=False, markup=False, soft_wrap=True)
    if request.keep:
        console.print(f"[bold]kept container[/] {(drive.container_id or '')[:12]}  "
                      "(remove with: docker rm -f …, or runner gc)")
