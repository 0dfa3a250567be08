"""The GitHub Actions workflow (.github/workflows/conformance.yml) as far as it can be checked off GitHub:
actionlint passes, every action is pinned by commit, the token is read-only, no expression is spliced into a
script, model keys reach only the columns that read them, the plan job's scripts run as written and write a
matrix ``fromJSON`` can read, and every runner command the cell and report jobs run parses with the real CLI.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import typer
import yaml

from runner.cli import app
from runner.harnesses.profile import find_profile, known_harnesses
from runner.matrix.cells import cells
from runner.matrix.github import KEYS, MatrixTooLarge, credentials, dumps, github_matrix

# Known since the deepseek column became runnable (issue 11): 9 runnable columns x 32 rows = 288 jobs, over
# GitHub's 256, so the default plan (--harness all --case all) fails. Strict: these fail loudly once it fits.
WHOLE_MATRIX_TOO_LARGE = "the whole shipped matrix is 288 jobs > 256 (issue 11, for the lead)"
TOO_LARGE = pytest.mark.xfail(strict=True, raises=MatrixTooLarge, reason=WHOLE_MATRIX_TOO_LARGE)
PLAN_FAILS = pytest.mark.xfail(strict=True, raises=AssertionError, reason=WHOLE_MATRIX_TOO_LARGE)
ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / ".github" / "workflows" / "conformance.yml"
EXPECTED_FAILURES = ROOT / ".github" / "expected-failures.yml"
BIN = Path(sys.executable).parent
SHELL = ["bash", "--noprofile", "--norc", "-eo", "pipefail"]  # GitHub's `shell: bash`



def workflow() -> dict[str, Any]:
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert isinstance(data, dict)
    if True in data:  # YAML 1.1 reads the key `on` as a boolean
        data["on"] = data.pop(True)
    return data


def job(name: str) -> dict[str, Any]:
    found = workflow()["jobs"][name]
    assert isinstance(found, dict)
    return found


def run_steps(job_name: str) -> list[dict[str, Any]]:
    return [step for step in job(job_name)["steps"] if "run" in step]


# --- static checks ------------------------------------------------------------------------------------------


def _tool(name: str) -> str | None:
    beside = BIN / name
    return str(beside) if beside.is_file() else shutil.which(name)


def test_actionlint_passes_with_no_output() -> None:
    actionlint = _tool("actionlint")
    if actionlint is None:
        pytest.fail(
            "actionlint is not installed: run `make venv` (the dev extras ship its binary; "
            "or `.venv/bin/pip install -e '.[dev]'`)"
        )
    shellcheck = _tool("shellcheck")
    if shellcheck is None:
        warnings.warn("shellcheck not found: actionlint checked the workflow without checking its scripts",
                      stacklevel=1)
    result = subprocess.run(
        [actionlint, "-no-color", f"-shellcheck={shellcheck or ''}", "-pyflakes=", str(WORKFLOW)],
        capture_output=True, text=True, cwd=ROOT, timeout=120,
    )
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_every_action_is_pinned_to_a_full_commit_with_its_version_beside_it() -> None:
    lines = [line.strip() for line in WORKFLOW.read_text(encoding="utf-8").splitlines()]
    uses = [line for line in lines if re.match(r"^(- )?uses:", line)]
    assert uses, "the workflow uses actions"
    for line in uses:
        assert re.fullmatch(r"(- )?uses: [\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*", line), line


def test_the_token_is_read_only_and_no_job_widens_it() -> None:
    data = workflow()
    assert data["permissions"] == {"contents": "read"}
    for name, body in data["jobs"].items():
        assert "write" not in str(body.get("permissions", "")), name


def test_triggers_and_dispatch_inputs() -> None:
    on = workflow()["on"]
    assert set(on) == {"push", "pull_request", "workflow_dispatch"}
    inputs = on["workflow_dispatch"]["inputs"]
    assert set(inputs) == {"harness", "case", "model"}
    assert inputs["harness"]["default"] == inputs["case"]["default"] == "all"
    assert inputs["model"]["options"] == ["scripted", "live"] and inputs["model"]["default"] == "scripted"


def test_no_expression_is_spliced_into_a_script() -> None:
    # script injection: every value reaches a script through env:, never through ${{ }} in its text
    for name, body in workflow()["jobs"].items():
        for step in body["steps"]:
            assert "${{" not in step.get("run", ""), f"{name}: {step.get('name')}"


def test_the_jobs_are_wired_plan_cell_report() -> None:
    jobs = workflow()["jobs"]
    assert jobs["plan"]["outputs"]["matrix"] == "${{ steps.plan.outputs.matrix }}"
    cell = jobs["cell"]
    assert cell["needs"] == "plan"
    assert cell["strategy"] == {"fail-fast": False, "matrix": "${{ fromJSON(needs.plan.outputs.matrix) }}"}
    assert cell["runs-on"] == "ubuntu-latest" and cell["timeout-minutes"] > 0
    # the empty matrix the cell job is skipped on is exactly what github_matrix gives for no cells
    assert cell["if"] == f"needs.plan.outputs.matrix != '{dumps(github_matrix([]))}'"
    assert jobs["report"]["needs"] == ["plan", "cell"]
    assert jobs["report"]["if"].startswith("always()")
    expressions = re.findall(r"\$\{\{(.*?)\}\}", WORKFLOW.read_text(encoding="utf-8"))
    matrix_keys = {key for e in expressions for key in re.findall(r"\bmatrix\.(\w+)", e)}
    assert {"cell", "image", "harness", "case", "condition", "credentials"} <= matrix_keys
    assert matrix_keys <= set(KEYS), "the workflow reads only keys every matrix entry has"


def test_every_cell_uploads_its_directory_whatever_the_exit_code() -> None:
    steps = job("cell")["steps"]
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()"
    assert upload["with"]["name"] == "cell-${{ matrix.cell }}"
    exec_step = next(s for s in steps if "runner exec" in s.get("run", ""))
    assert '--out "cells/$CELL"' in exec_step["run"] and upload["with"]["path"] == "cells/"
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    assert cache["with"]["path"] == "~/.cache/runner" and "hashFiles('images/**')" in cache["with"]["key"]
    download = next(s for s in job("report")["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    assert download["with"] == {"pattern": "cell-*", "path": "cells", "merge-multiple": True}


# --- expressions, evaluated the way GitHub would for the few shapes the workflow uses -----------------------

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


def exec_step() -> dict[str, Any]:
    return next(s for s in job("cell")["steps"] if ".venv/bin/runner exec" in s.get("run", ""))


@TOO_LARGE
def test_a_model_key_reaches_only_a_live_run_of_a_column_that_reads_it() -> None:
    mapped = {
        name for name, value in exec_step()["env"].items()
        if (found := EXPR.match(str(value))) and KEY.match(found.group(1))
    }
    named = {name for h in known_harnesses() for name in credentials(find_profile(h))}
    assert named <= mapped, f"credentials no exec-step env maps from a secret: {sorted(named - mapped)}"
    for entry in github_matrix(cells())["include"]:
        for model in ("scripted", "live", ""):
            env = step_env("cell", exec_step(), {"model": model} if model else {}, entry)
            given = {name for name in mapped if env[name]}
            wanted = set(filter(None, entry["credentials"].split(","))) if model == "live" else set()
            assert given == wanted, (entry["cell"], model)
    for name, body in workflow()["jobs"].items():  # and nowhere else
        for step in body["steps"]:
            if (name, step.get("run")) != ("cell", exec_step()["run"]):
                assert "secrets." not in str(step.get("env", {})) + str(step.get("with", {})), (name, step)
        assert "secrets." not in str(body.get("env", {})), name
    assert "secrets." not in str(workflow().get("env", {}))


# --- the plan job, run as written ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What actions/checkout gives the job: the repository's files (no venv, no caches)."""
    dest = tmp_path_factory.mktemp("checkout") / "repo"
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(
        ".git", ".venv", "runs", "*.egg-info", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", "build",
    ))
    return dest


