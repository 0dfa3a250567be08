"""A hand-built run directory for the HTML report's unit tests: real results (the golden run of two trials, and an
unavailable column), one trial turned into a failure, and the turn files a real cell writes (a timeline, logs)
with hostile text in them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from runner.conformance.judge import Grade
from runner.matrix.artifact import RESULT, load_result, write_cell

GOLDEN = Path(__file__).resolve().parent / "golden" / "runs"
HOSTILE = '</script><script>window.owned = 1</script><img src=x onerror="window.owned = 2"> & <!-- </style>'
FAILING = "escalation.baseline.model"


def event(t: float, name: str, **fields: object) -> dict[str, object]:
    return {"t": t, "at": f"2026-12-02T07:00:{t:06.3f}Z", "event": name, **fields}


# a turn that asked, was refused three times after the ask, and exited by itself: written out of order on purpose
TIMELINE = [
    event(0.0, "turn_started"),
    event(0.21, "container_created"),
    event(0.35, "container_started"),
    event(0.9, "cli_first_output"),
    event(1.0, "model_request", n=1),
    event(1.1, "mcp_call", tool="files.read", answer="ok", afterAsk=False),
    event(1.3, "model_request", n=2),
    event(1.4, "mcp_call", tool="sharedos.escalate", answer="ok", afterAsk=False),
    event(1.401, "ask_answered", tool="sharedos.escalate"),
    *[e for k in range(3) for e in (
        event(1.6 + k * 0.2, "mcp_call", tool="files.read", answer="escalation_pending", afterAsk=True),
        event(1.6 + k * 0.2 + 0.001, "refused_after_ask", tool="files.read", code="escalation_pending"),
    )],
    event(2.4, "cli_exited", exitCode=0, by="itself"),
    event(2.7, "teardown_done"),
    event(2.75, "turn_ended"),
]


def build_tree(root: Path) -> Path:
    """``root/run``: reference and model (two trials each, escalation and hidden-tool) and amp (unavailable); trial 2
    of the model's escalation cell fails, with a timeline, logs holding :data:`HOSTILE` text, and the usual files."""
    run = root / "run"
    shutil.copytree(GOLDEN / "trials", run, ignore=shutil.ignore_patterns("*.md", "*.xml", "manifest.json"))
    for name in ("escalation.baseline.amp", "hidden-tool.baseline.amp"):
        shutil.copytree(GOLDEN / "matrix" / name, run / name)
    failing = run / FAILING / "trial-2"
    result = load_result(failing / RESULT)
    assert result.grade is not None and result.turn is not None
    evidence = f"fail; the turn was not latched {HOSTILE}"
    grade = result.grade.model_copy(update={"status": Grade.FAIL, "evidence": evidence})
    turn = result.turn.model_copy(update={"calls_after_escalation": 3})
    write_cell(failing, result.model_copy(update={"grade": grade, "turns": (turn,)}))
    for directory in (run / FAILING, failing):
        lines = [json.dumps(e) for e in reversed(TIMELINE)]  # the file's order is not the order of events
        (directory / "timeline.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
        (directory / "stdout.log").write_text(
            "".join(f'{{"type":"line","n":{n}}}\n' for n in range(200)) + HOSTILE + "\n", encoding="utf-8")
        (directory / "stderr.log").write_text("warning: something\n" + HOSTILE + "\n", encoding="utf-8")
        (directory / "mcp-events.jsonl").write_text("{}\n", encoding="utf-8")
        (directory / "model-exchanges.jsonl").write_text("{}\n", encoding="utf-8")
    return run
