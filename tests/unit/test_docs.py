"""The README and the pages under ``docs/`` cannot rot silently.

- Every ``runner ...`` command line in a fenced code block is accepted by the real command tree's parser (the
  typer app's own): the command and its subcommand exist, each option is one of its options and gets the value it
  needs, a number is a number, and the positional arguments are as many as it takes. Nothing is run: the command's
  parser reads the line, as it would before running it.
- Every relative link resolves to a file of the tree, and a link to a heading of a page (``page.md#heading``) to a
  heading that page has.
- The layer table of ``docs/architecture.md`` names every package of the layer rule (``tests/unit/test_layers.py``).
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass
from pathlib import Path

import pytest
import typer
from typer.core import TyperArgument, TyperGroup
from typer.main import get_command

from runner.cli.app import app
from tests.unit.test_layers import ALLOWED

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
FENCE = re.compile(r"^\s*(```|~~~)")
INVOCATION = re.compile(r"^\s*(?:\$\s+)?(?:\.venv/bin/)?runner(?:\s|$)")
SHELL_OPERATORS = {"|", "||", "&&", ";", "&", ">", ">>", "<", "2>", "2>&1", ">&2"}
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")


@dataclass(frozen=True)
class CommandLine:
    page: Path
    line: int  # 1-based, where the command starts
    text: str

    def __str__(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}: {self.text}"


def fenced_command_lines(page: Path) -> list[CommandLine]:
    """Each ``runner`` invocation in the page's fenced blocks, its ``\\`` continuation lines joined."""
    found: list[CommandLine] = []
    inside = False
    pending: tuple[int, str] | None = None
    for number, line in enumerate(page.read_text(encoding="utf-8").splitlines(), start=1):
        if FENCE.match(line):
            inside, pending = not inside, None
            continue
        if not inside:
            continue
        if pending is not None:
            start, text = pending
            text += " " + line.strip()
        elif INVOCATION.match(line):
            start, text = number, line.strip()
        else:
            continue
        if text.endswith("\\"):
            pending = (start, text[:-1].rstrip())
        else:
            pending = None
            found.append(CommandLine(page, start, text))
    return found


def runner_args(text: str) -> list[str]:
    """The arguments runner is given on a shell line: after ``runner``, before a comment or a shell operator."""
    words = shlex.split(text, comments=True)
    if words and words[0] == "$":
        words = words[1:]
    args = words[1:]
    cut = next((i for i, word in enumerate(args) if word in SHELL_OPERATORS or word.startswith((">", "2>"))), None)
    return args if cut is None else args[:cut]


def check_args(args: list[str]) -> None:
    """Raise typer's usage error unless the command tree accepts ``args`` as a command line (parsing only)."""
    command = get_command(app)
    context = typer.Context(command, info_name="runner")
    while isinstance(command, TyperGroup):
        if not args or args[0].startswith("-"):
            raise typer.BadParameter(f"no command after {context.command_path!r}", context)
        name, args = args[0], args[1:]
        found = command.get_command(context, name)
        if found is None:
            raise typer.BadParameter(f"no such command {name!r} in {context.command_path!r}", context)
        command, context = found, typer.Context(found, parent=context, info_name=name)
    values, positional, _ = command.make_parser(context).parse_args(list(args))
    for param in command.params:  # a number is one (the other values are read by runner's settings, at run time)
        value = values.get(param.name) if param.name else None
        kind = param.type_descriptor.annotation if param.type_descriptor else None
        if kind in (int, float) and isinstance(value, str):
            try:
                kind(value)
            except ValueError:
                raise typer.BadParameter(f"{value!r} is not a number", context, param) from None
    arguments = [p for p in command.params if isinstance(p, TyperArgument)]
    if any(p.nargs == -1 for p in arguments):
        return
    missing = [p.name for p in arguments if p.required and values.get(p.name) is None]
    if missing or positional:
        raise typer.BadParameter(f"{context.command_path}: missing {missing}, unexpected {positional}", context)