@pytest.fixture(scope="module")
def setup_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What actions/setup-python gives the job: a Python 3.11 whose pip and scripts are first on PATH. Here a
    fresh venv that sees this venv's packages (so `pip install -e .` downloads no dependency), never this venv
    itself: the job's `pip install -e .` must not touch the developer's environment."""
    venv = tmp_path_factory.mktemp("setup-python") / "python"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    site = next((venv / "lib").glob("python3*/site-packages"))
    ours = next(p for p in map(Path, sys.path) if p.name == "site-packages" and p.is_relative_to(BIN.parent))
    (site / "zz-runner-venv.pth").write_text(f"import site; site.addsitedir({str(ours)!r})\n", encoding="utf-8")
    return venv / "bin"


def run_job_scripts(job_name: str, cwd: Path, bin_dir: Path, inputs: dict[str, str], output: Path
                    ) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    result = subprocess.CompletedProcess[str]([], 0, "", "")
    for n, step in enumerate(run_steps(job_name)):
        script = cwd.parent / f"{job_name}-step-{n}.sh"
        script.write_text(step["run"], encoding="utf-8")
        env = {**base, **step_env(job_name, step, inputs), "PATH": f"{bin_dir}{os.pathsep}{base['PATH']}",
               "GITHUB_OUTPUT": str(output), "CI": "true", "GITHUB_ACTIONS": "true"}
        result = subprocess.run([*SHELL, str(script)], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            return result
    return result


def outputs(path: Path) -> dict[str, str]:
    lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
    return dict(line.split("=", 1) for line in lines if "=" in line)


@pytest.mark.parametrize(
    ("inputs", "harnesses", "cases"),
    [
        pytest.param({}, "all", "all", marks=PLAN_FAILS),  # push, pull_request: no inputs
        pytest.param({"harness": "all", "case": "all", "model": "scripted"}, "all", "all", marks=PLAN_FAILS),
        ({"harness": "codex,reference", "case": "escalation", "model": "live"}, "codex,reference", "escalation"),
    ],
    ids=["push", "dispatch-all", "dispatch-filtered"],
)
def test_the_plan_job_writes_the_matrix_output(
    checkout: Path, setup_python: Path, tmp_path: Path, inputs: dict[str, str], harnesses: str, cases: str
) -> None:
    output = tmp_path / "github_output"
    result = run_job_scripts("plan", checkout, setup_python, inputs, output)
    assert result.returncode == 0, result.stdout + result.stderr
    written = outputs(output)
    assert set(written) == {"matrix"}
    assert written["matrix"] == dumps(github_matrix(cells(harnesses, cases)))  # what fromJSON will read
    assert (checkout / "matrix.json").read_text(encoding="utf-8").strip() == written["matrix"]


def test_a_hostile_input_stays_a_value(checkout: Path, setup_python: Path, tmp_path: Path) -> None:
    marker = tmp_path / "pwned"
    output = tmp_path / "github_output"
    result = run_job_scripts("plan", checkout, setup_python, {"harness": f'x"; touch {marker}; echo "'}, output)
    assert result.returncode != 0  # an unknown harness, said so by runner
    assert "no such harness" in result.stderr
    assert not marker.exists()
    assert "matrix" not in outputs(output)


# --- the cell and report jobs: every runner command parses with the real CLI --------------------------------


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


def split_command(words: list[str]) -> tuple[list[str], Any]:
    """The subcommand path (``exec``, ``images build``, ``report``) and its command object (typer's click)."""
    command: Any = typer.main.get_command(app)
    path: list[str] = []
    while isinstance(getattr(command, "commands", None), dict) and words[len(path):]:
        name = words[len(path)]
        sub = command.commands.get(name)
        assert sub is not None, f"runner has no command {' '.join([*path, name])!r}"
        command, path = sub, [*path, name]
    assert path, f"no subcommand in {words}"
    return path, command


def help_options(path: list[str]) -> set[str]:
    runner = ROOT / ".venv" / "bin" / "runner"
    assert runner.is_file(), "the workflow runs .venv/bin/runner: run `make venv`"
    result = subprocess.run([str(runner), *path, "--help"], capture_output=True, text=True, timeout=60,
                            env={**os.environ, "COLUMNS": "200", "TERM": "dumb"}, cwd=ROOT)
    assert result.returncode == 0, f"runner {' '.join(path)} --help: {result.stderr}"
    return {m.group(1) for m in re.finditer(r"^\s+(?:-\w, )?(--[a-z][\w-]*)", result.stdout, re.M)} | {
        m.group(1) for m in re.finditer(r" / (--[a-z][\w-]*)", result.stdout)
    }


def runner_lines(job_name: str) -> list[tuple[dict[str, Any], list[str]]]:
    return [(step, words) for step in run_steps(job_name) for words in commands(step["run"], ".venv/bin/runner")]


def test_the_cell_and_report_jobs_use_the_repos_own_commands() -> None:
    cell_scripts = [step["run"] for step in run_steps("cell")]
    assert any(re.search(r"^make venv engine$", s, re.M) for s in cell_scripts)
    assert [path for _, words in runner_lines("cell") for path in [split_command(words)[0]]] == [
        ["images", "build"], ["exec"]
    ]
    assert [split_command(words)[0] for _, words in runner_lines("report")] == [["report"]]
    assert EXPECTED_FAILURES.is_file()
    for job_name in ("cell", "report"):
        for step in run_steps(job_name):
            for words in commands(step["run"], "make"):
                made = subprocess.run(["make", "-n", "-C", str(ROOT), *words], capture_output=True, text=True)
                assert made.returncode == 0, f"make {' '.join(words)}: {made.stderr}"


@TOO_LARGE
@pytest.mark.parametrize("job_name", ["cell", "report"])
def test_every_runner_command_line_parses_with_the_real_cli(
    job_name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lines = runner_lines(job_name)
    assert lines, f"the {job_name} job runs runner"
    for _step, words in lines:  # every option it uses is one the subcommand's --help offers
        path, _ = split_command(words)
        used = {w.split("=", 1)[0] for w in words[len(path):] if w.startswith("--")}
        offered = help_options(path)
        assert used <= offered, f"runner {' '.join(path)}: {sorted(used - offered)} not in its --help"
    # and each line parses exactly as the CLI would parse it (without running it), for every job of the
    # matrix and both model modes, in a working directory like the job's
    (tmp_path / ".github").mkdir()
    shutil.copy(EXPECTED_FAILURES, tmp_path / ".github" / "expected-failures.yml")
    (tmp_path / "cells").mkdir()
    monkeypatch.chdir(tmp_path)
    for entry in github_matrix(cells())["include"]:
        for step, words in lines:
            for model in ("scripted", "live"):
                env = {**assignments(step["run"]), **step_env(job_name, step, {"model": model}, entry)}
                argv = [expand(word, env) for word in words]
                path, command = split_command(argv)
                try:
                    command.make_context(" ".join(["runner", *path]), argv[len(path):])
                except Exception as error:  # typer's click: a UsageError, BadParameter, ...
                    message = error.format_message() if hasattr(error, "format_message") else repr(error)
                    pytest.fail(f"runner {' '.join(argv)}: {message}")


def expand(word: str, env: dict[str, str]) -> str:
    def value(m: re.Match[str]) -> str:
        name = m.group(1) or m.group(2)
        assert name in env, f"${name} is set neither by the step's env nor by the script"
        return env[name]

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", value, word)
