"""The GitHub Actions workflows of the matrix as far as they can be checked off GitHub: the reusable workflow
(.github/workflows/matrix.yml, on: workflow_call), this repository's call of it (conformance.yml) and the example
caller in docs/reusable-workflow.md. actionlint passes, every action is pinned by commit, the token is read-only,
no expression is spliced into a script, every input a job reads is declared and every declared one is read, every
secret is declared, passed by name and reaches only the run step of a column that reads it, the plan job's scripts
run as written (as a caller's inputs make them) and write a matrix ``fromJSON`` can read, and every runner command
the column and report jobs run parses with the real CLI. The jobs themselves are run as written, as GitHub's hosted
runner's user, in tests/integration/test_workflow_jobs.py.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest
import typer

from runner.cli import app
from runner.harnesses.profile import find_profile, known_harnesses
from runner.matrix.cells import cells
from runner.matrix.github import DEFAULT_SHARD_MINUTES, KEYS, credentials, dumps, github_matrix
from tests.github_workflow import (
    BIN,
    CALLER,
    CALLER_KEY,
    EXPECTED_FAILURES,
    EXPR,
    KEY,
    ROOT,
    SHELL,
    WORKFLOW,
    assignments,
    called_with,
    caller_with,
    commands,
    condition,
    declared_inputs,
    example_caller,
    job,
    outputs,
    run_steps,
    step_env,
    workflow,
    working_directory,
)

# --- static checks ------------------------------------------------------------------------------------------


def _tool(name: str) -> str | None:
    beside = BIN / name
    return str(beside) if beside.is_file() else shutil.which(name)


def test_actionlint_passes_with_no_output(tmp_path: Path) -> None:
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
    # the docs' example caller, as a workflow file of a caller's repository (actionlint reads .github/workflows/)
    example = tmp_path / ".github" / "workflows" / "conformance.yml"
    example.parent.mkdir(parents=True)
    example.write_text(example_caller(), encoding="utf-8")
    for path, cwd in ((WORKFLOW, ROOT), (CALLER, ROOT), (example, tmp_path)):
        result = subprocess.run(
            [actionlint, "-no-color", f"-shellcheck={shellcheck or ''}", "-pyflakes=", str(path)],
            capture_output=True, text=True, cwd=cwd, timeout=120,
        )
        assert (result.returncode, result.stdout + result.stderr) == (0, ""), path


def test_every_action_is_pinned_to_a_full_commit_with_its_version_beside_it() -> None:
    for path in (WORKFLOW, CALLER):
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
        uses = [line for line in lines if re.match(r"^(- )?uses:", line)]
        assert uses, f"{path.name} uses actions"
        for line in uses:
            if line == "uses: ./.github/workflows/matrix.yml":  # the reusable workflow of the caller's own commit
                continue
            assert re.fullmatch(r"(- )?uses: [\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*", line), line


def test_the_token_is_read_only_and_no_job_widens_it() -> None:
    for path in (WORKFLOW, CALLER):
        data = workflow(path)
        assert data["permissions"] == {"contents": "read"}, path.name
        for name, body in data["jobs"].items():
            assert "write" not in str(body.get("permissions", "")), (path.name, name)


def test_triggers_and_dispatch_inputs() -> None:
    on = workflow(CALLER)["on"]
    assert set(on) == {"push", "pull_request", "schedule", "workflow_dispatch"}
    # pushes only to the default branch: a branch with a pull request is not run twice
    assert on["push"] == {"branches": ["main"]} and on["pull_request"] is None
    assert len(on["schedule"]) == 1 and len(on["schedule"][0]["cron"].split()) == 5
    inputs = on["workflow_dispatch"]["inputs"]
    assert set(inputs) == {"harness", "case", "model", "shard_minutes", "trials"}
    assert inputs["harness"]["default"] == inputs["case"]["default"] == "all"
    assert inputs["model"]["options"] == ["scripted", "live"] and inputs["model"]["default"] == "scripted"
    assert float(inputs["shard_minutes"]["default"]) == DEFAULT_SHARD_MINUTES
    # trials: a number, one run per cell unless asked, reaching the plan and the column's runner run through env:
    assert inputs["trials"]["type"] == "number" and inputs["trials"]["default"] == 1
    plan_step = next(s for s in job("plan")["steps"] if s.get("id") == "plan")
    for step in (plan_step, run_step()):
        assert step["env"]["TRIALS"] == "${{ inputs.trials || '1' }}"
        assert '--trials "$TRIALS"' in step["run"]
    assert workflow(CALLER)["concurrency"]["cancel-in-progress"] == "${{ github.event_name == 'pull_request' }}"
    # the called workflow has no concurrency of its own: one group, the caller's, or the two would wait on each other
    assert "concurrency" not in workflow()


def test_the_reusable_workflow_takes_the_dispatch_inputs_and_the_callers_own() -> None:
    """workflow_call: every input the dispatch has (a choice becomes a string, workflow_call has no choice type;
    the plan job refuses any other model), with the same defaults, plus the caller's expected failures and
    plugins; nothing is required, so a caller that passes nothing runs the whole matrix on the scripted model."""
    assert set(workflow()["on"]) == {"workflow_call"}
    dispatch = workflow(CALLER)["on"]["workflow_dispatch"]["inputs"]
    called = declared_inputs()
    assert set(called) == set(dispatch) | {"expected_failures", "plugins"}
    for name, spec in called.items():
        assert spec.get("required", False) is False and spec.get("description"), name
        if name in dispatch:
            assert spec["type"] == ("string" if dispatch[name]["type"] == "choice" else dispatch[name]["type"]), name
            assert spec["default"] == dispatch[name]["default"], name
    assert called["expected_failures"] == {**called["expected_failures"], "type": "string", "default": ""}
    assert called["plugins"] == {**called["plugins"], "type": "string", "default": ""}


def test_every_input_read_is_declared_and_every_declared_one_is_read() -> None:
    for path, declared in ((WORKFLOW, set(declared_inputs())),
                           (CALLER, set(workflow(CALLER)["on"]["workflow_dispatch"]["inputs"]))):
        text = path.read_text(encoding="utf-8")
        read = {name for e in re.findall(r"\$\{\{(.*?)\}\}", text) for name in re.findall(r"\binputs\.(\w+)", e)}
        # and in the steps' and jobs' if: (no ${{ }} there)
        for body in workflow(path)["jobs"].values():
            for cond in [body.get("if", "")] + [step.get("if", "") for step in body.get("steps", [])]:
                read |= set(re.findall(r"\binputs\.(\w+)", str(cond)))
        assert read == declared, f"{path.name}: read but not declared {sorted(read - declared)}, " \
                                 f"declared but never read {sorted(declared - read)}"


def test_conformance_calls_the_reusable_workflow_of_its_own_commit_with_the_dispatch_inputs() -> None:
    jobs = workflow(CALLER)["jobs"]
    assert list(jobs) == ["matrix"]
    calling = jobs["matrix"]
    # a ./ path: the called workflow is read from the caller's own commit, so job.workflow_sha is the one under test
    assert calling["uses"] == "./.github/workflows/matrix.yml"
    assert "steps" not in calling and calling["secrets"] != "inherit"
    # push, pull_request, schedule: no inputs, the dispatch's defaults; a dispatch: its own values, one for one
    assert called_with(caller_with({})) == called_with({"expected_failures": ".github/expected-failures.yml"})
    dispatch = {"harness": "codex", "case": "escalation", "model": "live", "shard_minutes": "7", "trials": "3"}
    assert called_with(caller_with(dispatch)) == called_with(
        {**dispatch, "expected_failures": ".github/expected-failures.yml"})
    assert (ROOT / caller_with({})["expected_failures"]).resolve() == EXPECTED_FAILURES


def test_the_readme_shows_the_docs_example_caller_as_it_is() -> None:
    """The README's caller is the docs' (which the next test checks): one text, so neither rots alone."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"```yaml\n{example_caller()}```" in readme


