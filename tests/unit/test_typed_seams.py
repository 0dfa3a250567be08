"""No public function or record of a strict module takes or returns ``Any`` (issue 18).

mypy strict checks that everything is annotated, not that an annotation says something: ``Any`` (or the core's
``Json`` alias of it) in a public signature passes strict and switches the checking off for every caller. The
modules still relaxed in pyproject.toml's ``[[tool.mypy.overrides]]`` are left out, so this covers each module the
moment it leaves that list.
"""

from __future__ import annotations

import ast
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "runner"
UNTYPED = {"Any", "Json"}  # typing.Any, and the name of the core's former alias of it
# where one is still allowed, and why
ALLOWED = {
    # a field's default, as pydantic's own Field() is typed: Any is what lets it stand for any field's type
    "runner.conformance.jsonmodel.omitted(return)": "a pydantic field default (typed as pydantic.Field is)",
}


def relaxed() -> list[str]:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    patterns: list[str] = []
    for override in config["tool"]["mypy"].get("overrides", []):
        modules = override["module"]
        patterns += [modules] if isinstance(modules, str) else modules
    return patterns


def is_relaxed(module: str, patterns: list[str]) -> bool:
    for pattern in patterns:
        if pattern.endswith(".*"):
            base = pattern[:-2]
            if module == base or module.startswith(base + "."):
                return True
        elif module == pattern:
            return True
    return False


def strict_modules() -> dict[str, Path]:
    patterns = relaxed()
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(ROOT).with_suffix("").parts
        module = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        if not is_relaxed(module, patterns):
            found[module] = path
    return found


def untyped(annotation: ast.expr | None) -> bool:
    if annotation is None:
        return False
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name) and node.id in UNTYPED:
            return True
        if isinstance(node, ast.Attribute) and node.attr in UNTYPED:
            return True
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and untyped(quoted(node.value)):
            return True
    return False


def quoted(text: str) -> ast.expr | None:
    """A quoted annotation, parsed; None for a string that is no expression (a Literal's text, say)."""
    try:
        return ast.parse(text, mode="eval").body
    except SyntaxError:
        return None


def signature(function: ast.FunctionDef | ast.AsyncFunctionDef) -> list[str]:
    args = function.args
    every = [*args.posonlyargs, *args.args, *args.kwonlyargs, args.vararg, args.kwarg]
    names = [a.arg for a in every if a is not None and untyped(a.annotation)]
    return [*names, "return"] if untyped(function.returns) else names


def public(name: str) -> bool:
    return not name.startswith("_") or name in ("__init__", "__call__")


def untyped_seams(module: str, path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found = []
    for node in tree.body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and public(node.name):
            found += [f"{module}.{node.name}({name})" for name in signature(node)]
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and public(node.target.id):
            found += [f"{module}.{node.target.id}"] if untyped(node.annotation) else []
        elif isinstance(node, ast.ClassDef) and public(node.name):
            for item in node.body:
                if isinstance(item, ast.FunctionDef | ast.AsyncFunctionDef) and public(item.name):
                    found += [f"{module}.{node.name}.{item.name}({name})" for name in signature(item)]
                elif isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name) and public(item.target.id):
                    found += [f"{module}.{node.name}.{item.target.id}"] if untyped(item.annotation) else []
    return [f for f in found if f not in ALLOWED]


def test_only_the_in_container_modules_are_not_strict() -> None:
    """Every module of runner/ is checked strict but the three that run inside the containers, on the image's
    interpreter, with no runner types to import (the list the floors left when they were made strict is gone)."""
    assert sorted(relaxed()) == [
        "runner.harnesses.model.agent", "runner.harnesses.reference.client", "runner.sandbox.relay.relay",
    ]


