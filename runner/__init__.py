"""runner: run vendor coding-agent CLIs in pinned containers against a SharedOS catalogue over MCP.

The package layout follows one turn as data flows through it:

- ``core``        the pure turn authority: outcomes, refusal vocabulary, world, catalogue, envelope, latch
- ``mcp``         the MCP surface: the SDK server on the per-turn unix socket, result encoding
- ``sandbox``     the Docker Engine, pinned images and the hardened container
- ``harnesses``   profiles, stream interpreters and the reference harness
- ``turn``        the turn runtime that ties them together and settles the outcome
- ``conformance`` cases (matrix rows) and, later, the judge and artifacts
- ``cli``         the ``runner`` command line
"""

__version__ = "0.1.0"