def test_the_docs_example_caller_calls_the_reusable_workflow_by_path_at_a_commit_with_what_it_declares(
    tmp_path: Path,
) -> None:
    example = tmp_path / "example.yml"
    example.write_text(example_caller(), encoding="utf-8")
    data = workflow(example)
    assert data["permissions"] == {"contents": "read"}
    [calling] = data["jobs"].values()
    pinned = re.fullmatch(r"[\w.-]+/runner/\.github/workflows/matrix\.yml@([0-9a-f]{40})", calling["uses"])
    assert pinned, f"pinned by a full commit: {calling['uses']}"
    if (ROOT / ".git").exists():  # a clone: the pinned commit is one of runner's that has the workflow
        found = subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e",
                                f"{pinned.group(1)}:.github/workflows/matrix.yml"],
                               capture_output=True, text=True, timeout=60)
        assert found.returncode == 0, found.stderr
    given = {key: str(value) for key, value in calling["with"].items()}
    assert set(called_with(given)) == set(declared_inputs())  # every input it passes is declared
    assert given["expected_failures"] and given["plugins"].strip(), "the example shows the caller's own inputs"
    assert calling["secrets"] != "inherit" and calling["secrets"]
    declared = set(workflow()["on"]["workflow_call"]["secrets"])
    for name, value in calling["secrets"].items():
        found_expr = EXPR.match(str(value))
        assert name in declared and found_expr and (m := CALLER_KEY.match(found_expr.group(1))) and m.group(1) == name


