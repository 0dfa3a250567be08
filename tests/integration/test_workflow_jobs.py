"""The workflow's plan, column and report jobs, run here exactly as the reusable workflow
(.github/workflows/matrix.yml) writes them, with the inputs its callers give it, against the real engine, by
GitHub's hosted runner's user: a non-root user in the ``docker`` group, with passwordless sudo, on a PATH without
this machine's Debian extras (mmdebstrap, socat) until a step installs them (tests/hosted_runner.py says what is
done to look like the hosted runner, and what cannot be). Each job in a checkout the user owns with a clean HOME (no
venv, no image cache): the column jobs once with the cache missed (the Prepare step runs with sudo, mmdebstrap
bootstraps the bases as the user, the image is built as `make run` builds it, then saved) and once with the cache
restored (Prepare skipped, the saved image loaded), each column job with an engine of its own that starts empty, as
a hosted runner's does (a second dockerd on this host, so the paths it mounts are the host's own), and the report
assembled from the column jobs' artifacts, from several and from one.

What GitHub itself does between the steps is done here by hand, as plainly as possible: `actions/checkout` is a copy
of the tree handed to the user (runner's in the workspace's runner/, the caller's in caller/),
`actions/setup-python` a Python 3.11 the user owns first on PATH, `actions/cache` a copy of the saved paths into the
next HOME (cache-hit 'true') or nothing (cache-hit 'false'), and upload/download-artifact a copy of the run
directory into the report job's `cells/`: into `cells/harness-<job>/` when the pattern matches several artifacts,
and into `cells/` itself when it matches one (download-artifact picks the path that way).

The promises checked: called as conformance.yml calls it, the report of the matrix assembled from the column jobs
equals the report of the same cells run by one local `runner run`, grades and pins alike, whether the image came
from the cache or not; called from another repository (a scratch caller with its own expected failures and a plugin
package), the plan, a reference column job and the report read the caller's files from its checkout.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from runner.harnesses.profile import shipped_profile
from runner.matrix.calibrate import rewritten
from tests.github_workflow import (
    ROOT,
    called_with,
    caller_with,
    condition,
    evaluate,
    job,
    outputs,
    workflow,
    working_directory,
)
from tests.hosted_runner import HostedRunner, empty_engine

HARNESSES = "reference,codex"
# rows that run a turn everywhere, one the MCP columns declare not applicable, one not implemented upstream, one
# the kernel refuses at admission (no job runs it: the report job writes it with the declared rows); with the
# small budget below the plan splits the codex column in two (its three cells, 5 s each, exceed 12 s)
CASES = "escalation,escalation-refused,typed-governed-views,authority-unavailable,hidden-tool,forged-grant"
DISPATCH = {"harness": HARNESSES, "case": CASES, "model": "scripted", "shard_minutes": "0.2"}
INPUTS = called_with(caller_with(DISPATCH))  # what conformance.yml passes the reusable workflow on that dispatch
# the figures the plan reads, set in the job's checkout: this test's own, not whatever the profiles' last
# calibration measured (`runner profiles calibrate` rewrites them; they are not part of a cell's profileHash, so the
# local run's pins are alike)
CELL_SECONDS = {"reference": 3.0, "codex": 5.0}
TRANSIENT = ("startedAt", "elapsedSeconds", "files", "model")  # when it ran, how long, where; not what it found
TRANSIENT_IN_TURN = ("windDownSeconds",)  # how long the CLI took to exit after the ask: a time, not a finding
# an image id is the engine's own: each job's engine builds (or loads) its own image from the same committed recipe
# (its lock.json), as each hosted runner does, so only the CLI version it reports is compared across engines
MACHINE_LOCAL_PINS = ("imageId",)
MACHINE_LOCAL_EVIDENCE = "image:"  # the tool policy cites the same image id among its evidence
# the tokens a turn used are counted from what the CLI sent its model, which holds where and as whom it ran (Codex
# sends its environment: the hosted user's uid and HOME are not root's): a cost of the run, not a finding
MACHINE_LOCAL_KEYS = ("usage",)
STEP_SECONDS: list[tuple[str, str, float]] = []  # (job, step, wall seconds): printed with -s, read by measurements


CHECKOUT_IGNORE = shutil.ignore_patterns(
    ".git", ".venv", "runs", "*.egg-info", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache", "build",
    "cells", "report.md", "junit.xml", "manifest.json", "report.html",
)


@pytest.fixture(scope="module")
def machine(hosted_runner: HostedRunner) -> Iterator[dict[str, Path]]:
    """What a hosted runner has after the checkouts and setup-python, for conformance.yml's call: runner's files in
    the workspace's runner/, and the caller's, this same repository's, in caller/, owned by its user."""
    root = hosted_runner.mkdir(hosted_runner.work / "jobs")
    workspace = root / "workspace"
    checkout = workspace / "runner"
    shutil.copytree(ROOT, checkout, ignore=CHECKOUT_IGNORE)
    for harness, seconds in CELL_SECONDS.items():
        profile = checkout / shipped_profile(harness).relative_to(ROOT)
        profile.write_text(rewritten(profile.read_text(encoding="utf-8"), seconds, "set by test_workflow_jobs"),
                           encoding="utf-8")
    shutil.copytree(ROOT, workspace / "caller", ignore=CHECKOUT_IGNORE)
    hosted_runner.own(workspace)
    yield {"root": root, "workspace": workspace, "checkout": checkout}


