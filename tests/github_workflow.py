"""Reading the conformance workflows the way GitHub does, for the tests that check them and run their jobs: the
reusable workflow .github/workflows/matrix.yml (:data:`WORKFLOW`, whose jobs run; or another workflow: ``path=``)
and its callers (this repository's conformance.yml, :data:`CALLER`, and the example in docs/reusable-workflow.md):
the jobs and steps, the inputs a caller gives (with the called workflow's defaults), the few expression shapes
the workflows use (evaluated as GitHub would), the steps' conditions and working directories, and the runner
command lines inside their scripts.
"""

from __future__ import annotations

import re
import shlex
import sys
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[1]
WORKFLOW = ROOT / ".github" / "workflows" / "matrix.yml"  # the reusable workflow: the plan, column and report jobs
CALLER = ROOT / ".github" / "workflows" / "conformance.yml"  # this repository's own call of it
DOC = ROOT / "docs" / "reusable-workflow.md"  # how another repository calls it, with an example caller
EXPECTED_FAILURES = ROOT / ".github" / "expected-failures.yml"
BIN = Path(sys.executable).parent
SHELL = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]  # GitHub's `shell: bash`


def workflow(path: Path = WORKFLOW) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    if True in data:  # YAML 1.1 reads the key `on` as a boolean
        data["on"] = data.pop(True)
    return data


def example_caller() -> str:
    """The docs' example caller: the first ```yaml block of docs/reusable-workflow.md."""
    found = re.search(r"^```yaml\n(.*?)^```$", DOC.read_text(encoding="utf-8"), re.M | re.S)
    assert found, f"{DOC.name} has no ```yaml block"
    return found.group(1)


def job(name: str, path: Path = WORKFLOW) -> dict[str, Any]:
    found = workflow(path)["jobs"][name]
    assert isinstance(found, dict)
    return found


def run_steps(job_name: str, path: Path = WORKFLOW) -> list[dict[str, Any]]:
    return [step for step in job(job_name, path)["steps"] if "run" in step]


def declared_inputs(path: Path = WORKFLOW) -> dict[str, dict[str, Any]]:
    """What ``on.workflow_call.inputs`` declares, by name."""
    found = workflow(path)["on"]["workflow_call"]["inputs"]
    assert isinstance(found, dict)
    return found


def called_with(given: dict[str, str], path: Path = WORKFLOW) -> dict[str, str]:
    """The ``inputs`` context of the called workflow when a caller passes ``given`` (its ``with:``): every declared
    input, the caller's value or the declared default, as the text an expression turns it into."""
    unknown = set(given) - set(declared_inputs(path))
    assert not unknown, f"the caller passes inputs {sorted(unknown)} that {path.name} does not declare"
    out = {}
    for name, spec in declared_inputs(path).items():
        value = given[name] if name in given else spec.get("default", "")
        out[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


def condition(step: dict[str, Any], inputs: dict[str, str]) -> bool | None:
    """A step's ``if:`` for the shapes that depend on the inputs alone: True or False; None for a condition on the
    run itself (``always()``, a step's output) that the test running the job decides."""
    text = step.get("if")
    if text is None:
        return True
    if text in ("always()", "steps.cache.outputs.cache-hit != 'true'"):
        return None
    alternatives = [part.strip() for part in str(text).split("||")]
    decided = []
    for part in alternatives:
        m = re.fullmatch(r"inputs\.(\w+) != ''", part)
        assert m, f"condition() does not know {text!r}: extend it"
        decided.append(inputs.get(m.group(1), "") != "")
    return any(decided)


def working_directory(job_name: str, step: dict[str, Any], path: Path = WORKFLOW) -> str:
    """Where a `run:` step's script runs, relative to the workspace: its own working-directory, else the job's
    default, else the workflow's (GitHub's precedence)."""
    for scope in (step, job(job_name, path).get("defaults", {}).get("run", {}),
                  workflow(path).get("defaults", {}).get("run", {})):
        if "working-directory" in scope:
            return str(scope["working-directory"])
    return "."


EXPR = re.compile(r"^\$\{\{\s*(.*?)\s*\}\}$")
OR_DEFAULT = re.compile(r"^inputs\.(\w+) \|\| (?:'([^']*)'|(\d+))$")
INPUT = re.compile(r"^inputs\.(\w+)$")
MATRIX = re.compile(r"^matrix\.(\w+)$")
# a caller passing a secret only to a live run (conformance.yml)
CALLER_KEY = re.compile(r"^inputs\.model == 'live' && secrets\.(\w+) \|\| ''$")
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
        return inputs.get(m.group(1)) or m.group(2) or m.group(3)
    if m := INPUT.match(expr):
        return inputs.get(m.group(1), "")
    if (m := MATRIX.match(expr)) and matrix is not None:
        return matrix[m.group(1)]
    if (m := KEY.match(expr)) and matrix is not None:
        name, secret = m.groups()
        assert name == secret, f"{name} must come from the secret of the same name"
        # contains() on a string is a substring test; the commas make it a test of one whole name
        live = inputs.get("model") == "live"
        return f"secret-of-{secret}" if live and name in matrix["credentials"].split(",") else ""
    raise AssertionError(f"evaluate() does not know ${{{{ {expr} }}}}: extend it")


def step_env(job_name: str, step: dict[str, Any], inputs: dict[str, str], matrix: dict[str, str] | None = None,
             path: Path = WORKFLOW) -> dict[str, str]:
    merged = {**workflow(path).get("env", {}), **job(job_name, path).get("env", {}), **step.get("env", {})}
    return {key: evaluate(value, inputs, matrix) for key, value in merged.items()}


def caller_with(dispatch: dict[str, str], path: Path = CALLER) -> dict[str, str]:
    """What a caller's ``uses:`` job passes (its ``with:``, evaluated), given the caller's own inputs (a dispatch's;
    none for push, pull_request, schedule)."""
    [calling] = [body for body in workflow(path)["jobs"].values() if "uses" in body]
    return {key: evaluate(value, dispatch) for key, value in calling.get("with", {}).items()}


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
