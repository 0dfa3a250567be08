"""What the CLI writes to a pipe or a file is never hard-wrapped: CI logs, ``grep`` and whatever parses stderr
see whole lines, however long the paths in them. On a terminal, tables still fit the terminal's width.

Each test runs the real ``runner`` process (no Docker: every command here fails or answers before an engine is
needed) with paths far longer than any terminal, so a wrap at any width would split the line being looked for.
"""

from __future__ import annotations

import fcntl
import os
import pty
import select
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

RUNNER = str(Path(sys.executable).parent / "runner")
LONG = "a-directory-name-long-enough-to-cross-any-terminal-width-" * 4  # 228 characters a segment


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run([RUNNER, *args], capture_output=True, text=True, timeout=60, env={**environ, **(env or {})})


@pytest.fixture()
def deep(tmp_path: Path) -> Path:
    path = tmp_path / LONG / LONG
    path.mkdir(parents=True)
    return path


def test_an_error_naming_a_long_path_is_one_line_on_stderr(deep: Path) -> None:
    blocker = deep / "a-file"
    blocker.write_text("not a directory")
    proc = run("exec", "--harness", "reference", "--case", "escalation", "--out", str(blocker / "cell"))
    assert proc.returncode == 5
    line = f"runner: {blocker / 'cell'}: cannot write the run's files there (Not a directory)"
    assert len(line) > 500 and line in proc.stderr.splitlines()


@pytest.mark.parametrize("columns", ["", "40"])
def test_a_report_error_is_one_line_whatever_COLUMNS_says(deep: Path, columns: str) -> None:
    missing = deep / "no-such-run"
    proc = run("report", str(missing), env={"COLUMNS": columns} if columns else {})
    assert proc.returncode == 2
    assert f"runner: {missing}: no such file or directory" in proc.stderr.splitlines()


def test_markup_like_text_in_a_message_is_printed_as_it_is(tmp_path: Path) -> None:
    # a path holding [brackets] is text, not rich markup: nothing of it may vanish
    odd = tmp_path / "[bold]not-markup[/]"
    proc = run("report", str(odd))
    assert f"runner: {odd}: no such file or directory" in proc.stderr.splitlines()


def test_a_table_written_to_a_pipe_keeps_each_row_on_one_line() -> None:
    proc = run("harnesses")
    assert proc.returncode == 0
    rows = [line for line in proc.stdout.splitlines() if line.startswith("│")]
    assert rows and all(line.count("│") == 6 for line in rows), proc.stdout  # 5 columns, no row folded
    assert any("Pi (direct MCP tools)" in line for line in rows)


def test_on_a_terminal_a_table_still_fits_its_width() -> None:
    """A pseudo-terminal 60 columns wide: the cases table (whose rows are far wider) folds to fit it."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 60, 0, 0))
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    proc = subprocess.Popen([RUNNER, "cases"], stdin=follower, stdout=follower, stderr=follower,
                            env={**environ, "TERM": "xterm"}, close_fds=True)
    os.close(follower)
    chunks = []
    while True:
        ready, _, _ = select.select([leader], [], [], 30)
        if not ready:
            break
        try:
            data = os.read(leader, 65536)
        except OSError:  # the follower side closed: the process is done
            break
        if not data:
            break
        chunks.append(data)
    os.close(leader)
    assert proc.wait(timeout=30) == 0
    text = b"".join(chunks).decode("utf-8", "replace")
    lines = [line for line in text.replace("\r", "").split("\n") if "│" in line or "┃" in line]
    assert lines, text
    # every table line fits 60 columns (escape sequences removed)
    import re

    plain = [re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", line) for line in lines]
    assert max(len(line) for line in plain) <= 60, plain[:3]
