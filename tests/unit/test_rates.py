"""Rates with their uncertainty, against known values.

Where each known value comes from (reproduced on 2026-12-06 in a scratch virtualenv with SciPy 1.17.1, statsmodels
0.15.0 and NumPy; none of them is a dependency of runner):

- ``pass@k``: the numerically stable form of the estimator in openai/human-eval
  (``human_eval/evaluation.py``, ``estimate_pass_at_k``: ``1 - prod(1 - k / arange(n - c + 1, n + 1))``) with NumPy;
- ``pass^k``: tau-bench's definition ``C(c, k) / C(n, k)``, worked by hand (small enough to check on paper);
- Wilson: ``scipy.stats.binomtest(c, n).proportion_ci(0.95, method="wilson")``, equal to statsmodels'
  ``proportion_confint(c, n, 0.05, method="wilson")`` to 1e-15; 2/3 also matches R's
  ``binom::binom.confint(2, 3, methods="wilson")`` (0.2077, 0.9385);
- Fisher: ``scipy.stats.fisher_exact(table, alternative="two-sided")``; the tea-tasting table is the example of
  R's ``?fisher.test`` (``fisher.test(TeaTasting)``, p-value = 0.4857).
"""

from __future__ import annotations

import random
from math import comb, sqrt

import pytest

from runner.conformance.rates import (
    Rate,
    compare_rates,
    fisher_exact,
    pass_at_k,
    pass_hat_k,
    wilson,
)


@pytest.mark.parametrize(
    ("n", "c", "k", "expected"),
    [(10, 3, 1, 0.3), (10, 3, 5, 0.9166666666666666), (200, 14, 10, 0.5244200390765632), (5, 0, 3, 0.0),
     (5, 5, 2, 1.0), (20, 2, 10, 0.763157894736842)],
)
def test_pass_at_k_against_human_evals_estimator(n: int, c: int, k: int, expected: float) -> None:
    assert pass_at_k(c, n, k) == pytest.approx(expected, rel=1e-12, abs=1e-15)


def test_pass_hat_k_is_the_chance_that_every_drawn_trial_passes() -> None:
    assert pass_hat_k(2, 4, 2) == pytest.approx(1 / 6)  # C(2,2) / C(4,2)
    assert pass_hat_k(3, 5, 3) == pytest.approx(1 / 10)  # C(3,3) / C(5,3)
    assert pass_hat_k(5, 5, 5) == 1.0 and pass_hat_k(4, 5, 5) == 0.0
    assert pass_hat_k(7, 10, 1) == pytest.approx(0.7) == pass_at_k(7, 10, 1)  # at k = 1 both are the rate


@pytest.mark.parametrize(
    ("c", "n", "low", "high"),
    [(2, 3, 0.20765960080204782, 0.9385080552796038), (0, 10, 0.0, 0.27753279986288926),
     (10, 10, 0.7224672001371109, 1.0), (7, 20, 0.1811918241010821, 0.5671457233147637),
     (1, 1, 0.20654931437723745, 1.0), (29, 30, 0.8332960900859083, 0.9940914096183875),
     (50, 100, 0.4038315303659956, 0.5961684696340044)],
)
def test_wilson_against_scipy_and_statsmodels(c: int, n: int, low: float, high: float) -> None:
    interval = wilson(c, n)
    assert (interval.low, interval.high) == (pytest.approx(low, abs=1e-12), pytest.approx(high, abs=1e-12))
    assert interval.confidence == 0.95


def test_wilson_at_the_edges() -> None:
    assert wilson(0, 0).to_json() == {"low": 0.0, "high": 1.0, "confidence": 0.95}
    assert wilson(3, 3).high == 1.0 and wilson(0, 3).low == 0.0
    narrow, wide = wilson(5, 10, 0.8), wilson(5, 10, 0.99)
    assert wide.low < narrow.low < 0.5 < narrow.high < wide.high


