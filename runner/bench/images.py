"""Item 5: a warm ``runner images build --all``, and the cold steps as each recorded itself.

Cold set-up cannot be repeated side by side, so each cold step writes its own wall time when it
really runs (:mod:`runner.images.timings`); this reports them, without a target.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from runner.bench.figures import BenchError, Figure, not_measured
from runner.bench.process import run_measured, runner_command
from runner.core.outcomes import JsonValue

if TYPE_CHECKING:
    from runner.images.settings import ImageSettings

COLD_NOT_MEASURED = (
    "no cold step is recorded on this machine: each step writes its own time into "
    "$RUNNER_CACHE_DIR/cold-timings/ when it really runs (engine install and start, a base bootstrap, an "
    "image build); a machine set up before that existed has none until something is rebuilt"
)
COLD_LABELS = {"engine.install": "cold: install docker.io + mmdebstrap", "engine.start": "cold: start dockerd"}


def cold_figures(recorded: Mapping[str, Mapping[str, JsonValue]]) -> list[Figure]:
    """One figure per recorded cold step (engine first, then bases, then images); reported, no target."""
    order = {"engine": 0, "base": 1, "image": 2}
    figures = []
    for step in sorted(recorded, key=lambda k: (order.get(k.split(".", 1)[0], 3), k)):
        body = recorded[step]
        seconds = body["seconds"]
        if not isinstance(seconds, int | float):  # never: timings.read keeps only the steps with a number
            raise BenchError(f"the cold step {step} recorded {seconds!r} seconds")
        kind, _, name = step.partition(".")
        label = COLD_LABELS.get(step) or (f"cold: bootstrap base {name}" if kind == "base" else f"cold: build {name}")
        figures.append(Figure(f"cold.{step}", 5, label, float(seconds), "s",
                              "recorded by the step itself when it ran (runner/images/timings.py)",
                              f"at {body.get('at', '?')}", {k: v for k, v in body.items() if k != "seconds"}))
    return figures or [not_measured("images.cold", 5, "cold set-up steps", "s", COLD_NOT_MEASURED)]


def measure_images(images: ImageSettings) -> list[Figure]:
    from runner.images import timings

    measured = run_measured([*runner_command(), "images", "build", "--all"], timeout=300.0)
    if measured.returncode != 0:
        raise BenchError(f"runner images build --all exited {measured.returncode}: {measured.stderr_tail()}")
    # ensure_image only reports progress (printed as "… <step>") when it bootstraps, stages or builds
    cold = [line.strip() for line in measured.stderr.splitlines() if line.lstrip().startswith("…")]
    figures = [Figure("images.warm", 5, "warm images build --all", measured.wall, "s",
                      "runner images build --all with nothing changed, process wall time",
                      "not warm: " + "; ".join(cold[:3]) if cold else "",
                      {"stdout": [*measured.stdout.strip().splitlines()]})]
    return figures + cold_figures(timings.read(images.cache_dir))