def test_the_relaxed_list_names_modules_that_exist() -> None:
    """A pattern that matches nothing is a module that was renamed or removed: drop it from the list."""
    every = [
        ".".join(p.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__") for p in PACKAGE.rglob("*.py")
    ]
    stale = [p for p in relaxed() if not any(is_relaxed(m, [p]) for m in every)]
    assert not stale, f"pyproject.toml relaxes modules that do not exist: {stale}"


@pytest.mark.parametrize("module", sorted(strict_modules()))
def test_no_public_signature_or_field_is_untyped(module: str) -> None:
    found = untyped_seams(module, strict_modules()[module])
    assert not found, f"Any (or Json) in a public signature or field of a strict module: {found}"


def test_the_check_sees_an_untyped_signature(tmp_path: Path) -> None:
    """The check itself: Any in an argument, a return, a quoted annotation and a field are each found."""
    source = tmp_path / "sample.py"
    source.write_text(
        "from typing import Any\n"
        "def f(a: int, b: Any) -> None: ...\n"
        "def g() -> 'dict[str, Any]': ...\n"
        "def _private(c: Any) -> Any: ...\n"
        "class R:\n"
        "    field: list[Json]\n"
        "    def method(self, *, d: Any) -> int: ...\n",
        encoding="utf-8",
    )
    found = untyped_seams("sample", source)
    assert found == ["sample.f(b)", "sample.g(return)", "sample.R.field", "sample.R.method(d)"]


# --- names that say what they are (issue 18) --------------------------------------------------------------------

FLOORS = {p.name for p in PACKAGE.iterdir() if (p / "__init__.py").is_file()}
# the standalone in-container clients (tests/unit/test_layers.py STANDALONE): they cannot import runner's classes,
# so they spell their own
IN_CONTAINER = {PACKAGE / "harnesses" / "reference" / "client.py", PACKAGE / "harnesses" / "model" / "agent.py"}
# public class names still defined in two modules, each pair in one floor or naming one thing in two senses; the
# list only shrinks (a rename takes its entry out)
SHARED_CLASS_NAMES = {"Decision", "Dialect", "Failed", "Plan", "Row", "Skipped"}


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def test_no_package_is_named_as_a_floor() -> None:
    """runner.model (the model endpoint) and runner.harnesses.model were two packages of one name (issue 18); a
    harness's package is now named by its harness id, whatever floor shares the word (issue 30: the model harness is
    runner.harnesses.model, found by its id as every harness is), and no other package may take a floor's name."""
    harnesses = {p.parent for p in (PACKAGE / "harnesses").glob("*/__init__.py")}
    nested = [module_name(p.parent) for p in PACKAGE.glob("*/*/**/__init__.py")
              if p.parent.name in FLOORS and p.parent not in harnesses]
    assert not nested, f"packages named as a floor of runner/: {nested}"


def test_no_module_sits_beside_its_own_plural() -> None:
    """runner/matrix/cell.py (run one cell) beside runner/matrix/cells.py (the cells of a matrix)."""
    stems = {module_name(p) for p in PACKAGE.rglob("*.py")}
    found = sorted(m for m in stems if m + "s" in stems)
    assert not found, f"modules one letter apart: {[(m, m + 's') for m in found]}"


def test_no_public_class_name_is_defined_twice() -> None:
    defined: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path in IN_CONTAINER:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef) and public(node.name):
                defined.setdefault(node.name, []).append(module_name(path))
    twice = {name: modules for name, modules in defined.items() if len(modules) > 1}
    new = {name: modules for name, modules in twice.items() if name not in SHARED_CLASS_NAMES}
    assert not new, f"classes of one name in two modules: {new}"
    gone = sorted(SHARED_CLASS_NAMES - set(twice))
    assert not gone, f"no longer shared, drop from SHARED_CLASS_NAMES: {gone}"
    for renamed in ("Limits", "Cell"):
        assert renamed not in defined, f"{renamed} is back: name it for what it holds ({defined[renamed]})"


def test_a_command_module_imports_no_other_commands_module() -> None:
    """What the commands share is in runner/cli/shared.py (and render.py, settings.py), not in one command's module:
    ``runner run`` importing its help texts from ``runner exec``'s module was the plumbing in the wrong place."""
    commands = {"turn", "matrix", "images", "listing"}
    found = []
    for name in commands:
        tree = ast.parse((PACKAGE / "cli" / f"{name}.py").read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module in {f"runner.cli.{c}" for c in commands - {name}}:
                found.append(f"runner.cli.{name} imports {node.module}")
    assert not found, found
