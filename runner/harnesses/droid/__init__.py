"""Factory Droid (``droid exec -o stream-json``, ``@factory/cli`` via ``@factory/cli-linux-x64`` 0.225.2): its
interpreter and its tool naming (``naming.py``: ToolSearch).

Profile: ``droid.yaml``. What was measured on which version (install, endpoint, MCP,
retries, stream, files, timing): ``README.md``.
"""

from runner.harnesses.droid.interpreter import interpret
from runner.harnesses.droid.naming import NAMING
from runner.harnesses.package import HarnessPackage

HARNESS = HarnessPackage(interpreters={"droid": interpret}, tool_naming=NAMING)

__all__ = ["HARNESS", "interpret"]