def test_every_secret_is_declared_passed_by_name_and_only_to_a_live_run() -> None:
    declared = set(workflow()["on"]["workflow_call"]["secrets"])
    assert all(spec == {"required": False} for spec in workflow()["on"]["workflow_call"]["secrets"].values())
    # what the column's run step reads is exactly what is declared: each harness's credential, under its own name
    named = {name for h in known_harnesses() for name in credentials(find_profile(h))}
    read = set(re.findall(r"\bsecrets\.(\w+)", WORKFLOW.read_text(encoding="utf-8")))
    assert named <= declared and read == declared, (sorted(named - declared), sorted(read ^ declared))
    passed = workflow(CALLER)["jobs"]["matrix"]["secrets"]
    assert set(passed) == declared
    for name, value in passed.items():  # by name, from the secret of the same name, and only to a live run
        found = EXPR.match(str(value))
        assert found and (m := CALLER_KEY.match(found.group(1))) and m.group(1) == name, (name, value)


def test_no_expression_is_spliced_into_a_script() -> None:
    # script injection: every value reaches a script through env:, never through ${{ }} in its text
    for name, body in workflow()["jobs"].items():
        for step in body["steps"]:
            assert "${{" not in step.get("run", ""), f"{name}: {step.get('name')}"


def test_the_jobs_are_wired_plan_column_report() -> None:
    jobs = workflow()["jobs"]
    assert set(jobs) == {"plan", "harness", "report"}
    assert jobs["plan"]["outputs"]["matrix"] == "${{ steps.plan.outputs.matrix }}"
    harness = jobs["harness"]
    assert harness["needs"] == "plan"
    assert harness["strategy"] == {"fail-fast": False, "matrix": "${{ fromJSON(needs.plan.outputs.matrix) }}"}
    assert harness["runs-on"] == "ubuntu-latest" and harness["timeout-minutes"] > 0
    # the empty matrix the column job is skipped on is exactly what github_matrix gives for no cells
    assert harness["if"] == f"needs.plan.outputs.matrix != '{dumps(github_matrix([]))}'"
    assert jobs["report"]["needs"] == ["plan", "harness"]
    assert jobs["report"]["if"].startswith("always()")
    expressions = re.findall(r"\$\{\{(.*?)\}\}", WORKFLOW.read_text(encoding="utf-8"))
    matrix_keys = {key for e in expressions for key in re.findall(r"\bmatrix\.(\w+)", e)}
    assert {"job", "image", "harness", "shard", "credentials"} <= matrix_keys
    assert matrix_keys <= set(KEYS), "the workflow reads only keys every matrix entry has"


def test_every_column_uploads_its_run_directory_whatever_the_exit_code() -> None:
    steps = job("harness")["steps"]
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert upload["if"] == "always()"
    assert upload["with"]["name"] == "harness-${{ matrix.job }}"
    # an action's paths are the workspace's; the scripts run in runner/ (the workflow's default working directory)
    assert working_directory("harness", run_step()) == RUNNER_DIR
    assert '--out "runs/$JOB"' in run_step()["run"]
    assert upload["with"]["path"] == f"{RUNNER_DIR}/runs/${{{{ matrix.job }}}}/"
    download = next(s for s in job("report")["steps"] if s.get("uses", "").startswith("actions/download-artifact@"))
    # no merge-multiple: each artifact in a directory of its own, so the jobs' own report files never collide
    assert download["with"] == {"pattern": "harness-*", "path": f"{RUNNER_DIR}/cells"}


RUNNER_DIR = "runner"  # where every job checks runner out, and where its scripts run
CALLER_DIR = "caller"  # where a job that reads the caller's files checks the caller out


def checkouts(job_name: str) -> list[dict[str, Any]]:
    return [s for s in job(job_name)["steps"] if s.get("uses", "").startswith("actions/checkout@")]


