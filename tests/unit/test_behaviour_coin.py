"""The seeded coin (``--behaviour coin:p=P,seed=N``): a behaviour that passes with a known probability, so that a
rate, its interval and a comparison of two runs can be checked against a known truth. Its draws are a fixed function
of the seed, the cell and the trial: the same on every rerun, spread as a fair coin of bias ``p`` over seeds (checked
against an exact binomial bound), and carried by the pins so that ``runner repro`` of a trial plays its side again."""

from __future__ import annotations

import dataclasses
import json
from fractions import Fraction
from math import comb
from pathlib import Path

import anyio
import pytest
from typer.testing import CliRunner

from runner.cli import Exit, app
from runner.conformance.behaviours import (
    COIN_HEADS,
    COIN_TAILS,
    Behaviour,
    Coin,
    CoinSpecError,
    parse_behaviour,
    tossed,
)
from runner.conformance.cases import get_case
from runner.harnesses.profile import find_profile
from runner.matrix.artifact import RESULT, load_result
from runner.matrix.cells import MatrixCell
from runner.matrix.plan import CellOptions, CellPlan, plan_cells, with_trials
from runner.matrix.repro import repro_plan, unmatched_pins
from runner.matrix.run_cell import run_cell
from runner.matrix.series import Group, findings
from runner.turn.settings import Host, SettingError

CELL = "escalation.baseline.reference"


@pytest.mark.parametrize(("text", "coin"), [
    ("coin:p=0.7,seed=3", Coin(0.7, 3)),
    ("coin:0.7", Coin(0.7, 0)),
    ("coin:0.25,seed=12", Coin(0.25, 12)),
    ("coin:seed=1,p=1", Coin(1.0, 1)),
    ("coin:p=0", Coin(0.0, 0)),
])
def test_a_coin_parses_and_spells_itself_back_canonically(text: str, coin: Coin) -> None:
    parsed = parse_behaviour(text)
    assert parsed == coin
    assert isinstance(parsed, Coin) and parse_behaviour(parsed.value) == parsed  # the pin reads back exactly
    assert parsed.value == f"coin:p={coin.p!r},seed={coin.seed}"


def test_a_probability_reads_back_to_the_last_bit() -> None:
    coin = Coin(0.1234567890123, 7)
    assert parse_behaviour(coin.value) == coin


@pytest.mark.parametrize(("text", "said"), [
    ("coin:", "the coin needs its probability p"),
    ("coin:seed=3", "the coin needs its probability p"),
    ("coin:p=1.5", "p must be a probability from 0 to 1, not '1.5'"),
    ("coin:p=-0.1", "p must be a probability from 0 to 1"),
    ("coin:p=nan", "p must be a probability from 0 to 1, not 'nan'"),
    ("coin:p=often", "p must be a probability from 0 to 1, not 'often'"),
    ("coin:p=0.5,seed=-1", "seed must be an integer >= 0, not '-1'"),
    ("coin:p=0.5,seed=2.5", "seed must be an integer >= 0, not '2.5'"),
    ("coin:p=0.5,seed=", "seed must be an integer >= 0, not ''"),
    ("coin:p=0.5,bias=2", "unknown coin parameter 'bias'"),
    ("coin:p=0.5,p=0.6", "p given twice"),
    ("coin:0.5,0.6", "unknown coin parameter '0.6'"),
])
def test_a_coin_that_is_not_one_is_refused_saying_why(text: str, said: str) -> None:
    with pytest.raises(CoinSpecError) as raised:
        parse_behaviour(text)
    assert said in str(raised.value) and "coin:p=P[,seed=N]" in str(raised.value)


def test_the_option_names_itself_in_the_error_and_the_command_exits_as_a_usage_error() -> None:
    with pytest.raises(SettingError, match=r"^--behaviour 'coin:p=2'"):
        CellOptions.parse({"behaviour": "coin:p=2"}, run_id="unit", host=Host())
    result = CliRunner().invoke(app, ["exec", "--harness", "reference", "--json", "--behaviour", "coin:p=2"])
    assert result.exit_code == Exit.USAGE
    assert "--behaviour 'coin:p=2': p must be a probability" in json.loads(result.stdout)["error"]["message"]
    unknown = CliRunner().invoke(app, ["exec", "--harness", "reference", "--json", "--behaviour", "coins"])
    assert unknown.exit_code == Exit.UNKNOWN and "coin:p=P[,seed=N]" in json.loads(unknown.stdout)["error"]["message"]


def test_a_draw_is_a_fixed_function_of_seed_cell_and_trial() -> None:
    coin = Coin(0.5, 3)
    draws = [coin.draw(CELL, k) for k in range(1, 51)]
    assert draws == [Coin(0.5, 3).draw(CELL, k) for k in range(1, 51)]  # a rerun draws the same
    assert all(0 <= d < 1 for d in draws) and len(set(draws)) == 50
    assert draws != [Coin(0.5, 4).draw(CELL, k) for k in range(1, 51)]  # another seed, other draws
    assert draws != [coin.draw("escalation.baseline.model", k) for k in range(1, 51)]  # each cell its own coin
    # the draw is pinned down: a change to the hash would silently change every recorded coin run's sides
    assert coin.draw(CELL, 1) == int.from_bytes(
        __import__("hashlib").sha256(f"3/{CELL}/1".encode()).digest()[:8], "big") / 2**64


