"""Reading .github/workflows/conformance.yml (or another workflow: ``path=``) the way GitHub does, for the tests
that check it and run its jobs: the jobs and steps, the few expression shapes the workflow uses (evaluated as
GitHub would), and the runner command lines inside its scripts.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "conformance.yml"
EXPECTED_FAILURES = ROOT / ".github" / "expected-failures.yml"
BIN = Path(sys.executable).parent
SHELL = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]  # GitHub's `shell: bash`


def workflow(path: Path = WORKFLOW) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    if True in data:  # YAML 1.1 reads the key `on` as a boolean
        data["on"] = data.pop(True)
    return data


def job(name: str, path: Path = WORKFLOW) -> dict[str, Any]:
    found = workflow(path)["jobs"][name]
    assert isinstance(found, dict)
    return found


def run_steps(job_name: str, path: Path = WORKFLOW) -> list[dict[str, Any]]:
    return [step for step in job(job_name, path)["steps"] if "run" in step]


EXPR = re.compile(r"^\$\{\{\s*(.*?)\s*\}\}$")
OR_DEFAULT = re.compile(r"^inputs\.(\w+) \|\| '([^']*)'$")
MATRIX = re.compile(r"^matrix\.(\w+)$")
KEY = re.compile(
    r"^inputs\.model == 'live' && contains\(format\(',\{0\},', matrix\.credentials\), ',(\w+),'\) "
    r"&& secrets\.(\w+) \|\| ''$"
)


def evaluate(value: Any, inputs: dict[str, str], matrix: dict[str, str] | None = None) -> str:
    text = str(value)
    found = EXPR.match(text)
    if found is None:
        assert "${{" not in text, f"evaluate() does not know {text!r}: extend it"
        return text
    expr = found.group(1)
    if m := OR_DEFAULT.match(expr):
        return inputs.get(m.group(1)) or m.group(2)
    if (m := MATRIX.match(expr)) and matrix is not None:
        return matrix[m.group(1)]
    if (m := KEY.match(expr)) and matrix is not None:
        name, secret = m.groups()
        assert name == secret, f"{name} must come from the secret of the same name"
        # contains() on a string is a substring test; the commas make it a test of one whole name
        live = inputs.get("model") == "live"
        return f"secret-of-{secret}" if live and name in matrix["credentials"].split(",") else ""
    raise AssertionError(f"evaluate() does not know ${{{{ {expr} }}}}: extend it")


def step_env(job_name: str, step: dict[str, Any], inputs: dict[str, str], matrix: dict[str, str] | None = None
             ) -> dict[str, str]:
    merged = {**workflow().get("env", {}), **job(job_name).get("env", {}), **step.get("env", {})}
    return {key: evaluate(value, inputs, matrix) for key, value in merged.items()}


def outputs(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return dict(line.split("=", 1) for line in lines if "=" in line)


def commands(script: str, program: str) -> list[list[str]]:
    """Each invocation of ``program`` in a script, as its argument words (quotes removed, $VARS kept)."""
    found = []
    for line in script.replace("\\\n", " ").splitlines():
        lexer = shlex.shlex(line, posix=True, punctuation_chars=";&|<>()")
        lexer.whitespace_split = True
        lexer.commenters = "#"
        words = list(lexer)
        for i, word in enumerate(words):
            if word == program and (i == 0 or words[i - 1] in (";", "&&", "||", "|", "then", "do", "(")):
                rest = words[i + 1:]
                end = next((j for j, w in enumerate(rest) if w and set(w) <= set(";&|<>()")), len(rest))
                found.append(rest[:end])
    return found


def assignments(script: str) -> dict[str, str]:
    """Plain ``name=value`` shell assignments (the first of each), for the variables a command line uses."""
    out: dict[str, str] = {}
    for m in re.finditer(r"^\s*([a-z_][a-z0-9_]*)=([^\s;]+)", script, re.M):
        out.setdefault(m.group(1), m.group(2))
    return out