def test_every_job_checks_out_runner_at_the_called_workflows_own_commit_and_the_caller_only_where_read() -> None:
    """job.workflow_repository and job.workflow_sha are the called workflow's own (the github context is the
    caller's: github.repository, github.sha, github.workflow_sha name the caller's run), so a caller that pins
    the workflow by commit runs runner's code of that commit, in whatever repository it runs."""
    assert workflow()["defaults"]["run"] == {"shell": "bash", "working-directory": RUNNER_DIR}
    reads_caller = {"plan": "inputs.plugins != ''", "harness": "inputs.plugins != ''",
                    "report": "inputs.plugins != '' || inputs.expected_failures != ''"}
    for job_name, when in reads_caller.items():
        steps = job(job_name)["steps"]
        own, caller = checkouts(job_name)
        assert steps.index(own) == 0 and "if" not in own, job_name
        assert own["with"] == {"repository": "${{ job.workflow_repository }}", "ref": "${{ job.workflow_sha }}",
                               "path": RUNNER_DIR, "persist-credentials": False}, job_name
        # the caller's repository at the run's commit (checkout's defaults), beside runner, only when read
        assert caller["with"] == {"path": CALLER_DIR, "persist-credentials": False} and caller["if"] == when
        setup = next(s for s in steps if s.get("uses", "").startswith("actions/setup-python@"))
        assert setup["with"]["cache-dependency-path"] == f"{RUNNER_DIR}/requirements/runtime.lock"
        for step in steps:  # nothing else reads the caller's tree but the plugins' install and the expected failures
            if working_directory(job_name, step) == CALLER_DIR or "../caller/" in step.get("run", ""):
                assert step.get("name") in ("Install the caller's plugins", "Report and gate"), step.get("name")


def test_the_callers_plugins_are_installed_in_every_job_from_its_checkout_after_runner_and_before_runner_runs(
) -> None:
    installs = []
    for job_name in ("plan", "harness", "report"):
        steps = job(job_name)["steps"]
        [install] = [s for s in steps if s.get("name") == "Install the caller's plugins"]
        installs.append(install)
        at = steps.index(install)
        venv = next(n for n, s in enumerate(steps) if s.get("run") == "make venv EXTRAS=")
        first_runner = next(n for n, s in enumerate(steps) if ".venv/bin/runner " in s.get("run", ""))
        assert venv < at < first_runner, job_name
        assert install["if"] == "inputs.plugins != ''" and working_directory(job_name, install) == CALLER_DIR
        assert install["env"] == {"PLUGINS": "${{ inputs.plugins }}"}
    assert all(install == installs[0] for install in installs), "one step, the same in every job"
    [pip] = commands(installs[0]["run"], "../runner/.venv/bin/pip")
    # each requirement one argument after --, never an option; the lock's versions as constraints
    assert pip[0] == "install" and pip[-2:] == ["--", "${requirements[@]}"] and "--constraint" in pip


def test_the_image_is_cached_under_its_key_built_on_a_miss_and_saved_for_the_next_run() -> None:
    steps = job("harness")["steps"]
    names = [s.get("id") or s.get("name") or s.get("uses", "").split("@")[0] for s in steps]
    cache = next(s for s in steps if s.get("uses", "").startswith("actions/cache@"))
    assert cache["id"] == "cache"
    assert cache["with"]["path"].split() == ["~/.cache/runner", "!~/.cache/runner/base"]
    assert cache["with"]["key"] == "${{ runner.os }}-${{ steps.key.outputs.key }}"
    assert cache["with"]["restore-keys"].splitlines() == ["${{ runner.os }}-runner-image-${{ matrix.image }}-"]
    assert names.index("key") < names.index("cache")
    order = [split_command(words)[0] for _, words in runner_lines("harness")]
    assert order == [["images", "cache-key"], ["images", "load"], ["images", "build"], ["images", "save"], ["run"]]
    miss = "steps.cache.outputs.cache-hit != 'true'"
    for step in steps:
        paths = [split_command(words)[0] for words in commands(step.get("run", ""), ".venv/bin/runner")]
        needs_a_miss = paths == [["images", "save"]] or "mmdebstrap" in step.get("run", "")
        assert (step.get("if") == miss) == needs_a_miss, step.get("name")


# --- expressions, evaluated the way GitHub would for the few shapes the workflow uses -----------------------

