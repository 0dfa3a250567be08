"""``python -m runner.bench``: see :mod:`runner.bench`."""

import os
import sys

from runner.bench.run import main

sys.exit(main(os.environ))  # a process of its own: its edge
