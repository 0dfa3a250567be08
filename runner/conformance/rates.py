"""Rates with their uncertainty: how sure a pass rate over trials is, and whether two rates differ beyond noise.
Pure, exact where it can be (integer binomial coefficients, :mod:`math.comb`), no dependency.

A live model's grade moves between trials, so ``2/3 pass`` alone says little. For ``c`` passes in ``n`` trials
(only attempts that count toward a rate: ``runner.conformance.failures`` says which do):

- :func:`pass_at_k`: the chance that at least one of ``k`` trials drawn from the ``n`` passes, by the unbiased
  estimator of Chen et al. 2021 ("Evaluating Large Language Models Trained on Code", the HumanEval paper):
  ``1 - C(n-c, k) / C(n, k)``. It reads "can the harness do it at all, given k tries".
- :func:`pass_hat_k` (``pass^k``): the chance that all ``k`` drawn trials pass, by the estimator of Yao et al.
  2024 ("tau-bench"): ``C(c, k) / C(n, k)``. It reads "does it do it every time"; a gate wants this one.
- :func:`wilson`: the Wilson score interval on ``c / n`` (Wilson 1927), 95 % by default: unlike ``p +- z*se`` it
  stays inside [0, 1] and is honest at 0/n and n/n, where trial counts of a matrix live.
- :func:`fisher_exact`: the two-sided p-value of Fisher's exact test on the 2x2 table (A's passes and failures,
  B's), computed exactly: the tables with A's trials and the pooled passes fixed, each weighted by its
  hypergeometric numerator ``C(passes, x) * C(failures, n_A - x)`` (integers), and the p-value is the share of the
  weight held by the tables no more likely than the one observed. R's ``fisher.test`` and SciPy's ``fisher_exact``
  decide "no more likely" with a relative tolerance of 1e-7 on floating-point probabilities; here the integer
  weights are compared exactly, which agrees with them wherever two tables' probabilities are not within 1e-7 of
  each other without being equal.
- :func:`compare_rates`: whether B's rate differs from A's beyond noise at ``alpha`` (Fisher's test), and which
  way: what a gate before and after a CLI bump reads.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from math import comb, sqrt
from statistics import NormalDist
from typing import Literal

from runner.core.outcomes import JsonValue

CONFIDENCE = 0.95
ALPHA = 0.05


def _counts(passes: int, trials: int) -> None:
    for name, value in (("passes", passes), ("trials", trials)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a count (an int >= 0), got {value!r}")
    if passes > trials:
        raise ValueError(f"{passes} passes in {trials} trials: passes cannot exceed trials")


def _draws(trials: int, k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= trials:
        raise ValueError(f"k must be an int from 1 to the {trials} trials, got {k!r}")


def pass_at_k(passes: int, trials: int, k: int) -> float:
    """The unbiased estimate that at least one of ``k`` trials passes (Chen et al. 2021)."""
    _counts(passes, trials)
    _draws(trials, k)
    return float(1 - Fraction(comb(trials - passes, k), comb(trials, k)))


def pass_hat_k(passes: int, trials: int, k: int) -> float:
    """``pass^k``: the unbiased estimate that all ``k`` trials pass (Yao et al. 2024, tau-bench)."""
    _counts(passes, trials)
    _draws(trials, k)
    return float(Fraction(comb(passes, k), comb(trials, k)))


@dataclass(frozen=True)
class Interval:
    low: float
    high: float
    confidence: float = CONFIDENCE

    def covers(self, p: float) -> bool:
        return self.low <= p <= self.high

    def to_json(self) -> dict[str, JsonValue]:
        return {"low": self.low, "high": self.high, "confidence": self.confidence}


def wilson(passes: int, trials: int, confidence: float = CONFIDENCE) -> Interval:
    """The Wilson score interval on ``passes / trials``; [0, 1] when there are no trials."""
    _counts(passes, trials)
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence!r}")
    if trials == 0:
        return Interval(0.0, 1.0, confidence)
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    p, n, z2 = passes / trials, trials, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    low = 0.0 if passes == 0 else max(0.0, centre - half)
    high = 1.0 if passes == trials else min(1.0, centre + half)
    return Interval(low, high, confidence)


def fisher_exact(a_passes: int, a_trials: int, b_passes: int, b_trials: int) -> float:
    """The two-sided p-value of Fisher's exact test on A's and B's passes and failures (see the module docstring)."""
    _counts(a_passes, a_trials)
    _counts(b_passes, b_trials)
    passes, total = a_passes + b_passes, a_trials + b_trials
    failures = total - passes

    def weight(x: int) -> int:  # tables with x of A's trials passing, the margins fixed
        return comb(passes, x) * comb(failures, a_trials - x)

    observed = weight(a_passes)
    extreme = sum(w for x in range(max(0, a_trials - failures), min(a_trials, passes) + 1)
                  if (w := weight(x)) <= observed)
    return float(Fraction(extreme, comb(total, a_trials)))


