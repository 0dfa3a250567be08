"""What the CLI writes to a pipe or a file is never hard-wrapped: CI logs, ``grep`` and whatever parses stderr
see whole lines, however long the paths in them. On a terminal, tables still fit the terminal's width.

Each test runs the real ``runner`` process (no Docker: every command here fails or answers before an engine is
needed) with paths far longer than any terminal, so a wrap at any width would split the line being looked for.
"""

from __future__ import annotations

import fcntl
import json
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


def plain_listing(headers: list[str], records: list[list[str]]) -> list[str]:
    """A listing as it must read in a pipe: one line a record, each field but the last padded to its column's
    widest, two spaces between columns, and the last field as it is: nothing after it."""
    widths = [max(len(r[i]) for r in [headers, *records]) for i in range(len(headers) - 1)]
    return ["  ".join([*(f.ljust(w) for f, w in zip(r, widths, strict=False)), r[-1]]).rstrip()
            for r in [headers, *records]]


def assert_fits_a_pipe(text: str) -> None:
    for line in text.splitlines():
        assert line == line.rstrip(), f"trailing whitespace: {line[-40:]!r}"
        assert not any(box in line for box in "│┃━─┏┗╇"), f"a box in a pipe: {line[:80]!r}"


@pytest.fixture()
def long_profile(tmp_path: Path) -> Path:
    """A column of our own whose label and unavailable reason are longer than any terminal."""
    shipped = Path(__file__).resolve().parents[2] / "runner" / "harnesses" / "deepseek" / "deepseek.yaml"
    text = shipped.read_text(encoding="utf-8").replace("id: deepseek", "id: zz-long")
    text = "\n".join(f"label: {LONG[:120]}" if line.startswith("label:") else line for line in text.splitlines())
    (tmp_path / "zz-long.yaml").write_text(text + f"\nunavailable: {LONG} {LONG}\n", encoding="utf-8")
    return tmp_path


def test_harnesses_in_a_pipe_is_one_plain_line_a_column_padded_only_to_align(long_profile: Path) -> None:
    proc = run("harnesses", "--profiles-dir", str(long_profile))
    assert proc.returncode == 0, proc.stderr
    listed = json.loads(run("harnesses", "--profiles-dir", str(long_profile), "--json").stdout)
    records = [[r["harness"], r["label"], r["image"], r["interpreter"], r["source"], r["toolPolicy"]["mode"],
                r["state"] + (f": {r['why']}" if r["why"] else "")] for r in listed]
    assert any(r[0] == "zz-long" and len(r[-1]) > 400 for r in records)
    assert_fits_a_pipe(proc.stdout)
    assert proc.stdout.splitlines() == plain_listing(
        ["harness", "label", "image", "interpreter", "source", "policy", "state"], records)


def test_cases_in_a_pipe_is_one_plain_line_a_row_its_invariant_last() -> None:
    proc = run("cases")
    assert proc.returncode == 0, proc.stderr
    records = [[c["case"], c["conditions"][0], "", c["invariant"]] for c in json.loads(run("cases", "--json").stdout)]
    lines = proc.stdout.splitlines()
    assert_fits_a_pipe(proc.stdout)
    assert len(lines) == len(records) + 1  # a header, then one line a case: nothing folded
    for line, record in zip(lines[1:], records, strict=True):
        assert line.startswith(record[0] + " ") and line.endswith("  " + record[-1])
    # the longest line is the one its longest invariant makes, not a width of rich's choosing
    assert len(max(lines, key=len)) == len(lines[1]) - len(records[0][-1]) + max(len(r[-1]) for r in records)


def test_images_outdated_in_a_pipe_keeps_its_note_last_and_unpadded(capsys: pytest.CaptureFixture[str]) -> None:
    from runner.cli.images import print_outdated
    from runner.images.pins import Row

    rows = [Row("codex", "npm", "@openai/codex", "0.1.0", newest="0.2.0", behind=3, days=12),
            Row("amp", "npm", "@sourcegraph/amp", "0.0.1", newest="0.0.9", behind=40, days=200, hold=LONG)]
    print_outdated(rows)
    text = capsys.readouterr().out
    assert_fits_a_pipe(text)
    assert text.splitlines() == [*plain_listing(["image", "package", "pinned", "newest", "behind", "days", "note"], [
        ["codex", "@openai/codex", "0.1.0", "0.2.0", "3", "12", ""],  # an empty last field: nothing after "12"
        ["amp", "@sourcegraph/amp", "0.0.1", "0.0.9", "40", "200", f"held: {LONG}"]]),
        "1 pin(s) behind; 1 behind but held or unavailable"]


def test_images_outdated_in_a_pipe_shows_each_refused_release_on_its_own_unfolded_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    """A pin held because its newer releases do not install: each refused release on a line of its own under the
    pin (image and package repeated, the version under "newest"), its reason whole on that line however long,
    a multi-line reason folded to one, and nothing after it."""
    from runner.cli.images import print_outdated
    from runner.images.pins import Row

    why = "its linux-x64 platform package @kilocode/cli-linux-x64@7.8.1 is not published " + LONG
    rows = [Row("kilo", "npm", "@kilocode/cli", "7.7.7", newest="7.7.7", behind=0, days=0, hold="7.8.1 fails",
                uninstallable=(f"7.8.1: {why}", "7.8.0: npm error code ETARGET\n  notarget   none")),
            Row("codex", "npm", "@openai/codex", "0.1.0", newest="0.1.0", behind=0, days=0)]
    print_outdated(rows)
    text = capsys.readouterr().out
    assert_fits_a_pipe(text)
    assert text.splitlines() == [*plain_listing(["image", "package", "pinned", "newest", "behind", "days", "note"], [
        ["kilo", "@kilocode/cli", "7.7.7", "7.7.7", "0", "0", "held: 7.8.1 fails"],
        ["kilo", "@kilocode/cli", "", "7.8.1", "", "", f"refused: {why}"],
        ["kilo", "@kilocode/cli", "", "7.8.0", "", "", "refused: npm error code ETARGET notarget none"],
        ["codex", "@openai/codex", "0.1.0", "0.1.0", "0", "0", ""]]),
        "no pin a bump would move is behind; 2 newer release(s) refused by a dry-run install"]


