"""Pi + pi-mcp-adapter (``pi --mode json``): its stdout interpreter.

Profiles: ``harness_profiles/pi.yaml`` and ``harness_profiles/pi-direct.yaml``.
"""

from runner.harnesses.pi.interpreter import interpret

__all__ = ["interpret"]
