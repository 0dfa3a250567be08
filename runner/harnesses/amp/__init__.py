"""Sourcegraph Amp CLI (``amp -x --stream-json``): why its column is unavailable.

Profile: ``amp.yaml``. Why it is unavailable, and what was measured: ``README.md``.
"""

from runner.harnesses.vendor import Vendor

VENDOR = Vendor()  # nothing of its own: the column is unavailable and the generic ``exit-code`` interpreter stands in
