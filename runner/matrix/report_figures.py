"""The figures a result carries besides its grade, as every reader shows them: ``runner exec``'s summary, ``runner
show``, the Markdown and HTML reports, the manifest. One place, so that a token count or a rate reads the same
everywhere.

- **tokens**: ``in 10,241 (cached 3,918) · out 121 (reasoning 0)``, and where side requests (a title, a summary,
  a sub-agent without the catalogue's tools) took any, their share of the total; a total some answers reported no
  usage for says so (it is a lower bound);
- **cost** (:func:`spend`): with a price file (``--prices``, :mod:`runner.conformance.prices`), what the tokens of
  runs cost, each run priced by the model id its usage records, in the file's currency; a model the file does not
  name (or a usage written before the model id was recorded) is priced at nothing and listed as unpriced, never
  guessed;
- **tool policy**: the mode, the inventory, and what the CLI's model can reach besides the catalogue;
- **rates** (:func:`pass_rate`): a cell's or a harness's runs that count toward a rate (an attempt the
  infrastructure ended does not: :mod:`runner.conformance.failures`), with the Wilson interval and, with more
  than one trial, ``pass@k`` and ``pass^k`` (:mod:`runner.conformance.rates`).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from runner.conformance.failures import Cause
from runner.conformance.jsonmodel import JsonValue
from runner.conformance.prices import Prices
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


def spent(runs: Iterable[CellResult]) -> list[UsageRecord]:
    """Every usage the runs recorded: each run's, and each attempt's before its last (its tokens were spent too)."""
    records: list[UsageRecord | None] = []
    for run in runs:
        records.append(run.usage)
        records += [a.usage for a in run.cell_attempts[:-1]]
    return [r for r in records if r is not None]


def total_usage(runs: Iterable[CellResult]) -> UsageRecord | None:
    """Every run's usage, summed (an attempt before the last included: its tokens were spent too)."""
    return summed_usage(spent(runs))


UNRECORDED_MODEL = "(model not recorded)"  # a usage written before the model id was: never priced


@dataclass(frozen=True)
class Spend:
    """What some usages cost at a price file's prices: ``amount`` over the priced ones (None when none was), and
    the models of the others (``unpriced``: no price in the file, never a guessed one)."""

    currency: str
    amount: float | None
    unpriced: tuple[str, ...] = ()

    def to_json(self) -> dict[str, JsonValue]:
        """``{"currency", "amount", "unpriced"}``: ``amount`` null when nothing was priced."""
        return {"currency": self.currency, "amount": self.amount, "unpriced": list(self.unpriced)}

    @property
    def shown(self) -> str:
        """``0.0123 USD``; with unpriced models, ``0.0123 USD (unpriced: m)``; ``-`` for nothing priced."""
        text = money(self.amount, self.currency) if self.amount is not None else "-"
        return text + (f" (unpriced: {', '.join(self.unpriced)})" if self.unpriced else "")


def spend(usages: Iterable[UsageRecord], prices: Prices) -> Spend:
    """What ``usages`` cost at ``prices``: each priced by its own model (see :class:`Spend`)."""
    amount: float | None = None
    unpriced: dict[str, None] = {}
    for usage in usages:
        cost = prices.cost_of(usage.total.usage(), usage.model)
        if cost is None:
            unpriced[usage.model or UNRECORDED_MODEL] = None
        else:
            amount = (amount or 0.0) + cost
    return Spend(prices.currency, amount, tuple(sorted(unpriced)))


def cost(runs: Iterable[CellResult], prices: Prices) -> Spend:
    """What ``runs`` cost at ``prices``: every usage they recorded (:func:`spent`), each priced by its own model."""
    return spend(spent(runs), prices)


def money(amount: float, currency: str) -> str:
    """An amount as a report shows it: four decimals, or three significant digits below a hundredth (a scripted
    turn's tokens cost fractions of a cent), and the currency."""
    shown = f"{amount:,.4f}" if amount >= 0.01 or amount == 0 else f"{amount:.3g}"
    return f"{shown} {currency}"


def undeclared_policies(runs: Iterable[CellResult]) -> list[str]:
    """Findings: per harness and measured mode, the cells whose measured tool policy (``system.toolPolicy``) is not
    the mode their harness declares (:func:`runner.harnesses.interpreters.declared_policy`, ADR 0027), as a policy
    change is in ``report --compare``. A harness that declares nothing (``unknown`` by default: a plugin) has nothing
    to contradict; a turn whose CLI sent its model no request has nothing measured (``unknown`` citing no request)."""
    from runner.harnesses.interpreters import declared_policy
    from runner.harnesses.package import UNDECLARED

    apart: dict[tuple[str, str], list[str]] = {}
    for run in runs:
        measured = run.tool_policy
        if measured is None or (measured.mode == "unknown" and not any("#seq=" in e for e in measured.evidence)):
            continue
        declared = declared_policy(run.cell.harness)
        if declared is not UNDECLARED and measured.mode != declared.mode:
            apart.setdefault((run.cell.harness, measured.mode), []).append(run.id)
    found = []
    for (harness, mode), cells in sorted(apart.items()):
        declared = declared_policy(harness)
        listed = sorted(set(cells))
        shown = ", ".join(listed[:5]) + (f" and {len(listed) - 5} more" if len(listed) > 5 else "")
        found.append(f"{harness}: tool policy measured {mode} in {len(cells)} run(s), but the harness declares "
                     f"{declared.mode} ({', '.join(declared.evidence) or 'no evidence'}): {shown}")
    return found


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
