"""The command tree: every command of ``runner``, registered from the module that holds it. Importing this
loads typer and the command modules, which import their work only when they run."""

from __future__ import annotations

import gc as garbage
from typing import Annotated, Any

import typer

import runner
from runner.cli.images import app as images_app
from runner.cli.listing import cases, harnesses
from runner.cli.matrix import matrix, report, repro, run
from runner.cli.profiles import app as profiles_app
from runner.cli.render import UNWRAPPED, is_terminal, line
from runner.cli.show import show
from runner.cli.turn import exec_, gc

EPILOG = (
    "Exit codes: 0 done; 1 a verdict of no (the report's gate, a repro with another grade); 2 usage; "
    "3 unknown harness, case or behaviour; 4 unusable profile; 5 infrastructure (engine, image, container, "
    "output directory unwritable, full, or held by another live run); 130 interrupted."
)

# help fits a terminal; written to a pipe or a file it is never folded (nor its command summaries cut short)
HELP_WIDTH = {} if is_terminal() else {"terminal_width": UNWRAPPED, "max_content_width": UNWRAPPED}

class _Runner(typer.Typer):
    """The command tree, run; the process then exits without the interpreter's final garbage collection: once the
    MCP SDK is loaded (its ~570 pydantic models, every turn's) that collection alone took 0.5-1.2 s of a runner exec
    on this 2-core machine under load (0.03-0.09 s frozen). Finalisation still runs: files are closed and flushed,
    atexit handlers run."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        finally:
            garbage.freeze()


app = _Runner(
    help="Run coding-agent CLIs in pinned containers against a SharedOS catalogue served over MCP.",
    epilog=EPILOG, no_args_is_help=True, add_completion=False, rich_markup_mode=None, context_settings=HELP_WIDTH,
    # a bug's traceback as Python prints it: whole lines in a log (typer's panel folds them at 80 columns in a pipe)
    pretty_exceptions_enable=False,
)
app.command("exec")(exec_)
app.command("run")(run)
app.command("report")(report)
app.command("repro")(repro)
app.command("show")(show)
app.command("matrix")(matrix)
app.command("cases")(cases)
app.command("harnesses")(harnesses)
app.command("gc")(gc)
app.add_typer(images_app, name="images")
app.add_typer(profiles_app, name="profiles")


@app.callback(invoke_without_command=True)
def main(
    version: Annotated[bool, typer.Option("--version", help="Print the runner version and exit.")] = False,
) -> None:
    if version:
        line(f"runner {runner.__version__}")
        raise typer.Exit()
