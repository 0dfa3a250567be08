"""The ``runner`` command line. It parses, resolves once at the edge and prints; the work lives below it.

- :mod:`app`      the command tree and ``runner --version``
- :mod:`settings` the edge: the one module that reads the environment, and where options become typed settings
- :mod:`render`   every console the commands write through (never hard-wrapped in a pipe), error reporting
- :mod:`turn`     ``exec`` (one turn), ``gc``, and the signal handling that removes a run's containers
- :mod:`matrix`   ``run``, ``report``, ``repro``, ``matrix``
- :mod:`listing`  ``cases``, ``harnesses``
- :mod:`images`   ``images build|list|verify``
- :mod:`setup`    ``setup engine|tools``: the host scripts, from the installed package

Exit codes are carried by the error classes (:mod:`runner.errors`); commands import what they use when they
use it, so ``runner --help`` loads the command tree and nothing else.
"""

from runner.cli.app import app
from runner.errors import Exit

__all__ = ["Exit", "app"]
