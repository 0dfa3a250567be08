"""What the commands write, and how an error ends a command.

Output fits where it goes, and :func:`is_terminal` is the one place that decides where that is. On a terminal,
rich's tables and colour, fitted to its width. Written to a pipe or a file, plain text: never hard-wrapped (CI logs,
grep and anything that parses stderr see whole lines), a table is plain aligned columns (no box, its long free-text
column last) whose lines are only as long as their own fields make them, and no line ends in spaces. Rich sizes a
console from the terminal (80 columns when there is none), so each print asks for a console fitted to the stream
as it is now (a test runner or a redirect may have replaced it since import). Message text is escaped: a path
holding ``[brackets]`` is not markup.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn

import typer

from runner.errors import Exit, RunnerError

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table

    from runner.matrix.result import CellResult
    from runner.turn.runtime import TurnReport

UNWRAPPED = 1 << 16  # columns for a pipe or file: wide enough that no line or table is ever folded


def is_terminal(stderr: bool = False) -> bool:
    """Whether stdout (or stderr) is a terminal now: the one test of where the output goes."""
    return (sys.stderr if stderr else sys.stdout).isatty()


def _console(stderr: bool) -> Console:
    from rich.console import Console

    if is_terminal(stderr):
        return Console(stderr=stderr)
    return Console(stderr=stderr, soft_wrap=True, width=UNWRAPPED)


def listing(*headers: str) -> Table:
    """A table of records for :func:`print_table`: boxed on a terminal; for a pipe or a file, plain columns two
    spaces apart (no box, no padding at the edges). Put the long free-text column last."""
    from rich.table import Table

    if is_terminal():
        return Table(*headers)
    return Table(*headers, box=None, pad_edge=False, show_edge=False)


def print_table(table: Table) -> None:
    """A table on stdout. On a terminal, rich fits it to the terminal's width. To a pipe or a file, rich lays it out
    unwrapped and uncoloured, and each line ends where its last field does: a column is padded only to align the
    next one, never to an artificial width, so no line carries trailing spaces."""
    if is_terminal():
        out().print(table)
        return
    from rich.console import Console

    plain = Console(file=io.StringIO(), width=UNWRAPPED, color_system=None, soft_wrap=True)
    for line in plain.render_lines(table, plain.options, pad=False):
        print("".join(segment.text for segment in line).rstrip())


def err() -> Console:
    return _console(stderr=True)


def out() -> Console:
    return _console(stderr=False)


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def say(message: str) -> None:
    """One progress line on stderr (``… message``)."""
    err().print(f"[dim]…[/] {escape(message)}", highlight=False)


def warn(message: str) -> None:
    err().print(f"[yellow]runner:[/] {escape(message)}", highlight=False)


def fail(code: Exit, text: str, as_json: bool = False) -> NoReturn:
    """End the command with ``code``: the message on stderr (and, with ``--json``, one error object on stdout)."""
    if as_json:
        print(json.dumps({"error": {"exitCode": int(code), "kind": code.name.lower(), "message": text}}))
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


def print_turn_summary(report: TurnReport, cell: CellResult) -> None:
    """``runner exec``'s account of one turn: how it settled, the CLI's own outcome, pins, files, repro."""
    from pathlib import Path

    from rich.table import Table

    result, request, drive = report.result, report.request, report.drive
    meta = result.metadata
    status = result.status.value
    colour = {"escalated": "magenta", "succeeded": "green", "failed": "red", "cancelled": "yellow"}.get(status, "white")
    table = Table(show_header=False, box=None, pad_edge=False)
    reason_code = f"  ({result.reason_code})" if result.reason_code else ""
    table.add_row("status", f"[bold {colour}]{status}[/]" + reason_code)
    if result.escalation is not None:
        table.add_row("reason", escape(result.escalation.reason))
    if result.error is not None:
        table.add_row("error", escape(f"{result.error.code}: {result.error.message}"))
    table.add_row("harness outcome", str(meta.get("harnessOutcome", "(no ask: the CLI's own outcome is the turn's)"))
                  + (f"  ({meta['harnessErrorCode']})" if meta.get("harnessErrorCode") else ""))
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
    table.add_row("image", f"{(result.text('imageId') or '')[:19]}  ({meta.get('cliVersion')})")
    table.add_row("catalogue",
                  f"{(result.text('catalogHash') or '')[:19]}…  prompt {(result.text('promptHash') or '')[:12]}…")
    mcp = report.mcp
    table.add_row("mcp", f"{mcp.get('sessionsInitialized', 0)} session(s), {mcp.get('calls', 0)} call(s)")
    table.add_row("elapsed", f"{round(report.elapsed, 3):.2f}s")
    print_table(table)
    console = out()
    tail = meta.get("transcriptTail")
    if isinstance(tail, list) and tail:
        console.print("[bold]transcript tail[/]")
        for line in tail[-12:]:  # on a terminal, each cut to its width; to a pipe, whole (its own spaces dropped)
            console.print(f"  {str(line).rstrip()}", highlight=False, markup=False, overflow="ellipsis", no_wrap=True)
    console.print(f"[bold]files[/]  {escape(str(Path(report.files['record']).parent))}", highlight=False)
    console.print("[bold]repro[/]  ", end="")
    console.print(cell.repro, highlight=False, markup=False, soft_wrap=True)
    if request.keep:
        console.print(f"[bold]kept container[/] {(drive.container_id or '')[:12]}  "
                      "(remove with: docker rm -f …, or runner gc)")