def run_step() -> dict[str, Any]:
    return next(s for s in job("harness")["steps"] if ".venv/bin/runner run " in s.get("run", ""))


def test_a_model_key_reaches_only_a_live_run_of_a_column_that_reads_it() -> None:
    mapped = {
        name for name, value in run_step()["env"].items()
        if (found := EXPR.match(str(value))) and KEY.match(found.group(1))
    }
    named = {name for h in known_harnesses() for name in credentials(find_profile(h))}
    assert named <= mapped, f"credentials no run-step env maps from a secret: {sorted(named - mapped)}"
    for entry in github_matrix(cells())["include"]:
        for model in ("scripted", "live", ""):
            env = step_env("harness", run_step(), {"model": model} if model else {}, entry)
            given = {name for name in mapped if env[name]}
            wanted = set(filter(None, entry["credentials"].split(","))) if model == "live" else set()
            assert given == wanted, (entry["job"], model)
    for name, body in workflow()["jobs"].items():  # and nowhere else
        for step in body["steps"]:
            if (name, step.get("run")) != ("harness", run_step()["run"]):
                assert "secrets." not in str(step.get("env", {})) + str(step.get("with", {})), (name, step)
        assert "secrets." not in str(body.get("env", {})), name
    assert "secrets." not in str(workflow().get("env", {}))


# --- the plan job, run as written ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What the jobs' first step gives them: runner's files (no venv, no caches) in runner/ of the workspace."""
    dest = tmp_path_factory.mktemp("workspace") / RUNNER_DIR
    shutil.copytree(ROOT, dest, ignore=shutil.ignore_patterns(
        ".git", ".venv", "runs", "*.egg-info", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", "build",
    ))
    return dest