def run_job(name: str, runner: HostedRunner, machine: dict[str, Path], home: Path, matrix: dict[str, str] | None,
            cache_hit: bool | None = None, inputs: dict[str, str] = INPUTS, engine: str | None = None,
            fails_at: str | None = None) -> dict[str, dict[str, str]]:
    """Run one job's steps in order, as written, as the hosted runner's user; returns each step's outputs by id.
    ``cache_hit`` is what the cache step answered (None: the job has no cache step); ``engine`` the job's own
    engine (its DOCKER_HOST), where it has one. ``fails_at``: the step (by name) that must fail; as on GitHub,
    only the ``always()`` steps run after it, and its stderr is returned as ``failed``."""
    runner.mkdir(home)
    steps_out: dict[str, dict[str, str]] = {}
    failed = False
    if cache_hit is not None:
        steps_out["cache"] = {"cache-hit": "true" if cache_hit else "false"}
    for n, step in enumerate(job(name)["steps"]):
        if "run" not in step:
            continue
        decided = condition(step, inputs)  # on the inputs: decided; on the run itself: always() or the cache's
        if decided is False or (failed and step.get("if") != "always()"):
            continue
        if decided is None and step["if"] == "steps.cache.outputs.cache-hit != 'true'":
            if cache_hit:
                continue
        elif decided is None and step["if"] != "always()":
            raise AssertionError(f"{name}: {step.get('name')!r}: this test does not know the condition {step['if']!r}")
        output = machine["root"] / f"{name}-{matrix['job'] if matrix else ''}-{n}.out"
        output.unlink(missing_ok=True)
        summary = summary_file(machine, name)
        for file in (output, summary):
            if not file.exists():
                file.touch()
                runner.own(file)
        merged = {**workflow().get("env", {}), **job(name).get("env", {}), **step.get("env", {})}
        step_env = {key: _evaluate(value, steps_out, matrix, inputs) for key, value in merged.items()}
        env = runner.env(home, {**step_env, "GITHUB_OUTPUT": str(output), "GITHUB_STEP_SUMMARY": str(summary),
                                **({"DOCKER_HOST": engine} if engine else {})})
        started = time.monotonic()
        done = runner.run_step(step["run"], cwd=machine["workspace"] / working_directory(name, step), env=env)
        label = step.get("name") or step["run"].splitlines()[0]
        STEP_SECONDS.append((f"{name} {matrix['job'] if matrix else ''}".strip(), label, time.monotonic() - started))
        print(f"{STEP_SECONDS[-1][0]:<24} {STEP_SECONDS[-1][2]:7.1f} s  {label}")
        if label == fails_at:
            assert done.returncode != 0, f"{name} / {label} passed, and must fail:\n{done.stdout}\n{done.stderr}"
            failed, steps_out["failed"] = True, {"stderr": done.stderr}
            continue
        assert done.returncode == 0, f"{name} / {label} (as {runner.user}):\n{done.stdout}\n{done.stderr}"
        if "id" in step:
            steps_out[step["id"]] = outputs(output)
    assert failed == (fails_at is not None), f"{name}: no step {fails_at!r} ran"
    return steps_out


