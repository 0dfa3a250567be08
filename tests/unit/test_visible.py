"""Output is always well-formed, whatever a CLI printed: every text runner writes for a person (``runner exec``'s
summary, ``runner show``, ``runner report`` and report.md, the listings, ``--json``) shows a control character, a
bidi override or a lone surrogate as an escape and never hands it to the terminal, and ``junit.xml`` is XML a real
parser reads (expat, through ``xml.etree``) whatever the cells hold. Hostile strings come from hypothesis and from
the sequences a terminal obeys (CSI, OSC 8 links, BEL, backspace, carriage return, C1, U+202E).
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.core.visible import hidden, visible, visible_json
from runner.harnesses.profile import shipped_profile
from runner.matrix.report import junit, markdown
from runner.matrix.result import CellResult
from tests.unit.test_matrix_report import result_json

RUNNER = str(Path(sys.executable).parent / "runner")
CLI = Path(__file__).resolve().parents[2] / "runner" / "cli"

# what a terminal obeys, or an XML parser refuses: each must reach the reader as text
SEQUENCES = {
    "csi": "\x1b[2J\x1b[31m",  # clear the screen, go red
    "osc8": "\x1b]8;;https://evil.invalid/\x07click me\x1b]8;;\x07",  # a link to anywhere
    "bel": "\x07",
    "backspace": "safe\x08\x08\x08\x08",
    "carriage-return": "all good\rFAILED",
    "c1-csi": "\x9b31m",  # the 8-bit CSI
    "bidi": "\u202eevil\u202c",  # shown reversed
    "line-separator": "one\u2028two",
    "nul": "\x00",
    "lone-surrogate": "\ud83d",
    "nonchar": "\ufffe\uffff",
    "cdata-end": "]]>",
    "tag-char": "\U000e0001",
}
HOSTILE = " ".join(SEQUENCES.values())
FRAGMENTS = st.one_of(
    st.sampled_from(list(SEQUENCES.values())),
    st.text(st.characters(exclude_categories=()), max_size=12),  # every code point, surrogates and controls too
)
TEXTS = st.lists(FRAGMENTS, max_size=8).map("".join)


def assert_shown(text: str) -> None:
    """Nothing a reader would obey: no hidden character at all, ESC above all."""
    assert "\x1b" not in text and "\x9b" not in text
    assert not [c for c in text if hidden(c)], [c for c in text if hidden(c)][:5]


# --- the one function ---------------------------------------------------------------------------------------------


@settings(deadline=None)  # a loaded machine (make soak) is slow, never wrong
@given(TEXTS)
def test_visible_leaves_nothing_hidden_is_idempotent_and_encodes(text: str) -> None:
    shown = visible(text)
    assert_shown(shown)
    assert visible(shown) == shown
    shown.encode("utf-8")  # strict: a lone surrogate would raise here, as print() does


@settings(deadline=None)
@given(st.text(st.characters(exclude_categories=("Cc", "Cf", "Cs", "Zl", "Zp")) | st.sampled_from("\t\n\u200d")))
def test_visible_leaves_ordinary_text_as_it_is(text: str) -> None:
    if not any(hidden(c) for c in text):  # the noncharacters are in no excluded category
        assert visible(text) == text


def test_each_sequence_becomes_its_escape() -> None:
    assert visible(SEQUENCES["csi"]) == "\\x1b[2J\\x1b[31m"
    assert visible(SEQUENCES["osc8"]) == "\\x1b]8;;https://evil.invalid/\\x07click me\\x1b]8;;\\x07"
    assert visible(SEQUENCES["carriage-return"]) == "all good\\x0dFAILED"
    assert visible(SEQUENCES["bidi"]) == "\\u202eevil\\u202c"
    assert visible(SEQUENCES["lone-surrogate"]) == "\\ud83d"
    assert visible(SEQUENCES["tag-char"]) == "\\U000e0001"
    ordinary = "tab\tand\nline, emoji 👩\u200d💻, café, C:\\path"
    assert visible(ordinary) == ordinary


@settings(deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(st.characters(exclude_categories=("Cs",))),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner,
                                                                                  max_size=3), max_leaves=8))
def test_visible_json_is_the_same_document_with_nothing_hidden(value: Any) -> None:
    for indent in (None, 2):
        document = visible_json(json.dumps(value, ensure_ascii=False, indent=indent))
        assert_shown(document)
        assert json.loads(document) == value


def test_visible_json_keeps_a_lone_surrogate_a_json_escape() -> None:
    document = visible_json(json.dumps({"reason": HOSTILE}, ensure_ascii=False))
    assert_shown(document)
    assert json.loads(document) == {"reason": HOSTILE}


# --- JUnit: a real XML parser reads it --------------------------------------------------------------------------


def _cell(cell_id: str, status: str, evidence: str, repro: str, problem: str | None = None) -> CellResult:
    data = result_json(cell_id, status)
    data["grade"]["evidence"] = evidence
    data["repro"] = repro
    if problem is not None:
        data.pop("grade")
        data["infrastructureError"] = {"kind": "RuntimeError", "detail": problem}
    return CellResult.read(data)


def _parsed(cells: list[CellResult]) -> ET.Element:
    text = junit(cells)
    data = text.encode("utf-8")  # as junit.xml is written: strict UTF-8
    return ET.fromstring(data)  # expat: raises on anything that is not well-formed XML


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(evidence=TEXTS, repro=TEXTS, problem=TEXTS, skipped=TEXTS)
def test_junit_is_well_formed_xml_whatever_the_cells_hold(evidence: str, repro: str, problem: str, skipped: str
                                                          ) -> None:
    cells = [_cell("a.base.x", "fail", evidence, repro), _cell("b.base.x", "pass", "", repro, problem=problem),
             _cell("c.base.x", "out_of_scope", skipped, repro)]
    root = _parsed(cells)
    failure = root.find(".//testcase[@name='a.base']/failure")
    assert failure is not None and failure.get("message") == visible(f"fail: {evidence}")
    assert (failure.text or "").strip() == visible(repro).strip()
    error = root.find(".//testcase[@name='b.base']/error")
    assert error is not None and error.get("message") == visible(problem)
    skip = root.find(".//testcase[@name='c.base']/skipped")
    assert skip is not None and skip.get("message") == visible(f"out_of_scope: {skipped}")


def test_junit_of_every_sequence_at_once_and_of_a_trials_output() -> None:
    one, two = (_cell("a.base.x", "fail", HOSTILE, HOSTILE) for _ in range(2))
    two = CellResult.read({**json.loads(two.dumps()), "pins": {**json.loads(two.dumps())["pins"], "trial": 2}})
    root = _parsed([one, two])
    out = root.find(".//testcase/system-out")
    assert out is not None and "\\x1b[2J" in (out.text or "") and "]]>" in (out.text or "")
    assert_shown(junit([one, two]))


# --- the printers ---------------------------------------------------------------------------------------------


def run(*args: str) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run([RUNNER, *args], capture_output=True, text=True, timeout=60, env=environ)


def hostile_cell(directory: Path) -> Path:
    """A cell whose every free text is :data:`HOSTILE`: written as JSON escapes (as json.dumps does), so the lone
    surrogate is there once read back."""
    data = result_json("escalation.baseline.reference", "fail")
    data["grade"]["evidence"] = f"fail; {HOSTILE}"
    data["turn"] = {"status": "escalated", "reasonCode": "escalation_requested", "reason": HOSTILE,
                    "harnessOutcome": "complete", "exitCode": 0}
    directory.mkdir(parents=True)
    (directory / "result.json").write_text(json.dumps(data), encoding="utf-8")
    (directory / "timeline.jsonl").write_text(json.dumps(
        {"t": 1.5, "at": "2026-12-02T00:00:01.500Z", "event": "mcp_call", "tool": HOSTILE, "answer": "ok"}) + "\n")
    return directory


def test_show_prints_a_hostile_cell_with_nothing_obeyed(tmp_path: Path) -> None:
    cell = hostile_cell(tmp_path / "cell")
    proc = run("show", str(cell))
    assert proc.returncode == 0, proc.stderr
    assert_shown(proc.stdout)
    lines = proc.stdout.splitlines()
    assert f"reason                {visible(HOSTILE)}" in lines
    (moment,) = [line for line in lines if line.startswith("1.500  turn  mcp_call  tool=")]
    assert "]8;;https://evil.invalid/" in moment and "\\u202eevil" in moment
    as_json = run("show", str(cell), "--json")
    assert as_json.returncode == 0, as_json.stderr
    assert_shown(as_json.stdout)
    assert json.loads(as_json.stdout)["verdict"]["reason"] == HOSTILE  # the same value for a parser


def test_report_prints_and_writes_a_hostile_cell_with_nothing_obeyed(tmp_path: Path) -> None:
    cell = hostile_cell(tmp_path / "cells" / "escalation.baseline.reference")
    proc = run("report", str(cell.parent), "--junit", str(tmp_path / "junit.xml"),
               "--markdown", str(tmp_path / "report.md"))
    assert proc.returncode == 1, proc.stderr  # a new failure
    assert_shown(proc.stderr)
    assert_shown((tmp_path / "report.md").read_text(encoding="utf-8"))
    ET.parse(tmp_path / "junit.xml")
    to_pipe = run("report", str(cell.parent))
    assert_shown(to_pipe.stdout)
    assert visible(HOSTILE).split()[0] in to_pipe.stdout  # shown, in the failing cell's evidence
    assert_shown(markdown([CellResult.read(json.loads((cell / "result.json").read_text()))]))


def test_a_listing_shows_a_profiles_hostile_words(tmp_path: Path) -> None:
    shipped = shipped_profile("reference")
    text = shipped.read_text(encoding="utf-8").replace("id: reference", "id: zz-hostile")
    text = text.replace("label: Reference", f"label: {json.dumps(HOSTILE)}")
    (tmp_path / "zz-hostile.yaml").write_text(text + f"unavailable: {json.dumps(HOSTILE)}\n", encoding="utf-8")
    for args in (["harnesses", "--profiles-dir", str(tmp_path)], ["harnesses", "--profiles-dir", str(tmp_path),
                                                                  "--json"]):
        proc = run(*args)
        assert proc.returncode == 0, proc.stderr
        assert_shown(proc.stdout)
        assert "zz-hostile" in proc.stdout


@pytest.mark.parametrize("terminal", [False, True], ids=["pipe", "terminal"])
def test_the_exec_summary_shows_every_text_a_cli_controls(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, terminal: bool
) -> None:
    """The reason, the error, the CLI's own outcome and version, the transcript tail and the repro, each hostile,
    through the pipe's layout and the terminal's (rich's table, fitted)."""
    from runner.cli import render
    from runner.conformance.cases import get_case
    from runner.core.outcomes import Escalation, ExecutionResult, ProtocolError
    from runner.core.vocabulary import ExecutionStatus
    from runner.harnesses.profile import find_profile
    from runner.images import ImageRecord
    from runner.model.settings import ModelMode
    from runner.sandbox.interface import Transport
    from runner.turn.drive import Drive
    from runner.turn.model_choice import ModelChoice
    from runner.turn.run_turn import TurnReport, TurnRequest

    monkeypatch.setattr(render, "is_terminal", lambda stderr=False: terminal)
    result = ExecutionResult(
        execution_id="e1", status=ExecutionStatus.ESCALATED, events=[],
        metadata={"harnessOutcome": HOSTILE, "harnessErrorCode": HOSTILE, "callsAfterEscalation": 2,
                  "imageId": "sha256:" + "0" * 64, "cliVersion": HOSTILE, "catalogHash": "sha256:" + "c" * 64,
                  "promptHash": "p" * 64, "transcriptTail": [HOSTILE, *SEQUENCES.values()]},
        escalation=Escalation(reason=HOSTILE, reviewer={}, requested_at="2026-12-02T00:00:00Z"),
        error=ProtocolError(code="cli_failed", message=HOSTILE))
    request = TurnRequest(case=get_case("escalation"), profile=find_profile("reference"),
                          image=ImageRecord(harness="reference", image_id="sha256:" + "0" * 64, tag="t",
                                            recipe_hash="r", base="b", cli_package=None, cli_version=HOSTILE,
                                            version_output=HOSTILE, built_at=""),
                          out_dir=tmp_path, model=ModelChoice(ModelMode.NONE, HOSTILE))
    report = TurnReport(request=request, result=result, record={}, files={"record": str(tmp_path / "record.json")},
                        drive=Drive(container_id="c" * 64, exit_code=0), elapsed=1.5, transport=Transport.MOUNT,
                        mcp={"sessionsInitialized": 1, "calls": 3})
    data = result_json("escalation.baseline.reference", "fail")
    data["grade"]["evidence"] = HOSTILE
    data["repro"] = f"runner exec --out {HOSTILE}"
    render.print_turn_summary(report, CellResult.read(data))
    text = capsys.readouterr().out
    assert_shown(text)
    if terminal:  # rich folds the table to the terminal's width: the escapes are there, cut where it folds
        assert "\\x1b" in text and "\\u202e" in text
    else:  # whole lines: the reason, the error, the outcome, the version, the tail, the repro, each shown in full
        assert text.count("\\x1b]8;;https://evil.invalid/\\x07click me\\x1b]8;;\\x07") >= 6


def test_no_printer_of_the_cli_writes_around_the_one_that_shows() -> None:
    """Every text the CLI prints goes through runner.cli.render (its consoles, tables, ``line`` and
    ``print_json``), which makes it visible: no other module calls ``print``, writes to ``sys.stdout`` or
    ``sys.stderr``, or makes a rich Console or Table of its own."""
    offenders = []
    for path in sorted(CLI.glob("*.py")):
        if path.name == "render.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else (
                    node.func.attr if isinstance(node.func, ast.Attribute) else "")
                if name in ("print", "Console", "Table", "echo", "secho") and isinstance(node.func, ast.Name):
                    offenders.append(f"{path.name}:{node.lineno}: {name}(")
                if isinstance(node.func, ast.Attribute) and name in ("write", "echo", "secho") and isinstance(
                        node.func.value, ast.Attribute) and node.func.value.attr in ("stdout", "stderr"):
                    offenders.append(f"{path.name}:{node.lineno}: sys.{node.func.value.attr}.{name}(")
            if isinstance(node, ast.ImportFrom) and node.module in ("rich.console", "rich.table"):
                offenders.append(f"{path.name}:{node.lineno}: from {node.module} import ...")
    assert offenders == []
