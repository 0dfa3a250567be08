"""The workflow's plan, column and report jobs, run here exactly as .github/workflows/conformance.yml writes
them, against the real engine: each job in a clean checkout with a clean HOME (no venv, no image cache), the
column jobs once with the cache missed (the image built as `make run` builds it, then saved) and once with the
cache restored (the saved image loaded), and the report assembled from the column jobs' artifacts.

What GitHub itself does between the steps is done here by hand, as plainly as possible: `actions/checkout`
is a copy of the tree, `actions/setup-python` a Python 3.11 first on PATH, `actions/cache` a copy of the saved
paths into the next HOME (cache-hit 'true') or nothing (cache-hit 'false'), and upload/download-artifact a copy
of the run directory into the report job's `cells/column-<job>/`. The one step not run is the hosted runner's
preparation (sudo, Ubuntu's AppArmor and subuid settings for mmdebstrap): on this Debian machine as root,
`make engine` (scripts/ensure-docker.sh) provisions what it provisions there.

The promise checked: the report of the matrix assembled from the column jobs equals the report of the same
cells run by one local `runner run`, grades and pins alike, whether the image came from the cache or not.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.github_workflow import ROOT, SHELL, evaluate, job, outputs, workflow

HARNESSES = "reference,codex"
# rows that run a turn everywhere, one the MCP columns declare not applicable, one not implemented upstream; with
# the small budget below the plan splits the codex column in two (its three cells, 5 s each, exceed 12 s)
CASES = "escalation,escalation-refused,host-policy-denied,hidden-tool,forged-grant"
INPUTS = {"harness": HARNESSES, "case": CASES, "model": "scripted", "shard_minutes": "0.2"}
HOSTED_RUNNER_ONLY = "Prepare the hosted runner for an offline image build (a cache miss)"
TRANSIENT = ("startedAt", "elapsedSeconds", "files", "model")  # when it ran, how long, where; not what it found
STEP_SECONDS: list[tuple[str, str, float]] = []  # (job, step, wall seconds): printed with -s, read by measurements


def clean_env(home: Path, bin_dir: Path) -> dict[str, str]:
    """The machine's environment with a HOME of its own and nothing of this test run's Python or caches."""
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "RUNNER_CACHE_DIR", "XDG_CACHE_HOME", "PIP_CACHE_DIR")
    base = {k: v for k, v in os.environ.items() if k not in drop}
    return {**base, "HOME": str(home), "PATH": f"{bin_dir}{os.pathsep}{base['PATH']}", "CI": "true",
            "GITHUB_ACTIONS": "true"}


@pytest.fixture(scope="module")
def machine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """What a hosted runner has after checkout and setup-python: the repository's files and a Python 3.11."""
    root = tmp_path_factory.mktemp("hosted-runner")
    checkout = root / "repo"
    shutil.copytree(ROOT, checkout, ignore=shutil.ignore_patterns(
        ".git", ".venv", "runs", "*.egg-info", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", "build",
    ))
    python = root / "setup-python"
    subprocess.run([sys.executable, "-m", "venv", str(python)], check=True, timeout=300)
    return {"root": root, "checkout": checkout, "bin": python / "bin"}


def run_job(name: str, machine: dict[str, Path], home: Path, matrix: dict[str, str] | None,
            cache_hit: bool | None = None) -> dict[str, dict[str, str]]:
    """Run one job's steps in order, as written; returns each step's outputs by id. ``cache_hit`` is what the
    cache step answered (None: the job has no cache step)."""
    home.mkdir(parents=True, exist_ok=True)
    env = clean_env(home, machine["bin"])
    steps_out: dict[str, dict[str, str]] = {}
    if cache_hit is not None:
        steps_out["cache"] = {"cache-hit": "true" if cache_hit else "false"}
    for n, step in enumerate(job(name)["steps"]):
        if "run" not in step or step.get("name") == HOSTED_RUNNER_ONLY:
            continue
        condition = step.get("if")
        if condition == "steps.cache.outputs.cache-hit != 'true'":
            if cache_hit:
                continue
        elif condition not in (None, "always()"):
            raise AssertionError(f"{name}: {step.get('name')!r}: this test does not know the condition {condition!r}")
        output = machine["root"] / f"{name}-{matrix['job'] if matrix else ''}-{n}.out"
        output.unlink(missing_ok=True)
        merged = {**workflow().get("env", {}), **job(name).get("env", {}), **step.get("env", {})}
        step_env = {key: _evaluate(value, steps_out, matrix) for key, value in merged.items()}
        script = machine["root"] / f"{name}-step-{n}.sh"
        script.write_text(step["run"], encoding="utf-8")
        started = time.monotonic()
        done = subprocess.run([*SHELL, str(script)], cwd=machine["checkout"], capture_output=True, text=True,
                              timeout=1200, env={**env, **step_env, "GITHUB_OUTPUT": str(output),
                                                 "GITHUB_STEP_SUMMARY": str(summary_file(machine, name))})
        label = step.get("name") or step["run"].splitlines()[0]
        STEP_SECONDS.append((f"{name} {matrix['job'] if matrix else ''}".strip(), label, time.monotonic() - started))
        print(f"{STEP_SECONDS[-1][0]:<24} {STEP_SECONDS[-1][2]:7.1f} s  {label}")
        assert done.returncode == 0, f"{name} / {label}:\n{done.stdout}\n{done.stderr}"
        if "id" in step:
            steps_out[step["id"]] = outputs(output)
    return steps_out


