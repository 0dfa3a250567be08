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
UNTYPED = {"Any", "Json"}  # typing.Any, and runner.core.outcomes.Json (an alias of it)
# where one is still allowed, and why
ALLOWED = {
    "runner.core.outcomes.ExecutionResult.metadata": "matrix/run_cell.py reads it untyped until it is reworked",
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
