"""The command tree: every command of ``runner``, registered from the module that holds it. Importing this
loads typer and the command modules, which import their work only when they run."""

from __future__ import annotations

import gc as garbage
import json
import warnings
from typing import Annotated, Any

import typer

import runner
from runner.cli.images import app as images_app
from runner.cli.listing import cases, harnesses
from runner.cli.matrix import matrix, report, repro, run
from runner.cli.profiles import app as profiles_app
from runner.cli.render import UNWRAPPED, is_terminal, line, print_json, warn
from runner.cli.setup import app as setup_app
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
    """The command tree, run; the process then exits without the interpreter's final garbage collection, which, once
    the MCP SDK is loaded, costs a runner exec more than the rest of its exit (docs/measurements.md, "runner exec's
    final garbage collection"). Finalisation still runs: files are closed and flushed, atexit handlers run."""

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        try:
            return super().__call__(*args, **kwargs)
        finally:
            garbage.freeze()


app = _Runner(
    help="Run coding-agent CLIs in pinned containers against a SharedOS catalogue served over MCP.",
    # --install-completion / --show-completion: typer's, for bash, zsh, fish and PowerShell (docs/install.md)
    epilog=EPILOG, no_args_is_help=True, add_completion=True, rich_markup_mode=None, context_settings=HELP_WIDTH,
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
app.add_typer(setup_app, name="setup")


@app.callback(invoke_without_command=True)
def main(
    version: Annotated[bool, typer.Option(
        "--version", help="Print the runner version and where its profiles, image recipes and cache are, and exit.",
    )] = False,
    as_json: Annotated[bool, typer.Option("--json", help="With --version: one JSON object.")] = False,
) -> None:
    warnings.showwarning = _show_plugin_warning
    if version:
        where = locations()
        if as_json:
            print_json(json.dumps({"version": runner.__version__, **where}, ensure_ascii=False))
        else:
            line(f"runner {runner.__version__}")
            for key, paths in where.items():
                line(f"{key}: {', '.join(paths) if isinstance(paths, list) else paths}")
        raise typer.Exit()


def locations() -> dict[str, list[str] | str]:
    """Where this runner looks for profiles (in order), where its image recipes are (the builder's bases, each harness
    package's images), and its cache."""
    from runner.cli.settings import image_settings, profiles_dirs
    from runner.harnesses.profile import looked_in
    from runner.images import image_dirs, source_root
    from runner.images.tree import harnesses_dir

    settings = image_settings()
    root = source_root(settings)
    built_in = harnesses_dir(root)
    # the built-in harnesses' images as one pattern; the builder's bases and each plugin's images as they are
    folders = {str(built_in / "*" / "images") if d.is_relative_to(built_in) else str(d.parent)
               for d in image_dirs(root).values()}
    return {
        "profiles": [str(d) for d in looked_in(profiles_dirs())],
        "recipes": sorted(folders),
        "cache": str(settings.cache_dir),
    }


_default_showwarning = warnings.showwarning


def _show_plugin_warning(message: Warning | str, category: type[Warning], *args: Any, **kwargs: Any) -> None:
    """A plugin runner set aside, as one ``runner:`` line on stderr (others as Python shows them)."""
    from runner.harnesses.interpreters import PluginWarning

    if issubclass(category, PluginWarning):
        warn(str(message))
    else:
        _default_showwarning(message, category, *args, **kwargs)