def summary_file(machine: dict[str, Path], job_name: str) -> Path:
    """What GitHub shows as the job's summary ($GITHUB_STEP_SUMMARY)."""
    return machine["root"] / f"{job_name}-step-summary.md"


def _evaluate(value: Any, steps_out: dict[str, dict[str, str]], matrix: dict[str, str] | None) -> str:
    text = str(value)
    for step_id, values in steps_out.items():
        for key, got in values.items():
            text = text.replace(f"${{{{ steps.{step_id}.outputs.{key} }}}}", got)
    return evaluate(text, INPUTS, matrix)


def cache_paths(home: Path) -> list[tuple[Path, bool]]:
    """The column job's cache step paths under ``home``: (path, excluded)."""
    step = next(s for s in job("column")["steps"] if s.get("uses", "").startswith("actions/cache@"))
    found = []
    for line in step["with"]["path"].split():
        excluded = line.startswith("!")
        found.append((Path(line.lstrip("!").replace("~", str(home), 1)), excluded))
    return found


def restore_cache(saved_home: Path, new_home: Path) -> None:
    """actions/cache restoring what the cache step saved from ``saved_home`` into ``new_home``."""
    paths = cache_paths(saved_home)
    excluded = [p for p, ex in paths if ex]
    for path, ex in paths:
        if ex or not path.exists():
            continue
        target = new_home / path.relative_to(saved_home)
        shutil.copytree(path, target, symlinks=True, ignore=lambda d, names: [
            n for n in names if any(Path(d, n) == e for e in excluded)
        ])


def results(directory: Path) -> dict[str, dict[str, Any]]:
    """Every cell under ``directory``, by id, without what says only when and where it ran."""
    found = {}
    for file in sorted(directory.rglob("result.json")):
        data = json.loads(file.read_text(encoding="utf-8"))
        found[data["cell"]["id"]] = {k: v for k, v in data.items() if k not in TRANSIENT}
    return found


def manifest(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop("gate", None)  # the report job gates; a local run only reports
    return data


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same cells run by one local `runner run`, from this checkout's own venv."""
    out = tmp_path_factory.mktemp("local") / "run"
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "runner"), "run", "--harness", HARNESSES, "--case", CASES,
                           "--out", str(out)], capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return out


def test_the_column_jobs_as_written_give_the_same_report_as_one_local_run(
    machine: dict[str, Path], local_run: Path
) -> None:
    root = machine["root"]
    plan = run_job("plan", machine, root / "home-plan", None)
    jobs = json.loads(plan["plan"]["matrix"])["include"]
    # one job per column, codex split in two by the small budget; the declared rows start none
    assert [j["job"] for j in jobs] == ["reference", "codex-1of2", "codex-2of2"]

    cold = root / "artifacts-cold"
    for entry in jobs:
        home = root / f"home-{entry['job']}"
        run_job("column", machine, home, entry, cache_hit=False)
        # what the cache step will store: the saved image and its staged inputs, never the base tarballs
        saved = home / ".cache" / "runner" / "saved"
        assert any(saved.iterdir()), f"{entry['job']}: a cache miss saves the image for the next run"
        shutil.copytree(machine["checkout"] / "runs" / entry["job"], cold / f"column-{entry['job']}")

    warm = root / "artifacts-warm"
    for entry in jobs:  # a later workflow run: the cache restored into a clean HOME
        home = root / f"home-warm-{entry['job']}"
        restore_cache(root / f"home-{entry['job']}", home)
        assert not (home / ".cache" / "runner" / "base").exists()
        shutil.rmtree(machine["checkout"] / "runs" / entry["job"])
        run_job("column", machine, home, entry, cache_hit=True)
        shutil.copytree(machine["checkout"] / "runs" / entry["job"], warm / f"column-{entry['job']}")

    local = results(local_run)
    for artifacts in (cold, warm):
        reported = assemble_and_report(machine, artifacts)
        assert sorted(results(reported)) == sorted(local), "the same cells, each once"
        assert results(reported) == local, "grades, turns and pins alike"
        assert manifest(machine["checkout"] / "manifest.json") == manifest(local_run / "manifest.json")
        markdown = (machine["checkout"] / "report.md").read_text(encoding="utf-8")
        assert "**passed**" in markdown
        assert summary_file(machine, "report").read_text(encoding="utf-8") == markdown  # the run's summary page


def assemble_and_report(machine: dict[str, Path], artifacts: Path) -> Path:
    """The report job: the artifacts downloaded into cells/, then its steps as written."""
    cells = machine["checkout"] / "cells"
    shutil.rmtree(cells, ignore_errors=True)
    shutil.copytree(artifacts, cells)
    for name in ("report.md", "junit.xml", "manifest.json"):
        (machine["checkout"] / name).unlink(missing_ok=True)
    summary_file(machine, "report").unlink(missing_ok=True)
    run_job("report", machine, machine["root"] / "home-report", None)
    return cells