@dataclass(frozen=True)
class Rate:
    """``passes`` of ``trials`` (the attempts that count toward a rate)."""

    passes: int
    trials: int

    def __post_init__(self) -> None:
        _counts(self.passes, self.trials)

    @property
    def value(self) -> float | None:
        """The pass rate; None with no trials."""
        return self.passes / self.trials if self.trials else None

    def interval(self, confidence: float = CONFIDENCE) -> Interval:
        return wilson(self.passes, self.trials, confidence)

    @property
    def shown(self) -> str:
        """``2/3`` with its interval: ``2/3 (95% CI 21-94%)``."""
        if not self.trials:
            return "0/0"
        ci = self.interval()
        return f"{self.passes}/{self.trials} ({ci.confidence:.0%} CI {ci.low * 100:.0f}-{ci.high:.0%})"

    def summary(self, ks: tuple[int, ...] | None = None) -> RateSummary:
        """The rate with its interval, ``pass@k`` and ``pass^k`` for each k (default: 1 and every trial)."""
        if ks is None:
            ks = tuple(sorted({1, self.trials})) if self.trials else ()
        return RateSummary(self, self.interval(), {k: pass_at_k(self.passes, self.trials, k) for k in ks},
                           {k: pass_hat_k(self.passes, self.trials, k) for k in ks})


@dataclass(frozen=True)
class RateSummary:
    """A rate as a report shows it."""

    rate: Rate
    interval: Interval
    pass_at: dict[int, float]
    pass_hat: dict[int, float]

    def to_json(self) -> dict[str, JsonValue]:
        return {
            "passes": self.rate.passes, "trials": self.rate.trials, "rate": self.rate.value,
            "wilson": self.interval.to_json(),
            "passAtK": {str(k): v for k, v in self.pass_at.items()},
            "passHatK": {str(k): v for k, v in self.pass_hat.items()},
        }


Direction = Literal["higher", "lower", "same"]


@dataclass(frozen=True)
class Comparison:
    """B against A: Fisher's exact p-value, and whether B differs beyond noise at ``alpha`` (and which way)."""

    a: Rate
    b: Rate
    p_value: float
    alpha: float

    @property
    def differs(self) -> bool:
        return self.p_value < self.alpha

    @property
    def direction(self) -> Direction:
        """Which way B's rate lies from A's, beyond noise; ``same`` when within it."""
        if not self.differs or self.a.value is None or self.b.value is None:
            return "same"
        return "higher" if self.b.value > self.a.value else "lower"

    @property
    def sentence(self) -> str:
        verdict = f"{self.direction} beyond noise" if self.differs else "within noise"
        return (f"{self.a.shown} -> {self.b.shown}: {verdict} "
                f"(Fisher's exact p = {self.p_value:.3g}, alpha {self.alpha:g})")

    def to_json(self) -> dict[str, JsonValue]:
        return {"a": {"passes": self.a.passes, "trials": self.a.trials},
                "b": {"passes": self.b.passes, "trials": self.b.trials},
                "pValue": self.p_value, "alpha": self.alpha, "differs": self.differs, "direction": self.direction}


def compare_rates(a: Rate, b: Rate, alpha: float = ALPHA) -> Comparison:
    """Whether B's pass rate differs from A's beyond noise (Fisher's exact test, two-sided, at ``alpha``)."""
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be between 0 and 1, got {alpha!r}")
    return Comparison(a, b, fisher_exact(a.passes, a.trials, b.passes, b.trials), alpha)
