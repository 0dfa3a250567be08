"""What ``runner report`` reads before it renders: every run of every cell found below the directories it is given,
merged into series (one cell's runs, side by side) only where the runs are comparable.

- **A run** is one ``result.json`` runner wrote (:func:`~runner.matrix.artifact.result_files`: never a file the CLI
  left among its own, below ``session/``, nor one reached through a link): a trial of one ``runner run --trials N``
  (``<cell>/`` and ``<cell>/trial-<k>/``), the same cell from another output directory or another machine, or a
  ``runner repro`` rerun below it. Runs are ordered by the directory argument they were found under, then trial,
  then when they started: Run 1, Run 2, … The same file reached twice, or a byte-identical copy of one (an artifact
  downloaded beside the run it came from), is one run.
- **A group** is the runs that may be read together: they share the comparability pins (:data:`SHARED_PINS`: case
  set, world set, judge version), and every run of one cell in it was served the same catalogue
  (``catalogHash``; columns of one row may still differ, which the report says as it always has). A run that fits
  no group starts a new one, and the report names the pins that kept it apart, as the decision record did by hand
  when it concatenated artifacts from two scripts only because every pin matched.
- **Stability** is the reading of a series: ``3/3 pass``, ``1/2 pass, 1/2 not_exercised``.
- **A finding**: a series on the scripted model (or on no model: the reference harness plays its script itself)
  whose runs differ. A script is played the same way every time, so N identical runs are expected and a
  difference is nondeterminism in the runner or the CLI.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from runner.conformance.behaviours import COIN_PREFIX
from runner.conformance.jsonmodel import JsonModel, JsonValue
from runner.errors import UsageError
from runner.matrix.artifact import load_result, result_files
from runner.matrix.result import CellResult, ResultError

SHARED_PINS = ("caseSetHash", "worldSetHash", "judgeVersion")
SCRIPTED = ("scripted", "none")  # model modes that play a script: their runs of one cell must agree


class ReportError(UsageError, ValueError):
    """A cell directory or an expected-failures file that cannot be read; names the file."""


def load_runs(paths: list[Path]) -> list[CellResult]:
    """Every ``result.json`` runner wrote under the given directories (or the files themselves): sorted by cell id,
    then by the order of ``paths``, trial and start time. Each file once, and a byte-identical copy of a run once."""
    return [run for run, _ in locate_runs(paths)]


def locate_runs(paths: list[Path]) -> list[tuple[CellResult, Path]]:
    """:func:`load_runs`, each run with the directory it was read from (where its logs and timeline are: what the
    HTML report links to)."""
    found: list[tuple[tuple[str, int, int, str, str], tuple[CellResult, Path]]] = []
    seen_files: set[Path] = set()
    seen_bodies: set[str] = set()
    for index, path in enumerate(paths):
        if not path.exists():
            raise ReportError(f"{path}: no such file or directory")
        files = result_files(path)
        for file in files:
            if file.resolve() in seen_files:
                continue
            seen_files.add(file.resolve())
            try:
                run = load_result(file)
            except ResultError as err:
                raise ReportError(str(err)) from None
            body = run.dumps()
            if body in seen_bodies:
                continue
            seen_bodies.add(body)
            found.append(((run.id, index, run.trial, run.started_at or "", str(file)), (run, file.parent)))
    return [located for _, located in sorted(found, key=lambda pair: pair[0])]


@dataclass
class Group:
    """Runs that may be read together; ``series`` by cell id (each in run order); ``apart`` says, for every group
    after the first, which pins kept it apart from the earlier ones."""

    shared: dict[str, JsonValue]
    series: dict[str, list[CellResult]] = field(default_factory=dict)
    catalogues: dict[str, str] = field(default_factory=dict)
    apart: list[str] = field(default_factory=list)

    def fits(self, run: CellResult) -> bool:
        """A pin a run does not carry (an interruption before the cell knew its pins) keeps it from no group."""
        for pin, value in shared_pins(run).items():
            if value is not None and self.shared.get(pin) not in (None, value):
                return False
        catalogue = run.pins.catalog_hash
        return catalogue is None or self.catalogues.get(run.id, catalogue) == catalogue

    def add(self, run: CellResult) -> None:
        for pin, value in shared_pins(run).items():
            if self.shared.get(pin) is None:
                self.shared[pin] = value
        self.series.setdefault(run.id, []).append(run)
        if run.pins.catalog_hash:
            self.catalogues.setdefault(run.id, run.pins.catalog_hash)

    @property
    def runs(self) -> list[CellResult]:
        return [run for cell_id in sorted(self.series) for run in self.series[cell_id]]


def shared_pins(run: CellResult) -> dict[str, JsonValue]:
    pins = run.pins.to_dict()
    return {pin: pins.get(pin) for pin in SHARED_PINS}


def group_runs(runs: list[CellResult]) -> list[Group]:
    """The runs in groups, in order: each run joins the first group it fits, or starts one."""
    groups: list[Group] = []
    for run in runs:
        home = next((g for g in groups if g.fits(run)), None)
        if home is None:
            home = Group(shared_pins(run))
            home.apart = _apart(home.shared, run, groups)
            groups.append(home)
        home.add(run)
    return groups


def _apart(shared: dict[str, JsonValue], run: CellResult, earlier: list[Group]) -> list[str]:
    """Which pins keep a new group from each earlier one, named as ``pin: theirs → ours``."""
    reasons: list[str] = []
    for number, other in enumerate(earlier, 1):
        differing = [f"{pin} {other.shared.get(pin)} → {shared.get(pin)}"
                     for pin in SHARED_PINS if other.shared.get(pin) not in (None, shared.get(pin))]
        if not differing:
            differing = [f"catalogHash of {run.id} {other.catalogues.get(run.id)} → {run.pins.catalog_hash}"]
        reasons.append(f"group {number}: " + ", ".join(differing))
    return reasons


def series_status(runs: list[CellResult]) -> str:
    """One word for a series: the status its runs share, or ``unstable`` when they differ."""
    statuses = {run.status for run in runs}
    return statuses.pop() if len(statuses) == 1 else "unstable"


def stability(runs: list[CellResult], spaced: bool = False) -> str:
    """``3/3 pass``; ``1/2 pass, 1/2 not_exercised`` (pass first, then the other grades as they first appear);
    ``spaced`` writes grades as the Markdown grid does (``not exercised``)."""
    counts = Counter(run.status for run in runs)
    order = sorted(counts, key=lambda s: (s != "pass", [r.status for r in runs].index(s)))
    words = ", ".join(f"{counts[s]}/{len(runs)} {s}" for s in order)
    return words.replace("_", " ") if spaced else words


def outcome(runs: list[CellResult]) -> str:
    """The turn outcome of a series: one word when every run settled alike, else each with its count; ``—`` for a
    series that ran no turn."""
    outcomes = [run.turn_outcome or "—" for run in runs]
    counts = Counter(outcomes)
    if len(counts) == 1:
        return outcomes[0]
    return ", ".join(f"{name} ×{counts[name]}" for name in dict.fromkeys(outcomes))


def reading(run: CellResult) -> dict[str, JsonModel | None]:
    """What a run found, without when, where or how long (its turn's wind-down is a time): what two scripted runs
    must agree on."""
    turn = run.turn.model_copy(update={"wind_down_seconds": None}) if run.turn is not None else None
    return {"grade": run.grade, "turn": turn, "infrastructureError": run.infrastructure_error}


def findings(groups: list[Group]) -> list[str]:
    """Series played from a script (:data:`SCRIPTED`) whose runs differ: a script is deterministic, so each is a
    finding."""
    found = []
    for group in groups:
        for cell_id, runs in sorted(group.series.items()):
            # a coin's trials differ by design (runner.conformance.behaviours.Coin): its script is chosen per trial
            scripted = [r for r in runs if r.pins.model_mode in SCRIPTED and r.infrastructure_error is None
                        and not (r.pins.behaviour or "").startswith(COIN_PREFIX)]
            if len(scripted) < 2:
                continue
            first, others = reading(scripted[0]), [reading(r) for r in scripted[1:]]
            if any(other != first for other in others):
                differs = sorted({key for other in others for key, value in other.items() if value != first[key]})
                found.append(f"{cell_id}: {len(scripted)} runs of one script differ ({stability(scripted)}; "
                             f"{', '.join(differs)} differ): nondeterminism in the runner or the CLI")
    return found
