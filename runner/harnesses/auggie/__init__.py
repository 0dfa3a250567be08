"""Augment Auggie CLI (``auggie --print --output-format json``): why its column is unavailable.

Profile: ``auggie.yaml``. Why it is unavailable, and what was measured: ``README.md``.
"""

from runner.harnesses.package import HarnessPackage

HARNESS = HarnessPackage()  # nothing of its own: unavailable here, the generic ``exit-code`` interpreter stands in
