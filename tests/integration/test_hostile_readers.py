"""The two readers of what a CLI wrote that came last, each attacked from inside a real container (issue 29's rule:
every reader of what the CLI wrote is tested so): Nanocoder's one JSON report, which runner keeps while the CLI runs
(``StreamReader.keep``, 1 MiB at most) and reads through its JSON intake once the CLI exited; and the tool lists
runner reads back from its exchange log to measure a turn's usage and tool policy (``runner.turn.measure``,
``runner.model.tool_policy``), which are whatever the CLI sent its model.

The CLIs are tests/hostile/readers-document.yaml (Nanocoder's interpreter; an oversized report, a deeply nested
one, and one whose strings hold lone surrogates, invalid UTF-8 and control characters, sent after playing the
reference client's script) and tests/hostile/readers-tools.yaml (requests to its model socket: 16 lists of 30,000
tools each; names of 100,000 characters, with escape sequences, lone surrogates and path climbs; parameters nested
deep, and a request nested deeper than runner reads), each a column of one ``runner run -j 2`` on the reference
image beside the reference column itself.

After the run, through the product's own files and commands: the reference cell is graded as in the golden run; a
report runner cannot read is the CLI's malformed output (its cause named: the depth, or the cut), a report it can
is Nanocoder's success graded as the reference's turn is, with U+FFFD where a string was not text; every
``result.json`` and report (``report.md``, ``manifest.json``, ``junit.xml``, ``runner show``) is well-formed,
valid UTF-8, with no raw control character; ``system.toolPolicy`` holds at most the ADR's bounds, says its inventory
is not complete when it was cut, and every tool name in it is short and printable; and runner's peak RSS over the
whole run stays bounded (printed).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from runner.images import ImageRecord
from runner.model.tool_policy import MAX_EVIDENCE, MAX_EXTERNAL, MAX_LOCAL
from tests.support import _PEAK_OF as PEAK_OF
from tests.support import RUNNER, peak_mib

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

TESTS = Path(__file__).resolve().parents[1]
HOSTILE = TESTS / "hostile"
GOLDEN = TESTS / "golden" / "runs" / "matrix"
RSS_BOUND_MIB = 512
SHAPES = {"readers-document": ["oversized", "nested", "strings"], "readers-tools": ["huge", "odd"]}
CONTROL = [chr(c) for c in [*range(0x20), 0x7F, *range(0x80, 0xA0)] if chr(c) not in "\n\t"]


@pytest.fixture
def root() -> Iterator[Path]:
    import tempfile

    with tempfile.TemporaryDirectory(prefix="rr-", dir="/tmp") as where:
        yield Path(where)


def profiles(root: Path) -> dict[str, Path]:
    """One profile a column (``<profile>-<shape>``), each @SHAPE@ filled, in one directory."""
    directory = root / "profiles"
    directory.mkdir()
    written: dict[str, Path] = {}
    for name, shapes in SHAPES.items():
        for shape in shapes:
            profile: dict[str, Any] = yaml.safe_load((HOSTILE / f"{name}.yaml").read_text())
            column = f"{name}-{shape}"
            profile |= {"id": column, "label": f"{column} (hostile, tests only)",
                        "argv": [arg.replace("@SHAPE@", shape) for arg in profile["argv"]]}
            written[column] = directory / f"{column}.yaml"
            written[column].write_text(yaml.safe_dump(profile, sort_keys=False))
    return written


def printable(text: str) -> bool:
    return not any(c in text for c in CONTROL) and not any("\ud800" <= c <= "\udfff" for c in text)


def test_hostile_reports_and_tool_lists_are_read_bounded_and_graded_as_the_clis(root: Path,
                                                                             reference_image: ImageRecord) -> None:
    columns = ["reference", *profiles(root)]
    out, tmpdir, peak = root / "out", root / "tmp", root / "peak"
    tmpdir.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "RUNNER_PROFILES_DIR"} | {"TMPDIR": str(tmpdir)}
    started = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-c", PEAK_OF, str(peak), RUNNER, "run", "--harness", ",".join(columns), "--case",
         "escalation", "-j", "2", "--retries", "0", "--profiles-dir", str(root / "profiles"), "--out", str(out)],
        capture_output=True, env=env, timeout=800)
    wall = time.monotonic() - started
    said, complaints = proc.stdout.decode("utf-8"), proc.stderr.decode("utf-8")  # strict: valid UTF-8
    found = {p.parent.name: json.loads(p.read_bytes().decode("utf-8")) for p in out.glob("*/result.json")}
    print(f"\n{len(found)} cells in {wall:.0f} s, runner's peak RSS {peak_mib(peak):.0f} MiB")
    for cell_id, result in sorted(found.items()):
        turn = result.get("turn") or {}
        print(f"  {cell_id}: {result['grade']['status']} (turn {turn.get('status')}, {turn.get('reasonCode')}; "
              f"failure {result.get('failure')})")

    # the run ends as a run with the CLIs' failures in it does: the gate's exit 1, no traceback, every cell its own
    assert "Traceback" not in complaints, complaints[-3000:]
    assert set(found) == {f"escalation.baseline.{c}" for c in columns}, sorted(found)
    assert proc.returncode == 1, complaints[-3000:]
    assert f"ran {len(columns)}, resumed 0, infrastructure errors 0;" in said, said[-2000:]
    assert not [c for c, r in found.items() if r.get("infrastructureError")], "no reader broke on its input"
    golden = json.loads((GOLDEN / "escalation.baseline.reference" / "result.json").read_text())["grade"]["status"]
    cell = {column: found[f"escalation.baseline.{column}"] for column in columns}
    assert cell["reference"]["grade"]["status"] == golden

    # Nanocoder's report: unreadable (past the kept bound, or nested past the intake's depth) is the CLI's
    # malformed output, its cause named; readable, it is the success it says, graded as the reference's turn
    for shape, cause in (("oversized", "over the bound of"), ("nested", "nested deeper than")):
        result = cell[f"readers-document-{shape}"]
        assert (result["turn"]["status"], result["turn"]["reasonCode"]) == ("failed", "harness_malformed_output")
        assert result["failure"]["cause"] == "cli" and result["failure"]["kind"] == "malformed_output", result
        kept = "".join(f.read_text() for f in (out / f"escalation.baseline.readers-document-{shape}").glob("*.json"))
        assert "one JSON document on stdout" in kept and cause in kept, (shape, kept[-3000:])
        assert result["grade"]["status"] == "not_exercised"
    strings = cell["readers-document-strings"]
    assert strings["grade"]["status"] == golden and strings["turn"]["harnessOutcome"] == "complete", strings
    # every file runner wrote of the cell is valid UTF-8 (no lone surrogate got through) with no raw ESC or BEL
    for column in columns:
        for path in (out / f"escalation.baseline.{column}").rglob("*"):
            if path.is_file() and path.name not in ("stdout.log", "stderr.log"):  # the CLI's bytes as they came
                text = path.read_bytes().decode("utf-8")
                assert "\x1b" not in text and "\x07" not in text, path

    # the tool lists: what is recorded stays within the ADR's bounds, and every name in it is short and printable
    huge, odd = (cell[f"readers-tools-{shape}"] for shape in ("huge", "odd"))
    said_by = {shape: (out / f"escalation.baseline.readers-tools-{shape}" / "stdout.log").read_text()
               for shape in ("huge", "odd")}
    assert said_by["huge"].count(": 200 (") == 16, said_by["huge"][-2000:]
    assert "odd-names: 200" in said_by["odd"] and "deep-params: 200" in said_by["odd"], said_by["odd"][-2000:]
    assert "too-deep: 400" in said_by["odd"], said_by["odd"][-2000:]
    for result in (huge, odd):
        assert result["turn"]["status"] == "succeeded", result["turn"]
        policy = result["system"]["toolPolicy"]
        assert policy["mode"] == "mixed" and policy["inventory"] == "unknown", policy["inventory"]
        assert len(policy["harnessLocal"]) <= MAX_LOCAL and len(policy["externalDirect"]) <= MAX_EXTERNAL
        assert len(policy["evidence"]) <= MAX_EVIDENCE and policy["managedMcp"] == ["sharedos"]
        for name in [*policy["harnessLocal"], *policy["externalDirect"]]:
            assert len(name) <= 256 and printable(name), repr(name[:80])
    assert len(huge["system"]["toolPolicy"]["harnessLocal"]) == MAX_LOCAL
    assert "mcp:other" in odd["system"]["toolPolicy"]["externalDirect"]

    # every report is well-formed, valid UTF-8, and holds no raw control character
    for name in ("report.md", "manifest.json", "junit.xml"):
        text = (out / name).read_bytes().decode("utf-8")
        assert not [c for c in CONTROL if c in text], name
    json.loads((out / "manifest.json").read_text())
    ElementTree.parse(out / "junit.xml")
    for column in ("readers-document-strings", "readers-tools-odd"):
        shown = subprocess.run([RUNNER, "show", str(out / f"escalation.baseline.{column}")], capture_output=True,
                               env=env, timeout=120)
        assert shown.returncode == 0 and b"\x1b" not in shown.stdout + shown.stderr, shown.stderr[-2000:]
        shown.stdout.decode("utf-8")
    assert sorted(tmpdir.iterdir()) == [], "a turn dir is left in TMPDIR"
    assert peak_mib(peak) < RSS_BOUND_MIB, f"runner peaked at {peak_mib(peak):.0f} MiB"