@pytest.mark.parametrize(
    ("table", "expected"),
    [([[3, 1], [1, 3]], 0.48571428571428565), ([[10, 0], [0, 10]], 1.082508822446903e-05),
     ([[3, 0], [0, 3]], 0.1), ([[8, 2], [1, 5]], 0.034965034965034975),
     ([[10, 10], [2, 18]], 0.013814147851967652), ([[19, 1], [12, 8]], 0.019656019656019656),
     ([[5, 5], [5, 5]], 1.0), ([[0, 3], [0, 3]], 1.0), ([[20, 10], [10, 20]], 0.01938318826178997),
     ([[29, 1], [20, 10]], 0.005579091919870972)],
)
def test_fisher_exact_against_scipy(table: list[list[int]], expected: float) -> None:
    (a_pass, a_fail), (b_pass, b_fail) = table
    p = fisher_exact(a_pass, a_pass + a_fail, b_pass, b_pass + b_fail)
    assert p == pytest.approx(expected, rel=1e-12)
    assert fisher_exact(b_pass, b_pass + b_fail, a_pass, a_pass + a_fail) == pytest.approx(p, rel=1e-12)  # symmetric


def test_fisher_exact_with_no_trials_on_a_side_finds_nothing() -> None:
    assert fisher_exact(0, 0, 3, 5) == 1.0 and fisher_exact(0, 0, 0, 0) == 1.0


def test_a_real_drop_is_told_from_noise() -> None:
    before, after = Rate(29, 30), Rate(20, 30)
    drop = compare_rates(before, after)
    assert drop.differs and drop.direction == "lower" and drop.p_value == pytest.approx(0.005579091919870972)
    assert drop.sentence.startswith("29/30 (95% CI 83-99%) -> 20/30 (95% CI 49-81%): lower beyond noise")
    noise = compare_rates(Rate(2, 3), Rate(1, 3))  # "2/3 then 1/3" is what trials print today
    assert not noise.differs and noise.direction == "same" and "within noise" in noise.sentence
    rise = compare_rates(Rate(2, 10), Rate(8, 10), alpha=0.05)
    assert rise.direction == "higher" and rise.to_json()["differs"] is True
    assert not compare_rates(Rate(2, 10), Rate(8, 10), alpha=0.01).differs  # p = 0.023 is noise at 1 %


def test_a_rate_summary_as_reports_show_it() -> None:
    summary = Rate(2, 3).summary()
    body = summary.to_json()
    assert body["passes"] == 2 and body["trials"] == 3 and body["rate"] == pytest.approx(2 / 3)
    assert body["passAtK"] == {"1": pytest.approx(2 / 3), "3": 1.0}
    assert body["passHatK"] == {"1": pytest.approx(2 / 3), "3": 0.0}
    assert Rate(0, 0).summary().to_json()["passAtK"] == {} and Rate(0, 0).value is None
    assert Rate(0, 0).shown == "0/0"


@pytest.mark.parametrize(
    "call",
    [lambda: pass_at_k(4, 3, 1), lambda: pass_at_k(1, 3, 0), lambda: pass_at_k(1, 3, 4), lambda: pass_hat_k(-1, 3, 1),
     lambda: wilson(1, 2, 1.0), lambda: Rate(True, 2), lambda: compare_rates(Rate(1, 2), Rate(1, 2), alpha=0)],
)
def test_impossible_counts_are_refused(call: object) -> None:
    with pytest.raises(ValueError):
        call()  # type: ignore[operator]


@pytest.mark.parametrize(("p", "n"), [(0.2, 50), (0.35, 30), (0.75, 40)])
def test_the_wilson_interval_covers_a_known_p_in_about_95_percent_of_samples(p: float, n: int) -> None:
    """Seeded: 4000 samples of n trials of a coin that passes with probability p. Wilson's coverage oscillates
    around its nominal level with n and p (Brown, Cai and DasGupta 2001, "Interval Estimation for a Binomial
    Proportion"): its exact coverage here (the binomial probability of every count whose interval holds p) is
    0.951, 0.947 and 0.958, and the samples land within four standard errors of it."""
    exact = sum(comb(n, c) * p**c * (1 - p) ** (n - c) for c in range(n + 1) if wilson(c, n).covers(p))
    assert 0.94 <= exact <= 0.96
    rng = random.Random(20261206)
    samples = 4000
    covered = sum(wilson(sum(rng.random() < p for _ in range(n)), n).covers(p) for _ in range(samples)) / samples
    assert abs(covered - exact) <= 4 * sqrt(exact * (1 - exact) / samples), (covered, exact)
    assert 0.93 <= covered <= 0.97
