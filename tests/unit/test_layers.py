"""The layers of ``runner/`` point one way, read from the code's own imports (every import, including those inside
functions and under ``TYPE_CHECKING``), and no module imports itself back through a chain of imports, counting those
too (a cycle only a type checker follows is still two modules that cannot be read one after the other).

The rule (also in docs/architecture.md's layer table, held to this one by tests/unit/test_docs.py):

    errors                          imports nothing of runner (every layer may raise its errors)
    intake                          errors                       reading what the box wrote, bounded (every layer)
    core                            errors                       the pure turn authority
    engine                          errors                       connecting to an engine, retrying its calls
    images                          engine                       the image builder
    conformance, mcp, model         core                         each on the core alone
    sandbox                         images                       the container, its transports, the probe
    harnesses                       core, model                  profiles and what a CLI prints
    turn                            everything above             one turn, tied together
    matrix                          turn and everything above    cells, plans, results, reports
    cli, bench                      matrix and everything above  the two top floors, apart from each other
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "runner"
BELOW_TURN = {"errors", "intake", "core", "engine", "images", "conformance", "mcp", "model", "sandbox", "harnesses"}
ALLOWED: dict[str, set[str]] = {
    "errors": set(),
    "intake": {"errors"},
    "core": {"errors", "intake"},
    "engine": {"errors"},
    "images": {"errors", "intake", "engine"},
    "conformance": {"errors", "intake", "core"},
    "mcp": {"errors", "intake", "core"},
    "model": {"errors", "intake", "core"},
    "sandbox": {"errors", "intake", "engine", "images"},
    "harnesses": {"errors", "intake", "core", "model"},
    "turn": BELOW_TURN,
    "matrix": BELOW_TURN | {"turn"},
    "cli": BELOW_TURN | {"turn", "matrix"},
    "bench": BELOW_TURN | {"turn", "matrix"},
}
# these run inside the container, on their own
STANDALONE = {"runner/harnesses/reference/client.py", "runner/harnesses/model/agent.py"}


def modules() -> dict[str, Path]:
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


def imports(path: Path) -> set[str]:
    """The runner modules a file imports (``from runner.x import y`` counts ``runner.x.y`` when that is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names if a.name.split(".")[0] == "runner"}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("runner"):
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
    return names


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def test_every_package_is_in_the_rule() -> None:
    packages = {layer(m) for m in modules()} - {"__init__"}
    assert packages == set(ALLOWED), (
        "a new package needs its place in the layer rule (here and in docs/architecture.md)")


@pytest.mark.parametrize("module", sorted(modules()))
def test_a_module_imports_only_from_the_layers_below_its_own(module: str) -> None:
    path = modules()[module]
    own = layer(module)
    known = modules()
    reached = {layer(m) for m in imports(path) if m in known or m.rsplit(".", 1)[0] in known}
    if str(path.relative_to(PACKAGE.parent)) in STANDALONE:
        assert not reached, f"{module} runs inside the container alone: it may import nothing of runner"
        return
    if own == "__init__":
        return
    wrong = reached - ALLOWED[own] - {own, "__init__"}
    assert not wrong, f"{module} ({own}) imports from {sorted(wrong)}: the rule allows {sorted(ALLOWED[own])}"


def test_no_module_imports_itself_back() -> None:
    known = modules()
    graph = {m: {i for i in imports(p) if i in known and i != m} for m, p in known.items()}
    seen: dict[str, int] = {}  # 1: on the path, 2: done

    def visit(module: str, path: list[str]) -> None:
        seen[module] = 1
        for nxt in sorted(graph[module]):
            if seen.get(nxt) == 1:
                cycle = [*path[path.index(nxt):], nxt]
                pytest.fail("import cycle: " + " -> ".join(cycle))
            if nxt not in seen:
                visit(nxt, [*path, nxt])
        seen[module] = 2

    for module in sorted(graph):
        if module not in seen:
            visit(module, [module])


