"""The places a column's credential is written outside its profile, package and image, because GitHub forces it
(a secret is read by name, one line each): the reusable workflow's per-secret env lines of the column job's run
step, its declared secrets (on.workflow_call.secrets) and conformance.yml's secrets passed to it. They are checked
against the profiles: every credential a profile reads has its line, no line is for a credential no profile reads,
and the three lists are one."""

from __future__ import annotations

from typing import Any

from runner.harnesses.profile import Profile, load_profile, shipped_profiles
from tests.github_workflow import CALLER, EXPR, KEY, job, workflow


def run_step() -> dict[str, Any]:
    steps = [s for s in job("harness")["steps"] if ".venv/bin/runner run " in s.get("run", "")]
    assert len(steps) == 1, "the column job runs its cells in one step"
    return steps[0]


def read_by(profile: Profile) -> set[str]:
    """The host variables a profile reads: its own credentials, its live model's and each other dialect's."""
    names = set(profile.credentials)
    if profile.model is not None:
        lives = [profile.model.live, *profile.model.dialects.values()]
        names |= {name for live in lives if live is not None for name in live.credentials}
    return names


def test_the_run_steps_secret_lines_are_the_credentials_the_profiles_read() -> None:
    env = run_step()["env"]
    lines = {name for name, value in env.items() if (found := EXPR.match(str(value))) and KEY.match(found.group(1))}
    # a line of another shape naming a secret would escape this check
    assert all("secrets." not in str(value) for name, value in env.items() if name not in lines)
    profiles = [load_profile(path) for path in shipped_profiles()]
    read = set().union(*(read_by(p) for p in profiles))
    assert read - lines == set(), "a credential a profile reads has no secret line in the column job's run step"
    assert lines - read == set(), "a secret line for a credential no profile reads"
    assert "OPENAI_API_KEY" in read  # the profiles were read


def test_the_declared_and_the_passed_secrets_are_the_run_steps_lines() -> None:
    env = run_step()["env"]
    lines = {name for name, value in env.items() if (found := EXPR.match(str(value))) and KEY.match(found.group(1))}
    declared = set(workflow()["on"]["workflow_call"]["secrets"])
    [calling] = workflow(CALLER)["jobs"].values()
    assert declared == lines == set(calling["secrets"])
