"""Mistral Vibe (``vibe -p <prompt> --output streaming``, ``mistral-vibe`` 2.26.1 from PyPI): an ``unavailable``
column.

Profile: ``harness_profiles/vibe.yaml``. Why it is unavailable, and what was measured: ``docs/columns/vibe.md``.
"""

from runner.harnesses.vendor import Vendor
from runner.harnesses.vibe.interpreter import interpret

VENDOR = Vendor(interpreters={"vibe": interpret})

__all__ = ["VENDOR", "interpret"]