def test_a_side_is_heads_below_p_and_the_extremes_never_move() -> None:
    for k in range(1, 41):
        assert Coin(1.0, 9).side(CELL, k) is COIN_HEADS is Behaviour.COOPERATIVE
        assert Coin(0.0, 9).side(CELL, k) is COIN_TAILS is Behaviour.NEVER_ASK
        coin = Coin(0.6, 9)
        assert coin.side(CELL, k) is (COIN_HEADS if coin.draw(CELL, k) < 0.6 else COIN_TAILS)
    # a higher p on the same seed keeps every head of a lower one: runs of one seed differ only by p
    low, high = Coin(0.2, 5), Coin(0.8, 5)
    assert all(high.side(CELL, k) is COIN_HEADS for k in range(1, 200) if low.side(CELL, k) is COIN_HEADS)
    assert low.passes(CELL, 200) <= high.passes(CELL, 200)


def binomial_bounds(n: int, p: Fraction, tail: Fraction) -> tuple[int, int]:
    """The smallest ``lo`` and largest ``hi`` with P(X < lo) <= tail and P(X > hi) <= tail, X ~ Binomial(n, p),
    computed exactly in fractions."""
    mass = [comb(n, x) * p**x * (1 - p) ** (n - x) for x in range(n + 1)]
    lo = hi = 0
    below = Fraction(0)
    while below + mass[lo] <= tail:
        below += mass[lo]
        lo += 1
    above, hi = Fraction(0), n
    while above + mass[hi] <= tail:
        above += mass[hi]
        hi -= 1
    return lo, hi


@pytest.mark.parametrize("p", [Fraction(1, 10), Fraction(1, 2), Fraction(9, 10)])
def test_over_many_seeds_a_trial_lands_heads_as_often_as_p_says(p: Fraction) -> None:
    """Over 2000 seeds, trial 1's heads are within the exact binomial bounds of probability 1 - 2e-6; the draws
    are fixed, so this is a fact about the coin's hash, not a chance. The same across trials of one seed."""
    n, tail = 2000, Fraction(1, 10**6)
    lo, hi = binomial_bounds(n, p, tail)
    assert lo < n * p < hi
    over_seeds = sum(Coin(float(p), seed).side(CELL, 1) is COIN_HEADS for seed in range(n))
    assert lo <= over_seeds <= hi
    assert lo <= Coin(float(p), 11).passes(CELL, n) <= hi


def plans(behaviour: str, trials: int) -> list[CellPlan]:
    case = get_case("escalation")
    cell = MatrixCell(case, case.condition_for(None), find_profile("reference"))
    options = CellOptions.parse({"behaviour": behaviour}, run_id="unit", host=Host(), run_unsupported=True)
    return with_trials(plan_cells([cell], options), trials)


def test_each_trial_of_a_plan_plays_its_side_and_keeps_the_coin_as_its_pin() -> None:
    coin = Coin(0.5, 2)
    planned = plans(coin.value, 12)
    assert [p.turn_settings.behaviour for p in planned] == [coin.side(CELL, k) for k in range(1, 13)]
    assert {p.turn_settings.behaviour for p in planned} == {COIN_HEADS, COIN_TAILS}  # both sides in 12
    for plan in planned:
        assert plan.options.behaviour == coin and plan.planned_pins().behaviour == coin.value
        # repro.sh runs one turn: it names the side the trial landed on
        assert f"--behaviour {plan.turn_settings.behaviour.value}" in plan.repro
    [plain] = plans("persistent", 1)
    assert plain.turn_settings is plain.options and tossed(Behaviour.PERSISTENT, CELL, 3) is Behaviour.PERSISTENT


def test_runner_repro_of_a_trial_plays_the_side_that_trial_landed_on(tmp_path: Path) -> None:
    """A trial's pins carry the coin and the trial's number: what the rerun needs to toss the same side. (The
    column is made unavailable so that the cell is written without a turn; its pins are the planned ones.)"""
    coin = Coin(0.5, 2)
    planned = plans(coin.value, 12)
    tails = next(p for p in planned if p.turn_settings.behaviour is COIN_TAILS and p.trial > 1)
    heads = next(p for p in planned if p.turn_settings.behaviour is COIN_HEADS and p.trial > 1)
    for plan in (tails, heads):
        profile = plan.cell.profile.model_copy(update={"unavailable": "unit: no turn"})
        plan = dataclasses.replace(plan, cell=dataclasses.replace(plan.cell, profile=profile))
        directory = tmp_path / f"trial-{plan.trial}"
        anyio.run(run_cell, None, plan, directory)
        recorded = load_result(directory / RESULT)
        assert recorded.pins.behaviour == coin.value and recorded.trial == plan.trial
        rerun = repro_plan(recorded, directory, "unit", Host())
        assert rerun.trial == plan.trial and rerun.turn_settings.behaviour is plan.turn_settings.behaviour
        assert unmatched_pins(recorded.pins, rerun.planned_pins()) == []


def test_a_coins_differing_trials_are_no_finding_of_nondeterminism(tmp_path: Path) -> None:
    """A scripted cell whose runs differ is a finding (a script is deterministic); a coin's are meant to."""
    golden = Path(__file__).resolve().parents[1] / "golden/runs/matrix/escalation.baseline.reference/result.json"
    recorded = load_result(golden)
    failed = recorded.model_copy(update={"grade": recorded.grade.model_copy(update={"status": "fail"})})
    assert recorded.pins.model_mode in ("scripted", "none")
    plain = Group(shared={}, series={CELL: [recorded, failed]})
    assert findings([plain]) and "runs of one script differ" in findings([plain])[0]
    coin_pins = recorded.pins.model_copy(update={"behaviour": Coin(0.5, 1).value})
    tossed_runs = [run.model_copy(update={"pins": coin_pins}) for run in (recorded, failed)]
    assert findings([Group(shared={}, series={CELL: tossed_runs})]) == []
