"""Rates with their uncertainty, read from the product's own outputs on a behaviour that passes with a known
probability: the seeded coin (``--behaviour coin:p=P,seed=N``), in the real engine, over real MCP, on two columns
(``reference``, which plays its script itself, and ``model``, runner's own CLI talking to the scripted model).

The coin is seeded, so every count below is a fact computed from the seed before the run (and checked against
:meth:`runner.conformance.behaviours.Coin.passes`), not luck: run A (p 0.9) passes 7 of 8 trials on each column and
its 95% Wilson interval covers 0.9; run B (p 0.1, the same seed) passes 0 and 1 of 8, and ``runner report --compare``
reads it as a drop beyond noise (exit 1); run C (p 0.9, another seed) passes 7 of 8 again, on other trials, and
the comparison reads no change (exit 0). An expected-failures file marks both cells unstable, as a user calibrating
a gate on a coin would: the gate then passes on every run, and only the comparison decides the exits.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import docker
import pytest

from runner.conformance.behaviours import COIN_HEADS, Coin
from runner.conformance.rates import wilson
from runner.images import ImageRecord, ensure_image
from runner.images.settings import ImageSettings
from tests.support import RUNNER

pytestmark = [pytest.mark.docker, pytest.mark.timeout(900)]

TRIALS = 8
CELLS = ("escalation.baseline.reference", "escalation.baseline.model")
HIGH, LOW = 0.9, 0.1
SEED, OTHER_SEED = 4, 5
# computed from the seeds (Coin.passes), per cell: what each run's counts must be
PASSES = {
    (HIGH, SEED): {"escalation.baseline.reference": 7, "escalation.baseline.model": 7},
    (LOW, SEED): {"escalation.baseline.reference": 0, "escalation.baseline.model": 1},
    (HIGH, OTHER_SEED): {"escalation.baseline.reference": 7, "escalation.baseline.model": 7},
}
EXPECTED = """\
- cell: escalation.baseline.reference
  unstable: true
  reason: a seeded coin decides each trial (--behaviour coin)
- cell: escalation.baseline.model
  unstable: true
  reason: a seeded coin decides each trial (--behaviour coin)
"""


@pytest.fixture(scope="module")
def model_image(engine: docker.DockerClient, image_settings: ImageSettings) -> ImageRecord:
    return ensure_image(engine, "model", image_settings)


def runner(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([RUNNER, *args], capture_output=True, text=True, env=dict(os.environ), timeout=800)


def coin_run(out: Path, p: float, seed: int, expected: Path) -> Path:
    """``runner run --trials 8 -j 2`` of the escalation row on both columns, the coin at ``p`` and ``seed``."""
    ran = runner("run", "--harness", "reference,model", "--case", "escalation", "--trials", str(TRIALS), "-j", "2",
                 "--model", "scripted", "--behaviour", f"coin:p={p},seed={seed}", "--expected-failures", str(expected),
                 "--out", str(out))
    assert ran.returncode == 0, ran.stdout + ran.stderr  # the cells are marked unstable: the gate passes
    return out


def trial_statuses(out: Path, cell: str) -> list[str]:
    found = {}
    for result in (out / cell).glob("**/result.json"):
        recorded = json.loads(result.read_text())
        found[recorded["pins"].get("trial", 1)] = recorded["grade"]["status"]
    return [found[k] for k in range(1, TRIALS + 1)]


def cell_rates(out: Path) -> dict[str, dict[str, object]]:
    manifest = json.loads((out / "manifest.json").read_text())
    return {f"{c['caseId']}.{c['conditionId']}.{c['harnessId']}": c["rate"]
            for row in manifest["rows"] for c in row["cells"]}


def test_the_seeded_coin_computes_the_counts_this_test_asserts() -> None:
    """The table above is the coin's, not typed by hope (no engine needed for this one)."""
    for (p, seed), passes in PASSES.items():
        assert {cell: Coin(p, seed).passes(cell, TRIALS) for cell in CELLS} == passes


def test_a_coin_run_shows_its_rate_interval_and_a_drop_beyond_noise_but_not_a_reseeding(
    tmp_path: Path, reference_image: ImageRecord, model_image: ImageRecord
) -> None:
    expected = tmp_path / "expected-failures.yml"
    expected.write_text(EXPECTED)
    a = coin_run(tmp_path / "a", HIGH, SEED, expected)

    # each trial played the side the seed gave it, and was graded for it: asked (pass), or never asked (the row
    # not exercised, a strict failure that counts toward the rate)
    for cell in CELLS:
        coin = Coin(HIGH, SEED)
        sides = ["pass" if coin.side(cell, k) is COIN_HEADS else "not_exercised" for k in range(1, TRIALS + 1)]
        assert trial_statuses(a, cell) == sides
    # the manifest: the exact count, and a 95% Wilson interval that covers p
    rates = cell_rates(a)
    for cell in CELLS:
        rate = rates[cell]
        assert (rate["passes"], rate["trials"]) == (PASSES[HIGH, SEED][cell], TRIALS)
        interval = rate["wilson"]
        assert isinstance(interval, dict)
        assert interval["confidence"] == 0.95 and interval["low"] <= HIGH <= interval["high"]
        assert interval == wilson(PASSES[HIGH, SEED][cell], TRIALS).to_json()
    # the Markdown report says the same per harness, the interval in whole percent
    report = (a / "report.md").read_text()
    for harness in ("reference", "model"):
        assert f"| {harness} | 7/8 (95% CI 53-98%) |" in report, report

    # a trial on the coin's other side reruns alone on that side, its pins matching
    tails = next(k for k in range(1, TRIALS + 1) if Coin(HIGH, SEED).side(CELLS[0], k) is not COIN_HEADS)
    trial = a / CELLS[0] / (f"trial-{tails}" if tails > 1 else "")
    again = runner("repro", str(trial), "--out", str(tmp_path / "repro"))
    assert again.returncode == 0, again.stdout + again.stderr  # the same grade, no pin unmatched
    rerun = json.loads((tmp_path / "repro" / "result.json").read_text())
    assert rerun["grade"]["status"] == "not_exercised" and rerun["pins"]["behaviour"] == f"coin:p={HIGH},seed={SEED}"
    assert rerun["pins"].get("trial", 1) == tails

    # run B: a much lower p is a drop beyond noise, per harness and per cell
    b = coin_run(tmp_path / "b", LOW, SEED, expected)
    assert {cell: rate["passes"] for cell, rate in cell_rates(b).items()} == PASSES[LOW, SEED]
    dropped = runner("report", str(b), "--compare", str(a), "--expected-failures", str(expected), "--json")
    assert dropped.returncode == 1, dropped.stdout + dropped.stderr
    assert sorted(json.loads(dropped.stdout)["dropped"]) == sorted(["reference", "model", *CELLS])

    # run C: the same p, another seed: other trials fail, the counts move within noise, no change is read
    c = coin_run(tmp_path / "c", HIGH, OTHER_SEED, expected)
    assert {cell: rate["passes"] for cell, rate in cell_rates(c).items()} == PASSES[HIGH, OTHER_SEED]
    assert trial_statuses(c, CELLS[0]) != trial_statuses(a, CELLS[0])
    same = runner("report", str(c), "--compare", str(a), "--expected-failures", str(expected), "--json")
    assert same.returncode == 0, same.stdout + same.stderr
    found = json.loads(same.stdout)
    assert found["dropped"] == [] and found["differs"] is False
