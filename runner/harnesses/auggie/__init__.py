"""Augment Auggie CLI (``auggie --print --output-format json``): why its column is unavailable.

Profile: ``auggie.yaml``. Why it is unavailable, and what was measured: ``README.md``.
"""

from runner.harnesses.vendor import Vendor

VENDOR = Vendor()  # nothing of its own: the column is unavailable and the generic ``exit-code`` interpreter stands in
