"""Mistral Vibe (``vibe -p <prompt> --output streaming``, ``mistral-vibe`` 2.26.1 from PyPI, on Debian trixie's
Python 3.13 in its image's own layer).

Profile: ``vibe.yaml``. What was measured: ``README.md``.
"""

from runner.harnesses.vendor import Vendor
from runner.harnesses.vibe.interpreter import interpret

VENDOR = Vendor(interpreters={"vibe": interpret})

__all__ = ["VENDOR", "interpret"]