def page_links_resolve(checkout: Path, name: str) -> None:
    """Every file report.html links to is where the report job's artifact puts it: under cells/, beside the page."""
    text = (checkout / name).read_text(encoding="utf-8")
    data = json.loads(text.split('<script type="application/json" id="report-data">', 1)[1].split("</script>", 1)[0])
    hrefs = [f["href"] for c in data["cells"] for r in c["runs"] for f in r.get("files", [])]
    assert hrefs, "the cells that ran a turn link to their files"
    for href in hrefs:
        assert href.startswith("cells/") and (checkout / unquote(href)).is_file(), href


def summary_file(machine: dict[str, Path], job_name: str) -> Path:
    """What GitHub shows as the job's summary ($GITHUB_STEP_SUMMARY)."""
    return machine["root"] / f"{job_name}-step-summary.md"


def _evaluate(value: Any, steps_out: dict[str, dict[str, str]], matrix: dict[str, str] | None,
              inputs: dict[str, str]) -> str:
    text = str(value)
    for step_id, values in steps_out.items():
        for key, got in values.items():
            text = text.replace(f"${{{{ steps.{step_id}.outputs.{key} }}}}", got)
    return evaluate(text, inputs, matrix)


def cache_paths(home: Path) -> list[tuple[Path, bool]]:
    """The column job's cache step paths under ``home``: (path, excluded)."""
    step = next(s for s in job("harness")["steps"] if s.get("uses", "").startswith("actions/cache@"))
    found = []
    for line in step["with"]["path"].split():
        excluded = line.startswith("!")
        found.append((Path(line.lstrip("!").replace("~", str(home), 1)), excluded))
    return found


def restore_cache(runner: HostedRunner, saved_home: Path, new_home: Path) -> None:
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
    runner.own(new_home)


def results(directory: Path, harness: str | None = None) -> dict[str, dict[str, Any]]:
    """Every cell under ``directory`` (of one column, if given), by id, without what says only when and where it
    ran."""
    found = {}
    for file in sorted(directory.rglob("result.json")):
        data = json.loads(file.read_text(encoding="utf-8"))
        if harness is None or data["cell"]["harness"] == harness:
            pins = {k: v for k, v in data.get("pins", {}).items() if k not in MACHINE_LOCAL_PINS}
            kept = {k: v for k, v in data.items() if k not in TRANSIENT}
            if "turn" in kept:
                kept["turn"] = {k: v for k, v in kept["turn"].items() if k not in TRANSIENT_IN_TURN}
            found[data["cell"]["id"]] = without_image_evidence({**kept, "pins": pins})
    return found


def without_image_evidence(data: Any) -> Any:
    """``data`` without the image ids a tool policy's evidence cites (``image:sha256:...``, wherever a record or the
    manifest carries a policy) and without the usage counts: machine-local, as the imageId pin is."""
    if isinstance(data, dict):
        return {k: ([e for e in v if not (isinstance(e, str) and e.startswith(MACHINE_LOCAL_EVIDENCE))]
                    if k == "evidence" and isinstance(v, list) else without_image_evidence(v))
                for k, v in data.items() if k not in MACHINE_LOCAL_KEYS}
    if isinstance(data, list):
        return [without_image_evidence(item) for item in data]
    return data


def manifest(path: Path) -> dict[str, Any]:
    data = json.loads(path.read_text(encoding="utf-8"))
    data.pop("gate", None)  # the report job gates; a local run only reports
    return without_image_evidence(data)


