"""The figures a result carries besides its grade, as every reader shows them: ``runner exec``'s summary, ``runner
show``, the Markdown and HTML reports, the manifest. One place, so that a token count or a rate reads the same
everywhere.

- **tokens**: ``in 10,241 (cached 3,918) · out 121 (reasoning 0)``, and where side requests (a title, a summary,
  a sub-agent without the catalogue's tools) took any, their share of the total; a total some answers reported no
  usage for says so (it is a lower bound);
- **tool policy**: the mode, the inventory, and what the CLI's model can reach besides the catalogue;
- **rates** (:func:`pass_rate`): a cell's or a harness's runs that count toward a rate (an attempt the
  infrastructure ended does not: :mod:`runner.conformance.failures`), with the Wilson interval and, with more
  than one trial, ``pass@k`` and ``pass^k`` (:mod:`runner.conformance.rates`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable

from runner.conformance.failures import Cause
from runner.conformance.rates import Rate, RateSummary
from runner.matrix.result import CellResult, FailureRecord, ToolPolicyRecord, UsageRecord, summed_usage

RATED = frozenset({"pass", "fail", "not_exercised", "infrastructure_error"})  # what a run can come to and be rated


def tokens(usage: UsageRecord | None) -> str:
    """One line of a usage (``-`` for none)."""
    if usage is None:
        return "-"
    total, side = usage.total, usage.side
    text = (f"in {total.input:,} (cached {total.cached_input:,}) · out {total.output:,} "
            f"(reasoning {total.reasoning:,})")
    side_total = side.input + side.output
    if side_total:
        share = side_total / (total.input + total.output)
        text += f" · side requests {side_total:,} ({share:.0%})"
    if usage.unreported:
        text += f" · {usage.unreported} of {usage.answers} answers reported none (a lower bound)"
    return text


def short_tokens(usage: UsageRecord | None) -> str:
    """``10.2k in / 121 out`` for a table cell (``-`` for none)."""
    if usage is None:
        return "-"
    return f"{_k(usage.total.input)} in / {_k(usage.total.output)} out"


def _k(count: int) -> str:
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    if count >= 1_000:
        return f"{count / 1_000:.1f}k"
    return str(count)


def policy(record: ToolPolicyRecord | None) -> str:
    """The tool policy on one line: mode, inventory, and what besides the catalogue (``-`` for none measured)."""
    if record is None:
        return "-"
    text = f"{record.mode} (inventory {record.inventory})"
    if record.harness_local:
        text += f"; the CLI's own: {', '.join(record.harness_local)}"
    if record.external_direct:
        text += f"; outside the broker: {', '.join(record.external_direct)}"
    return text


def total_usage(runs: Iterable[CellResult]) -> UsageRecord | None:
    """Every run's usage, summed (an attempt before the last included: its tokens were spent too)."""
    records: list[UsageRecord | None] = []
    for run in runs:
        records.append(run.usage)
        records += [a.usage for a in run.cell_attempts[:-1]]
    return summed_usage(records)


def counts_toward_rate(run: CellResult) -> bool:
    """Whether a run is a trial of its rate: graded pass or fail, or a failure whose kind counts (the CLI's
    conduct, the deadline); never an attempt the infrastructure ended, a declared or a not-run cell."""
    if run.status not in RATED:
        return False
    why = run.why
    return why.counts if why is not None else run.status != "infrastructure_error"


def pass_rate(runs: Iterable[CellResult]) -> Rate:
    """The passes among the runs that count toward a rate."""
    counted = [run for run in runs if counts_toward_rate(run)]
    return Rate(sum(1 for run in counted if run.status == "pass"), len(counted))


def rate_text(summary: RateSummary) -> str:
    """``2/3 (95% CI 21-94%)``, and with more than one trial ``pass@3 100% · pass^3 0%``."""
    rate = summary.rate
    text = rate.shown
    if rate.trials > 1:
        k = rate.trials
        text += f" · pass@{k} {summary.pass_at[k]:.0%} · pass^{k} {summary.pass_hat[k]:.0%}"
    return text


def failed_attempts(runs: Iterable[CellResult]) -> list[FailureRecord]:
    """Every failed attempt's failure, as stored (a result written before version 5 stored none): each run's last
    attempt and the attempts before it."""
    found: list[FailureRecord] = []
    for run in runs:
        found += [a.failure for a in run.cell_attempts[:-1] if a.failure is not None]
        if run.failure is not None:
            found.append(run.failure)
    return found


def by_cause(failures: Iterable[FailureRecord]) -> dict[str, int]:
    """How many failures of each cause, in the vocabulary's order of causes."""
    counted = Counter(f.cause for f in failures)
    return {cause.value: counted[cause.value] for cause in Cause if counted[cause.value]}


def kinds_text(failures: Iterable[FailureRecord], cause: str) -> str:
    """``3 (conduct 2, tools_never_offered 1)``: the failures of one cause, by kind."""
    kinds = Counter(f.kind for f in failures if f.cause == cause)
    if not kinds:
        return ""
    return f"{sum(kinds.values())} (" + ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) + ")"


def last_policy(runs: Iterable[CellResult]) -> ToolPolicyRecord | None:
    """The tool policy the last run that measured one measured."""
    found = None
    for run in runs:
        found = run.tool_policy or found
    return found