def test_the_command_line_starts_without_the_engine_the_sdk_or_the_case_data() -> None:
    """`runner --help` parses before it loads any of the work: importing the command tree pulls in none of it."""
    heavy = ("docker", "mcp", "pydantic", "jsonschema", "anyio", "runner.conformance.cases", "runner.engine",
             "runner.images", "runner.sandbox")
    code = f"import sys, runner.cli; print(' '.join(sorted(m for m in sys.modules if m.startswith({heavy!r}))))"
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    assert loaded == [], f"importing runner.cli loads {loaded}"


# What the box wrote is walked, opened and unpacked only through runner.intake (see its docstring): anywhere else in
# runner, a hand-written tree walk or archive extraction follows links and reads unbounded. These are the calls that
# do, and the modules allowed one because the tree they walk is runner's own, never the CLI's.
TREE_CALLS = {"rglob", "walk", "extractall", "extract", "copytree"}
RUNNERS_OWN_TREES = {
    "runner.images.context": "the repository's build context, before any container exists",
    "runner.turn.turndir": "runner's own turn dir, handed to the container's uid before the container starts",
    "runner.harnesses.deepseek.session": "runner's copy of dsh's session (made through the intake)",
}


def tree_calls(path: Path) -> set[str]:
    """The tree-walking calls a module makes: ``x.rglob(...)``, ``os.walk(...)``, ``tar.extractall(...)``..."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in TREE_CALLS:
            receiver = node.func.value
            if node.func.attr != "walk" or (isinstance(receiver, ast.Name) and receiver.id == "os"):
                found.add(node.func.attr)
    return found


@pytest.mark.parametrize("module", sorted(m for m in modules() if layer(m) != "intake"))
def test_what_the_box_wrote_is_walked_only_through_the_intake(module: str) -> None:
    found = tree_calls(modules()[module])
    if module in RUNNERS_OWN_TREES:
        return
    assert not found, (f"{module} walks or unpacks a tree by hand ({sorted(found)}): read what the CLI could have "
                       "written through runner.intake.files (or, for a tree of runner's own, say so in "
                       "RUNNERS_OWN_TREES)")


@pytest.mark.parametrize("module", sorted(m for m in modules() if layer(m) == "core"))
def test_the_core_takes_only_the_pure_side_of_the_intake(module: str) -> None:
    """The core does no I/O: of the intake it may use the byte side (payload), never the file side."""
    taken = {m for m in imports(modules()[module]) if m.startswith("runner.intake.") and m in modules()}
    assert taken <= {"runner.intake.payload"}, f"{module} imports {sorted(taken)}: the core takes only the payload"


# A module's private names (``_name``) are its own: another module of runner imports only what a module offers
# publicly, by ``from runner.x import _name`` or through the module (``import runner.x as m; m._name``).
def private_names_taken(module: str, path: Path) -> set[str]:
    """The private names ``module`` takes from other runner modules."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    known = modules()
    aliases: dict[str, str] = {}  # a local name bound to a runner module -> that module
    taken: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and node.module.startswith("runner"):
            for alias in node.names:
                if f"{node.module}.{alias.name}" in known:
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
                elif alias.name.startswith("_") and node.module != module:
                    taken.add(f"{node.module}.{alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("runner") and alias.asname:
                    aliases[alias.asname] = alias.name
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__") and aliases[node.value.id] != module):
            taken.add(f"{aliases[node.value.id]}.{node.attr}")
    return {name for name in taken if not name.rsplit(".", 1)[1].startswith("__")}


@pytest.mark.parametrize("module", sorted(modules()))
def test_no_module_takes_another_modules_private_names(module: str) -> None:
    taken = private_names_taken(module, modules()[module])
    assert not taken, f"{module} imports private names of other modules: {sorted(taken)} (make what it needs public)"


def test_the_private_name_rule_sees_both_ways_of_taking_one(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("from runner.images.shared import _hidden, shown\nimport runner.images.lock as lock\n"
                      "lock._secret()\nfrom runner.images import lock as again\nagain._other\nlock.__name__\n")
    assert private_names_taken("runner.sample", sample) == {
        "runner.images.shared._hidden", "runner.images.lock._secret", "runner.images.lock._other"}