ALL_LINES = [line for page in PAGES for line in fenced_command_lines(page)]


def test_the_pages_show_commands_to_check() -> None:
    assert len(ALL_LINES) >= 20, "fewer runner lines than the pages hold: the scan found nothing to check"
    assert any(line.page.name == "README.md" for line in ALL_LINES)


@pytest.mark.parametrize("line", ALL_LINES, ids=str)
def test_every_runner_line_in_a_code_block_is_one_the_command_tree_accepts(line: CommandLine) -> None:
    try:
        check_args(runner_args(line.text))
    except typer.TyperException as error:
        pytest.fail(f"{line}\n  refused: {error}")


@pytest.mark.parametrize("text", [
    "runner exec --harness codex --case escalation --no-such-option",  # an option exec does not have
    "runner exec --harness",  # an option without its value
    "runner nosuchcommand --json",
    "runner images",  # a group without its command
    "runner images nosuch",
    "runner exec --harness codex --case escalation --deadline soon",  # not a number
    "runner show",  # a required argument missing
    "runner show a b",  # one argument too many
])
def test_the_check_refuses_what_the_command_tree_refuses(text: str) -> None:
    with pytest.raises(typer.TyperException):
        check_args(runner_args(text))


def test_a_shell_line_gives_runner_only_its_own_arguments() -> None:
    line = ".venv/bin/runner report runs/x --markdown r.md > out.txt 2>&1  # a comment"
    assert runner_args(line) == ["report", "runs/x", "--markdown", "r.md"]
    assert runner_args("runner harnesses | less") == ["harnesses"]
    check_args(runner_args(line))


# --- links --------------------------------------------------------------------------------------------------------


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    found: set[str] = set()
    inside = False
    for line in page.read_text(encoding="utf-8").splitlines():
        if FENCE.match(line):
            inside = not inside
        elif not inside and (heading := re.match(r"#{1,6}\s+(.*)", line)):
            found.add(slug(heading.group(1)))
    return found


def links(page: Path) -> list[str]:
    """The link targets of a page, outside its code (fenced blocks and inline code)."""
    text = re.sub(r"^\s*```.*?^\s*```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    return LINK.findall(text)


def test_every_relative_link_resolves_to_a_file_and_a_heading() -> None:
    checked, broken = 0, []
    for page in PAGES:
        for target in links(page):
            if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto:: not the tree's
                continue
            path, _, anchor = target.partition("#")
            resolved = (page.parent / path).resolve() if path else page
            checked += 1
            if not resolved.exists():
                broken.append(f"{page.relative_to(REPO)}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{page.relative_to(REPO)}: {target} (no such heading)")
    assert checked >= 20, "fewer links than the README alone holds: the scan found nothing to check"
    assert broken == []


def test_the_slug_is_githubs() -> None:
    assert slug("Runtimes: runc and gVisor") == "runtimes-runc-and-gvisor"
    assert slug("Scripted faults: `--model-fault KIND[@STEP]`") == "scripted-faults---model-fault-kindstep"
    assert slug("The Markdown report's size") == "the-markdown-reports-size"


def test_a_broken_link_is_found(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# Title\n\n[a](missing.md) [b](#title) `[c](inline.md)`\n```\n[d](fenced.md)\n```\n")
    assert links(page) == ["missing.md", "#title"]
    assert anchors(page) == {"title"}


# --- the architecture page's layer table --------------------------------------------------------------------------


def test_the_architecture_pages_layer_table_names_every_package_of_the_rule() -> None:
    text = (REPO / "docs" / "architecture.md").read_text(encoding="utf-8")
    table = text[text.index("| package | may import |"):].split("\n\n", 1)[0]
    listed = {name for row in table.splitlines()[2:] for name in re.findall(r"`(\w+)`", row.split("|")[1])}
    assert listed == set(ALLOWED), "docs/architecture.md's layer table and tests/unit/test_layers.py's rule differ"
