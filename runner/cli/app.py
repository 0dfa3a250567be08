"""The command tree: every command of ``runner``, registered from the module that holds it. Importing this
loads typer and the command modules, which import their work only when they run."""

from __future__ import annotations

from typing import Annotated

import typer

import runner
from runner.cli import images, listing, matrix, turn

EPILOG = (
    "Exit codes: 0 done; 1 a verdict of no (the report's gate, a repro with another grade); 2 usage; "
    "3 unknown harness, case or behaviour; 4 unusable profile; 5 infrastructure (engine, image, container, "
    "output directory); 130 interrupted."
)

app = typer.Typer(
    help="Run coding-agent CLIs in pinned containers against a SharedOS catalogue served over MCP.",
    epilog=EPILOG, no_args_is_help=True, add_completion=False, rich_markup_mode=None,
)
app.command("exec")(turn.exec_)
app.command("run")(matrix.run)
app.command("report")(matrix.report)
app.command("repro")(matrix.repro)
app.command("matrix")(matrix.matrix)
app.command("cases")(listing.cases)
app.command("harnesses")(listing.harnesses)
app.command("gc")(turn.gc)
app.add_typer(images.app, name="images")


@app.callback(invoke_without_command=True)
def main(
    version: Annotated[bool, typer.Option("--version", help="Print the runner version and exit.")] = False,
) -> None:
    if version:
        print(f"runner {runner.__version__}")
        raise typer.Exit()