@pytest.fixture(scope="module")
def setup_python(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """What actions/setup-python gives the job: a Python 3.11 whose pip and scripts are first on PATH. Here a
    fresh venv, never this one: the job's `make venv EXTRAS=` makes the checkout's own .venv from the lock (pip's
    download cache serves it), and must not touch the developer's environment."""
    venv = tmp_path_factory.mktemp("setup-python") / "python"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    return venv / "bin"


def run_job_scripts(job_name: str, checkout: Path, bin_dir: Path, inputs: dict[str, str], output: Path
                    ) -> subprocess.CompletedProcess[str]:
    """The job's `run:` steps, in order, each in its working directory under the workspace (the checkout's
    parent), skipped when its condition on the inputs is false; ``inputs`` the called workflow's (called_with)."""
    base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")}
    workspace = checkout.parent
    result = subprocess.CompletedProcess[str]([], 0, "", "")
    for n, step in enumerate(run_steps(job_name)):
        if condition(step, inputs) is False:
            continue
        script = workspace / f"{job_name}-step-{n}.sh"
        script.write_text(step["run"], encoding="utf-8")
        env = {**base, **step_env(job_name, step, inputs), "PATH": f"{bin_dir}{os.pathsep}{base['PATH']}",
               "GITHUB_OUTPUT": str(output), "CI": "true", "GITHUB_ACTIONS": "true",
               "RUNNER_TEMP": str(workspace)}
        result = subprocess.run([*SHELL, str(script)], cwd=workspace / working_directory(job_name, step), env=env,
                                capture_output=True, text=True, timeout=600)
        if result.returncode != 0:
            return result
    return result


@pytest.mark.parametrize(
    ("dispatch", "harnesses", "cases"),
    [
        ({}, "all", "all"),  # push, pull_request: no inputs
        ({"harness": "all", "case": "all", "model": "scripted"}, "all", "all"),
        ({"harness": "codex,reference", "case": "escalation", "model": "live"}, "codex,reference", "escalation"),
        ({"harness": "codex", "case": "escalation"}, "codex", "escalation"),  # one cell: one job
        ({"harness": "codex,reference", "case": "all", "trials": "3"}, "codex,reference", "all"),
    ],
    ids=["push", "dispatch-all", "dispatch-filtered", "dispatch-one-cell", "dispatch-trials"],
)
def test_the_plan_job_writes_the_matrix_output(
    checkout: Path, setup_python: Path, tmp_path: Path, dispatch: dict[str, str], harnesses: str, cases: str
) -> None:
    """This repository's triggers, through conformance.yml's call: the inputs it passes the reusable workflow."""
    output = tmp_path / "github_output"
    result = run_job_scripts("plan", checkout, setup_python, called_with(caller_with(dispatch)), output)
    assert result.returncode == 0, result.stdout + result.stderr
    written = outputs(output)
    assert set(written) == {"matrix"}
    trials = int(dispatch.get("trials", "1"))
    assert written["matrix"] == dumps(github_matrix(cells(harnesses, cases), DEFAULT_SHARD_MINUTES, trials))
    assert (checkout / "matrix.json").read_text(encoding="utf-8").strip() == written["matrix"]


def test_a_caller_that_passes_nothing_plans_the_whole_matrix(checkout: Path, setup_python: Path, tmp_path: Path
                                                             ) -> None:
    output = tmp_path / "github_output"
    result = run_job_scripts("plan", checkout, setup_python, called_with({}), output)
    assert result.returncode == 0, result.stdout + result.stderr
    assert outputs(output)["matrix"] == dumps(github_matrix(cells("all", "all"), DEFAULT_SHARD_MINUTES, 1))


@pytest.mark.parametrize("name", ["harness", "model", "plugins"])
def test_a_hostile_input_stays_a_value(checkout: Path, setup_python: Path, tmp_path: Path, name: str) -> None:
    """A caller's input reaches a script as one value: the harness is no harness runner knows, the model is
    refused by the plan, the plugin is a requirement pip cannot parse; nothing of it runs."""
    marker = tmp_path / "pwned"
    output = tmp_path / "github_output"
    (checkout.parent / CALLER_DIR).mkdir(exist_ok=True)  # the caller's checkout, where the plugins install runs
    result = run_job_scripts("plan", checkout, setup_python, called_with({name: f'x"; touch {marker}; echo "'}),
                             output)
    assert result.returncode != 0
    expected = {"harness": "no such harness", "model": "the input model is scripted or live",
                "plugins": "Invalid"}[name]  # pip: an invalid requirement (or marker: after the ;)
    assert expected in result.stderr, result.stderr
    assert not marker.exists()
    assert "matrix" not in outputs(output)


# --- the cell and report jobs: every runner command parses with the real CLI --------------------------------


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


def test_the_column_and_report_jobs_use_the_repos_own_commands() -> None:
    column_scripts = [step["run"] for step in run_steps("harness")]
    assert [s for s in column_scripts if re.search(r"^make ", s, re.M)] == ["make venv EXTRAS=", "make engine"]
    for job_name in ("plan", "report"):  # runner from the lock, as a column job and the README set it up
        assert [s["run"] for s in run_steps(job_name) if re.search(r"^make ", s["run"], re.M)] == ["make venv EXTRAS="]
    assert [split_command(words)[0] for _, words in runner_lines("plan")] == [["matrix"]]
    assert [path for _, words in runner_lines("harness") for path in [split_command(words)[0]]] == [
        ["images", "cache-key"], ["images", "load"], ["images", "build"], ["images", "save"], ["run"]
    ]
    assert [split_command(words)[0] for _, words in runner_lines("report")] == [["run"], ["report"]]
    assert EXPECTED_FAILURES.is_file()
    for job_name in ("harness", "report"):
        for step in run_steps(job_name):
            for words in commands(step["run"], "make"):
                made = subprocess.run(["make", "-n", "-C", str(ROOT), *words], capture_output=True, text=True)
                assert made.returncode == 0, f"make {' '.join(words)}: {made.stderr}"


def test_the_report_page_is_uploaded_with_the_cells_it_links_to_and_the_summary_says_where() -> None:
    """report.html links to the cells' files relative to itself (cells/<artifact>/<cell>/stdout.log ...): the report
    job's artifact carries the page and the downloaded cells at the same places."""
    steps = job("report")["steps"]
    [words] = [words for _, words in runner_lines("report") if split_command(words)[0] == ["report"]]
    page = words[words.index("--html") + 1]
    download = next(s for s in steps if s.get("uses", "").startswith("actions/download-artifact@"))
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact@"))
    assert f"{RUNNER_DIR}/{words[1]}" == download["with"]["path"], "the report reads the cells where downloaded"
    assert upload["if"] == "always()"
    assert {f"{RUNNER_DIR}/{page}", download["with"]["path"] + "/"} <= set(upload["with"]["path"].split())
    summary = next(s for s in steps if s.get("name") == "Summary")
    assert summary["if"] == "always()" and page in summary["run"] and upload["with"]["name"] in summary["run"]


@pytest.mark.parametrize("job_name", ["harness", "report"])
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
    (tmp_path / "runs").mkdir()
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
