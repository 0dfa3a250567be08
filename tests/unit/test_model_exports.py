"""``runner.model`` offers its names twice, as it must: imported under ``TYPE_CHECKING`` for the type checker, and
looked up lazily at run time (``_HOMES``), so that a light module of the package does not start the HTTP server's
imports. The two lists are one: every name the type checker sees is found at run time, in the module it names."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import runner.model

PACKAGE = Path(runner.model.__file__)


def _typed_names() -> dict[str, str]:
    """name -> module, from the ``if TYPE_CHECKING:`` block's imports."""
    tree = ast.parse(PACKAGE.read_text(encoding="utf-8"))
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            for item in node.body:
                assert isinstance(item, ast.ImportFrom) and item.module is not None
                for alias in item.names:
                    assert alias.asname == alias.name, f"{alias.name}: import it `as {alias.name}` to re-export it"
                    found[alias.name] = item.module.removeprefix("runner.model.")
    return found


def test_the_typed_names_are_the_names_found_at_run_time_in_the_same_module() -> None:
    typed = _typed_names()
    assert typed, "no TYPE_CHECKING imports were read: this test checks nothing"
    assert typed == runner.model._HOMES
    for name, home in typed.items():
        assert getattr(runner.model, name) is getattr(importlib.import_module(f"runner.model.{home}"), name)


def test_a_light_module_of_the_package_does_not_start_the_servers_imports() -> None:
    code = "import sys, runner.model.types; print('uvicorn' in sys.modules, 'runner.model.server' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
