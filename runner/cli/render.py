"""What the commands write, and how an error ends a command.

Text the CLI writes to a pipe or a file is never hard-wrapped: CI logs, grep and anything that parses stderr see
whole lines. Rich sizes a console from the terminal (80 columns when there is none), so each print asks for a
console fitted to the stream as it is now (a test runner or a redirect may have replaced it since import); on a
terminal, tables still fit its width. Message text is escaped: a path holding ``[brackets]`` is not markup.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, NoReturn

import typer

from runner.errors import Exit, RunnerError

if TYPE_CHECKING:
    from rich.console import Console

    from runner.matrix.result import CellResult
    from runner.turn.runtime import TurnReport

UNWRAPPED = 1 << 16  # columns for a pipe or file: wide enough that no line or table is ever folded


def _console(stderr: bool) -> Console:
    from rich.console import Console

    stream = sys.stderr if stderr else sys.stdout
    if stream.isatty():
        return Console(stderr=stderr)
    return Console(stderr=stderr, soft_wrap=True, width=UNWRAPPED)


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

    data = report.to_json()
    meta = data["outcome"]["metadata"]
    status = data["status"]
    colour = {"escalated": "magenta", "succeeded": "green", "failed": "red", "cancelled": "yellow"}.get(status, "white")
    table = Table(show_header=False, box=None, pad_edge=False)
    reason_code = f"  ({data['reasonCode']})" if data["reasonCode"] else ""
    table.add_row("status", f"[bold {colour}]{status}[/]" + reason_code)
    if data.get("escalation"):
        table.add_row("reason", escape(data["escalation"]["reason"]))
    if data.get("error"):
        table.add_row("error", escape(f"{data['error']['code']}: {data['error']['message']}"))
    table.add_row("harness outcome", str(meta.get("harnessOutcome", "(no ask: the CLI's own outcome is the turn's)"))
                  + (f"  ({meta['harnessErrorCode']})" if meta.get("harnessErrorCode") else ""))
    table.add_row("calls after the ask", str(meta.get("callsAfterEscalation", "-")))
    if cell.grade:
        table.add_row("cell grade", escape(cell.evidence))
    table.add_row("harness", f"{data['harness']} · behaviour {data['behaviour']} · exit {data['exitCode']}"
                  + ("  · stopped at the deadline" if data["deadlineHit"] else ""))
    fault = f"  · fault {data['model']['fault']}" if data["model"].get("fault") else ""
    table.add_row("model", escape(f"{data['model']['mode']}  ({data['model']['why']}){fault}"))
    table.add_row("image", f"{meta.get('imageId', '')[:19]}  ({meta.get('cliVersion')})")
    table.add_row("catalogue", f"{meta.get('catalogHash', '')[:19]}…  prompt {str(meta.get('promptHash', ''))[:12]}…")
    mcp = data["mcp"]
    table.add_row("mcp", f"{mcp.get('sessionsInitialized', 0)} session(s), {mcp.get('calls', 0)} call(s)")
    table.add_row("elapsed", f"{data['elapsedSeconds']:.2f}s")
    console = out()
    console.print(table)
    tail = meta.get("transcriptTail") or []
    if tail:
        console.print("[bold]transcript tail[/]")
        for line in tail[-12:]:
            console.print(f"  {line}", highlight=False, markup=False, overflow="ellipsis", no_wrap=True)
    console.print(f"[bold]files[/]  {escape(str(Path(data['files']['record']).parent))}", highlight=False)
    console.print("[bold]repro[/]  ", end="")
    console.print(cell.repro, highlight=False, markup=False, soft_wrap=True)
    if data["kept"]:
        console.print(f"[bold]kept container[/] {data['containerId'][:12]}  "
                      "(remove with: docker rm -f …, or runner gc)")
