"""runner reads its environment at the edge only: the command line's settings module (and the few modules that are
process entry points of their own), read from the code. Everything below takes what it needs as typed values, so a
setting is parsed once and a test hands a turn its environment instead of patching the process's."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "runner"

# where reading the environment is the module's job
EDGES = {
    "runner/cli/settings.py": "the command line's edge",
    "runner/model/__main__.py": "python -m runner.model, a process of its own",
    "runner/bench/cell.py": "the bench's in-process cell, planned as runner run plans it",
    "runner/bench/__main__.py": "python -m runner.bench, a process of its own",
    "runner/sandbox/reaper.py": "python -m runner.sandbox.reaper, the run's reaper, a process of its own",
}
# (the in-container clients, runner/harnesses/reference/client.py and runner/harnesses/model/agent.py, would
# be edges of their own too: today they read no variable)


def environment_reads(path: Path) -> list[int]:
    """The lines where ``path`` reads the process environment: ``os.environ``, ``os.environb``, ``os.getenv``,
    ``os.getenvb`` (through any name ``os`` is imported as), or those names imported from ``os``."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names = {"environ", "environb", "getenv", "getenvb"}
    modules = {"os"} | {a.asname for n in ast.walk(tree) if isinstance(n, ast.Import)
                        for a in n.names if a.name == "os" and a.asname}
    lines = []
    for node in ast.walk(tree):
        attribute = isinstance(node, ast.Attribute) and node.attr in names \
            and isinstance(node.value, ast.Name) and node.value.id in modules
        imported = isinstance(node, ast.ImportFrom) and node.module == "os" and any(a.name in names for a in node.names)
        if attribute or imported:
            lines.append(node.lineno)
    return sorted(lines)


def reads() -> dict[str, list[int]]:
    found = {str(p.relative_to(ROOT)): environment_reads(p) for p in sorted(PACKAGE.rglob("*.py"))}
    return {path: lines for path, lines in found.items() if lines}


def test_only_the_edges_read_the_environment() -> None:
    below = {path: lines for path, lines in reads().items() if path not in EDGES}
    assert below == {}, "read the variable in runner/cli/settings.py and hand the value down (file: lines)"


def test_every_listed_edge_still_reads_it() -> None:
    """A listed module that no longer reads the environment comes off the list (so the list stays the truth)."""
    assert set(EDGES) <= set(reads())


@pytest.mark.parametrize("source", [
    "import os\nos.environ['X']", "import os\nos.getenv('X')", "import os as o\no.environ.get('X')",
    "from os import environ", "from os import getenv as g", "import os\nenv = {**os.environ}",
])
def test_the_scan_sees_each_way_of_reading_it(tmp_path: Path, source: str) -> None:
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8")
    assert environment_reads(path)


@pytest.mark.parametrize("source", [
    "def f(environ):\n    return environ.get('X')", "import os\nos.path.join('a')", "from os import path",
])
def test_a_mapping_handed_in_is_not_a_read(tmp_path: Path, source: str) -> None:
    path = tmp_path / "m.py"
    path.write_text(source, encoding="utf-8")
    assert environment_reads(path) == []
