"""``python -m runner.bench``: see :mod:`runner.bench`."""

import sys

from runner.bench.run import main

sys.exit(main())