@pytest.fixture(scope="module")
def local_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The same cells run by one local `runner run`, from this checkout's own venv."""
    out = tmp_path_factory.mktemp("local") / "run"
    done = subprocess.run([str(ROOT / ".venv" / "bin" / "runner"), "run", "--harness", HARNESSES, "--case", CASES,
                           "--out", str(out)], capture_output=True, text=True, timeout=1200, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    return out


def test_the_column_jobs_as_written_by_the_hosted_runners_user_give_the_same_report_as_one_local_run(
    hosted_runner: HostedRunner, machine: dict[str, Path], local_run: Path
) -> None:
    runner, root = hosted_runner, machine["root"]
    plan = run_job("plan", runner, machine, root / "home-plan", None)
    jobs = json.loads(plan["plan"]["matrix"])["include"]
    # one job per column, codex split in two by the small budget; the declared rows start none
    assert [j["job"] for j in jobs] == ["reference", "codex-1of2", "codex-2of2"]

    cold = root / "artifacts-cold"
    for entry in jobs:
        home = root / f"home-{entry['job']}"
        runner.fresh()  # every job is a new virtual machine: the extras a Prepare step installed are gone
        with empty_engine(root) as engine:  # ... with an engine that has no image yet
            run_job("harness", runner, machine, home, entry, cache_hit=False, engine=engine)
        # Prepare ran and installed mmdebstrap, which bootstrapped the bases as the user; nothing asked for socat
        assert runner.which("mmdebstrap") and runner.which("socat") is None
        assert list((home / ".cache" / "runner" / "base").glob("*.tar")), "a cold job bootstraps its bases"
        # what the cache step will store: the saved image and its staged inputs, never the base tarballs
        saved = home / ".cache" / "runner" / "saved"
        assert any(saved.iterdir()), f"{entry['job']}: a cache miss saves the image for the next run"
        shutil.copytree(machine["checkout"] / "runs" / entry["job"], cold / f"harness-{entry['job']}")

    warm = root / "artifacts-warm"
    for entry in jobs:  # a later workflow run: the cache restored into a clean HOME, Prepare skipped
        home = root / f"home-warm-{entry['job']}"
        runner.fresh()
        restore_cache(runner, root / f"home-{entry['job']}", home)
        assert not (home / ".cache" / "runner" / "base").exists()
        shutil.rmtree(machine["checkout"] / "runs" / entry["job"])
        with empty_engine(root) as engine:
            run_job("harness", runner, machine, home, entry, cache_hit=True, engine=engine)
        # the image came from the cache into an empty engine: nothing was bootstrapped, nothing else installed
        assert not (home / ".cache" / "runner" / "base").exists()
        assert runner.which("mmdebstrap") is None and runner.which("socat") is None
        shutil.copytree(machine["checkout"] / "runs" / entry["job"], warm / f"harness-{entry['job']}")

    local = results(local_run)
    for artifacts in (cold, warm):
        reported = assemble_and_report(runner, machine, artifacts)
        assert sorted(results(reported)) == sorted(local), "the same cells, each once"
        assert results(reported) == local, "grades, turns and pins alike"
        assert manifest(machine["checkout"] / "manifest.json") == manifest(local_run / "manifest.json")
        markdown = (machine["checkout"] / "report.md").read_text(encoding="utf-8")
        assert "**passed**" in markdown
        summary = summary_file(machine, "report").read_text(encoding="utf-8")  # the run's summary page
        assert summary.startswith(markdown) and "report.html in the artifact conformance-report" in summary
        page_links_resolve(machine["checkout"], "report.html")

    # one column dispatched alone: one artifact, which download-artifact extracts into cells/ itself
    alone = {**INPUTS, "harness": "reference"}
    reported = assemble_and_report(runner, machine, warm, only="harness-reference", inputs=alone)
    assert not (reported / "harness-reference").exists(), "one artifact lands in cells/ itself"
    assert results(reported) == results(local_run, harness="reference")
    assert "**passed**" in (machine["checkout"] / "report.md").read_text(encoding="utf-8")


def assemble_and_report(runner: HostedRunner, machine: dict[str, Path], artifacts: Path, only: str | None = None,
                        inputs: dict[str, str] = INPUTS) -> Path:
    """The report job: the artifacts downloaded into cells/ as actions/download-artifact lays them out (each in
    cells/<artifact>/ when the pattern matches several, the one's contents in cells/ itself when it matches one),
    then its steps as written."""
    cells = machine["checkout"] / "cells"
    shutil.rmtree(cells, ignore_errors=True)
    if only is None:
        shutil.copytree(artifacts, cells)
    else:
        shutil.copytree(artifacts / only, cells)
    runner.own(cells)
    for name in ("report.md", "junit.xml", "manifest.json", "report.html"):
        (machine["checkout"] / name).unlink(missing_ok=True)
    summary_file(machine, "report").unlink(missing_ok=True)
    runner.fresh()
    run_job("report", runner, machine, machine["root"] / "home-report", None, inputs=inputs)
    return cells


# --- another repository's call --------------------------------------------------------------------------------

CELL = "escalation.baseline.reference"
# what a caller's workflow passes (its `with:`): one cell, its own known failures and a plugin from its own tree
CALLER_GIVES = {
    "harness": "reference", "case": "escalation", "expected_failures": "ci/known-failures.yml",
    "plugins": "# our harness plugins, one requirement a line\n\n./plugins/acme-probe\n",
}
PLUGIN = {  # a package of the caller's: installed into runner's environment, importable there
    "pyproject.toml": '[build-system]\nrequires = ["setuptools"]\nbuild-backend = "setuptools.build_meta"\n\n'
                      '[project]\nname = "acme-probe"\nversion = "0.1.0"\n',
    "acme_probe/__init__.py": 'WHERE = "the caller\'s repository"\n',
}
# this machine's image cache standing in for the caller's actions/cache entry (a hit): the build records and the
# staged inputs, never the base tarballs (the cache step leaves them out); copied, never written
CACHED = ("builds", "wheels", "debs")


@pytest.fixture(scope="module")
def caller_machine(hosted_runner: HostedRunner) -> Iterator[dict[str, Path]]:
    """A workspace for a call from another repository: runner's files in runner/ (as job.workflow_sha checks them
    out), a scratch caller repository in caller/ with its expected failures and its plugin package."""
    root = hosted_runner.mkdir(hosted_runner.work / "caller-jobs")
    workspace = root / "workspace"
    checkout = workspace / "runner"
    shutil.copytree(ROOT, checkout, ignore=CHECKOUT_IGNORE)
    caller = workspace / "caller"
    for name, text in PLUGIN.items():
        (caller / "plugins" / "acme-probe" / name).parent.mkdir(parents=True, exist_ok=True)
        (caller / "plugins" / "acme-probe" / name).write_text(text, encoding="utf-8")
    (caller / "ci").mkdir()
    hosted_runner.own(workspace)
    yield {"root": root, "workspace": workspace, "checkout": checkout, "caller": caller}


def known_failures(machine: dict[str, Path], entries: str) -> None:
    file = machine["caller"] / CALLER_GIVES["expected_failures"]
    file.write_text(entries, encoding="utf-8")


def test_another_repositorys_call_plans_runs_the_reference_column_and_reports_with_its_own_expected_failures(
    hosted_runner: HostedRunner, caller_machine: dict[str, Path]
) -> None:
    runner, machine, root = hosted_runner, caller_machine, caller_machine["root"]
    inputs = called_with(CALLER_GIVES)
    importable = [str(machine["checkout"] / ".venv" / "bin" / "python"), "-c", "import acme_probe"]

    runner.fresh()
    plan = run_job("plan", runner, machine, root / "home-plan", None, inputs=inputs)
    jobs = json.loads(plan["plan"]["matrix"])["include"]
    assert [j["job"] for j in jobs] == ["reference"], "one harness and one case: one cell, one job"
    # the plugin came from the caller's checkout into runner's environment, for the user
    done = runner.run(importable, cwd=root, env=runner.env(root / "home-plan"), timeout=60)
    assert done.returncode == 0, done.stderr

    [entry] = jobs
    home = runner.mkdir(root / "home-reference")
    cache = runner.mkdir(home / ".cache") / "runner"
    for name in CACHED:
        shutil.copytree(Path.home() / ".cache" / "runner" / name, cache / name, symlinks=True)
    runner.own(cache)
    runner.fresh()
    # the engine this machine's other tests share, where the reference image is: a warm lookup, no build
    run_job("harness", runner, machine, home, entry, cache_hit=True, inputs=inputs)
    ran = results(machine["checkout"] / "runs" / "reference")
    assert list(ran) == [CELL] and ran[CELL]["grade"]["status"] == "pass", ran
    assert runner.which("mmdebstrap") is None, "a cache hit prepares nothing"

    artifacts = root / "artifacts"
    shutil.copytree(machine["checkout"] / "runs" / "reference", artifacts / "harness-reference")
    cells = machine["checkout"] / "cells"

    def report(given: dict[str, str], fails_at: str | None = None) -> dict[str, dict[str, str]]:
        shutil.rmtree(cells, ignore_errors=True)
        shutil.copytree(artifacts / "harness-reference", cells)  # one artifact: into cells/ itself
        runner.own(cells)
        for name in ("report.md", "junit.xml", "manifest.json", "report.html"):
            (machine["checkout"] / name).unlink(missing_ok=True)
        summary_file(machine, "report").unlink(missing_ok=True)
        runner.fresh()
        return run_job("report", runner, machine, root / "home-report", None, inputs=called_with(given),
                       fails_at=fails_at)

    # the caller's file says the cell is unstable: one passing run of it is neither new nor stale
    known_failures(machine, f"- cell: {CELL}\n  unstable: true\n  reason: the caller's own note\n")
    report(CALLER_GIVES)
    gate = json.loads((machine["checkout"] / "manifest.json").read_text(encoding="utf-8"))["gate"]
    assert gate["passed"] and not gate["stale"] and not gate["new"], gate
    summary = summary_file(machine, "report").read_text(encoding="utf-8")
    assert summary.startswith((machine["checkout"] / "report.md").read_text(encoding="utf-8"))
    assert "report.html in the artifact conformance-report" in summary
    page_links_resolve(machine["checkout"], "report.html")

    # ... says it is a known failure: it passed, so the entry is stale and the gate fails, from the caller's file
    known_failures(machine, f"- cell: {CELL}\n  reason: the caller's own note\n")
    failed = report(CALLER_GIVES, fails_at="Report and gate")
    assert "1 stale" in failed["failed"]["stderr"], failed
    gate = json.loads((machine["checkout"] / "manifest.json").read_text(encoding="utf-8"))["gate"]
    assert gate["stale"] == [CELL] and not gate["passed"]
    assert (machine["checkout"] / "report.md").is_file(), "the summary and the upload still run"

    # no file given: no failure is expected, and nothing of the caller's is read
    shutil.rmtree(machine["caller"] / "ci")
    report({**CALLER_GIVES, "expected_failures": ""})
    assert json.loads((machine["checkout"] / "manifest.json").read_text(encoding="utf-8"))["gate"]["passed"]


BUMP = ROOT / ".github" / "workflows" / "bump.yml"


def test_the_bump_workflows_prepare_and_engine_steps_pass_as_the_hosted_runners_user(
    hosted_runner: HostedRunner, machine: dict[str, Path]
) -> None:
    """bump.yml builds every image, so its Prepare installs mmdebstrap (never socat); then `make engine`, which
    must ask for nothing more than an engine that answers."""
    runner = hosted_runner
    runner.fresh()
    home = runner.mkdir(machine["root"] / "home-bump")
    names = ("Prepare the hosted runner for offline image builds", "Set up (engine)")
    steps = [step for step in job("bump", BUMP)["steps"] if step.get("name") in names]
    assert [step["name"] for step in steps] == list(names)
    for step in steps:
        assert "if" not in step and "env" not in step, f"{step['name']}: this test runs it unconditionally, bare"
        done = runner.run_step(step["run"], cwd=machine["checkout"], env=runner.env(home))
        assert done.returncode == 0, f"bump / {step['name']} (as {runner.user}):\n{done.stdout}\n{done.stderr}"
    assert runner.which("mmdebstrap") and runner.which("socat") is None
