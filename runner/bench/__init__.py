"""``python -m runner.bench`` (``make bench``): what runner costs, against its floor, measured side by side.

Every figure is a ratio or a percentile taken in this one run, next to the machine it ran on (cores,
memory, kernel, Docker) and the versions involved (runner, the MCP SDK, Python); each has its target
and a verdict (``PASS`` / ``MISS``; ``not measured`` when this run could not take it, ``info`` for a
figure without a target). The table goes to stdout, the progress to stderr, and everything (samples
included) to ``bench-results.json`` (``--out``). ``--only`` picks sections, ``--quick`` takes smaller
samples, ``--strict`` exits 1 on a miss.

One module per concern; each measurement's module says how it is taken and against what:

- :mod:`~runner.bench.stats` percentiles, medians, ratios; :mod:`~runner.bench.figures` a figure, its
  target (:data:`~runner.bench.figures.TARGETS`) and verdict; :mod:`~runner.bench.plan` sections and
  sample sizes; :mod:`~runner.bench.report` the JSON and the table (all pure, unit-tested);
- :mod:`~runner.bench.machine` the machine and versions; :mod:`~runner.bench.process` host processes
  (wall time, peak RSS) and hardened containers; :mod:`~runner.bench.world` the world served;
- the measurements: 1. :mod:`~runner.bench.roundtrip` MCP ``tools/call`` from inside a container
  (the timing client is :mod:`~runner.bench.client`, copied into the container), against the same
  server on in-memory streams; 2. :mod:`~runner.bench.cell` a whole reference cell, in process and as
  ``runner exec``, against a bare ``containers.run``; 3 and 4. :mod:`~runner.bench.matrix` matrix
  throughput at ``-j 1``/``-j 2`` and peak RSS; 5. :mod:`~runner.bench.images` warm image builds and
  the recorded cold steps; 6. :mod:`~runner.bench.startup` ``runner --help`` and ``runner cases``
  against ``python -c pass``; 7. :mod:`~runner.bench.gvisor` each runnable column's cell under gVisor
  (``--runtime runsc``) against the same cell under runc; 8. :mod:`~runner.bench.phases` each runnable column's
  turn phase by phase (runner → container start, start → first model request, model exchanges, last answer →
  exit, exit → runner done) against its floor (the container's own start → exit) and its CLI's bare
  ``--version``, as ``runner exec`` and in process (``--harness`` narrows it);
- :mod:`~runner.bench.run` the command itself.

The bench never builds an image: it checks the images' ``lock.json`` against the engine and the recipes
first and stops if anything is stale (``make bench`` runs ``make setup`` before it).
"""
