"""End to end: what a real turn cost, at the prices a user gives (issue 31). The model column (runner's own agent loop,
the fastest real turn) on the scripted model, whose answers report usage; a price file names the model id the turn
recorded (``runner-scripted``) and a model no turn used. The cost ``runner exec --json`` prints and the one ``runner
run``'s manifest and Markdown carry are the price file's rule applied to the usage recorded, exactly.

Cost: two turns of the model column (one exec, one run), a few seconds each on warm images.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import docker
import pytest

from runner.core.usage import Usage
from runner.images import ImageRecord, ImageSettings, ensure_image
from runner.matrix.report_figures import money
from tests.support import RUNNER, no_containers_left, runner_exec

pytestmark = [pytest.mark.docker, pytest.mark.timeout(600)]

INPUT, CACHED, OUTPUT, REASONING = 3.0, 0.3, 15.0, 20.0  # per million tokens of runner-scripted, in EUR
PRICES = f"""currency: EUR
models:
  runner-scripted: {{input: {INPUT}, cached_input: {CACHED}, output: {OUTPUT}, reasoning: {REASONING}}}
  a-model-no-turn-used: {{input: 1.0, output: 1.0}}
"""


@pytest.fixture(scope="module")
def model_image(engine: docker.DockerClient, image_settings: ImageSettings) -> ImageRecord:
    return ensure_image(engine, "model", image_settings)


def expected_cost(usage: dict[str, object]) -> float:
    """The price file's rule (docs/prices.md) on the usage the run recorded, computed here from the prices."""
    assert usage["model"] == "runner-scripted", usage
    total = usage["total"]
    assert isinstance(total, dict)
    tokens = Usage.from_json(total)
    assert tokens.input > 0 and tokens.output > 0, tokens  # the scripted model reports usage: something to price
    return ((tokens.input - tokens.cached_input) * INPUT + tokens.cached_input * CACHED
            + (tokens.output - tokens.reasoning) * OUTPUT + tokens.reasoning * REASONING) / 1_000_000


def test_exec_and_run_say_what_a_real_turn_cost_at_the_given_prices(
    tmp_path: Path, engine: docker.DockerClient, model_image: ImageRecord
) -> None:
    prices = tmp_path / "prices.yaml"
    prices.write_text(PRICES, encoding="utf-8")

    report = runner_exec(tmp_path, "--harness", "model", "--case", "escalation", "--model", "scripted",
                         "--prices", str(prices))
    assert report["infrastructureError"] is None and report["grade"]["status"] == "pass", report["grade"]
    expected = expected_cost(report["usage"])
    assert report["cost"] == {"currency": "EUR", "amount": expected, "unpriced": []}
    cell = json.loads(Path(report["files"]["record"]).with_name("result.json").read_text())
    assert cell["usage"] == report["usage"] and cell["turn"]["usage"]["model"] == "runner-scripted"
    no_containers_left(engine, report)

    out = tmp_path / "run"
    ran = subprocess.run([RUNNER, "run", "--harness", "model", "--case", "escalation", "--model", "scripted",
                          "--prices", str(prices), "--out", str(out)],
                         capture_output=True, text=True, timeout=300, env={**os.environ, "TMPDIR": str(tmp_path)})
    assert ran.returncode == 0, ran.stderr
    result = json.loads((out / "escalation.baseline.model" / "result.json").read_text())
    expected = expected_cost(result["usage"])
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["prices"] == {"currency": "EUR", "unpriced": []}
    [harness] = manifest["harnesses"]
    [cell_cost] = [c["cost"] for row in manifest["rows"] for c in row["cells"] if c["harnessId"] == "model"]
    assert harness["cost"] == cell_cost == expected
    text = (out / "report.md").read_text()
    assert f"| `escalation.baseline.model` | {money(expected, 'EUR')} |" in text
    assert f"| {money(expected, 'EUR')} |" in text.split("## Tokens per harness", 1)[1].splitlines()[4]