def test_the_exec_summary_in_a_pipe_pads_no_line(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """``runner exec``'s account of a turn, rendered from a turn report built here (no engine): every line ends
    where its own text does, and none is folded, however long the reason, the tail and the repro."""
    from runner.cli.render import print_turn_summary
    from runner.conformance.cases import get_case
    from runner.core.outcomes import Escalation, ExecutionResult
    from runner.core.vocabulary import ExecutionStatus
    from runner.harnesses.profile import find_profile
    from runner.images import ImageRecord
    from runner.matrix.result import CellResult
    from runner.model.settings import ModelMode
    from runner.sandbox.interface import Transport
    from runner.turn.drive import Drive
    from runner.turn.model_choice import ModelChoice
    from runner.turn.run_turn import TurnReport, TurnRequest

    reason = "a human must approve this: " + LONG
    tail = ["short line", "a line the CLI ended in spaces   ", "long " + LONG]
    result = ExecutionResult(
        execution_id="e1", status=ExecutionStatus.ESCALATED, events=[],
        metadata={"harnessOutcome": "complete", "callsAfterEscalation": 2, "imageId": "sha256:" + "0" * 64,
                  "cliVersion": "1.2.3", "catalogHash": "sha256:" + "c" * 64, "promptHash": "p" * 64,
                  "transcriptTail": tail},
        escalation=Escalation(reason=reason, reviewer={}, requested_at="2026-12-02T00:00:00Z"))
    request = TurnRequest(case=get_case("escalation"), profile=find_profile("reference"),
                          image=ImageRecord(harness="reference", image_id="sha256:" + "0" * 64, tag="t",
                                            recipe_hash="r", base="b", cli_package=None, cli_version="1.2.3",
                                            version_output="1.2.3", built_at=""),
                          out_dir=tmp_path, model=ModelChoice(ModelMode.NONE, "the reference plays its script"))
    repro = "runner exec --harness reference --case escalation --out " + str(tmp_path / LONG)
    report = TurnReport(request=request, result=result, record={}, files={"record": str(tmp_path / "record.json")},
                        drive=Drive(container_id="c" * 64, exit_code=0), elapsed=1.5, transport=Transport.MOUNT,
                        mcp={"sessionsInitialized": 1, "calls": 3})
    cell = CellResult.read({"version": 1, "cell": {"id": "escalation.baseline.reference", "case": "escalation",
                                                   "condition": "baseline", "column": "reference"},
                            "pins": {}, "repro": repro, "grade": {"status": "unavailable", "evidence": "x"}})
    print_turn_summary(report, cell)
    text = capsys.readouterr().out
    lines = text.splitlines()
    assert_fits_a_pipe(text)
    assert f"reason               {reason}" in lines  # the key column aligned, the value whole, nothing after it
    assert "status               escalated  (escalation_requested)" in lines
    assert "  a line the CLI ended in spaces" in lines and f"  long {LONG}" in lines
    assert f"repro  {repro}" in lines
    assert len(max(lines, key=len)) == len(f"repro  {repro}")


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


def test_report_in_a_pipe_writes_whole_lines_with_nothing_after_them(tmp_path: Path) -> None:
    """``runner report DIR | cat``: the Markdown summary of cells whose free text is long and untidy (a reason
    with line breaks and trailing spaces, a repro naming a deep path) is whole lines, none ending in spaces."""
    from runner.matrix.artifact import write_cell
    from runner.matrix.result import CellResult

    pins = {"caseSetHash": "c" * 64, "worldSetHash": "w" * 64, "judgeVersion": 5, "runnerVersion": "0.1.0",
            "modelMode": "none", "behaviour": "cooperative"}
    why = f"needs an account   \n  and a network {LONG}  "
    for harness, grade in (("gone", {"status": "unavailable", "evidence": f"unavailable; {why}"}),
                          ("here", {"status": "interrupted", "evidence": f"interrupted while {LONG}   "})):
        cell_id = f"escalation.baseline.{harness}"
        write_cell(tmp_path / "cells" / cell_id, CellResult.read({
            "version": 1, "cell": {"id": cell_id, "case": "escalation", "condition": "baseline", "column": harness},
            "pins": pins, "repro": f"runner exec --harness {harness} --out {tmp_path / LONG}", "grade": grade}))
    proc = run("report", str(tmp_path / "cells"))
    assert proc.returncode == 0, proc.stderr
    lines = proc.stdout.splitlines()
    assert_fits_a_pipe(proc.stdout)
    assert f"- **gone** (1 cell): needs an account and a network {LONG}" in lines  # one line, said once
    assert "| Harness | Cells | interrupted | unavailable |" in lines
    assert "| gone | 1 |  | 1 |" in lines and "| here | 1 | 1 |  |" in lines
