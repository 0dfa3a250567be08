"""The set-up scripts as a user who is not root meets them (GitHub's hosted runner's kind of user, see
tests/hosted_runner.py): each asks for what its step needs and nothing else, and names what is missing with the
command that installs it."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.github_workflow import ROOT
from tests.hosted_runner import HostedRunner

HOST = Path("runner", "engine", "host")  # the Makefile's $(HOST)


@pytest.fixture(scope="module")
def tree(hosted_runner: HostedRunner) -> Path:
    """The Makefile and the host scripts, in a directory the user can read (the checkout may be in root's 0700
    temp)."""
    copy = hosted_runner.work / "scripts-tree"
    copy.mkdir()
    shutil.copy2(ROOT / "Makefile", copy / "Makefile")
    shutil.copytree(ROOT / HOST, copy / HOST)
    hosted_runner.own(copy)
    return copy


def test_make_engine_asks_for_an_engine_that_answers_and_nothing_else(hosted_runner: HostedRunner, tree: Path) -> None:
    hosted_runner.fresh()
    home = hosted_runner.mkdir(hosted_runner.work / "home-engine")
    done = hosted_runner.run(["make", "-s", "engine"], cwd=tree, env=hosted_runner.env(home), timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Docker Engine answers" in done.stderr
    assert "mmdebstrap" not in done.stderr + done.stdout and "socat" not in done.stderr + done.stdout


def test_a_missing_tool_is_named_with_the_command_that_installs_it(hosted_runner: HostedRunner, tree: Path) -> None:
    hosted_runner.fresh()
    home = hosted_runner.mkdir(hosted_runner.work / "home-tools")
    script = str(tree / HOST / "ensure-tools.sh")
    done = hosted_runner.run([script, "--for", "the tests", "socat"], cwd=tree, env=hosted_runner.env(home),
                             timeout=60)
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "ensure-tools: missing: socat (for the tests). Install with: sudo apt-get install -y socat")


def test_a_tool_only_some_runs_need_is_not_asked_for_where_it_cannot_be_installed(
    hosted_runner: HostedRunner, tree: Path
) -> None:
    hosted_runner.fresh()
    home = hosted_runner.mkdir(hosted_runner.work / "home-maybe")
    script = str(tree / HOST / "ensure-tools.sh")
    done = hosted_runner.run([script, "--if-possible", "mmdebstrap"], cwd=tree, env=hosted_runner.env(home),
                             timeout=60)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


def test_an_engine_that_refuses_the_user_is_named_as_a_group_membership(
    hosted_runner: HostedRunner, tree: Path
) -> None:
    """The same user outside the docker group: the socket exists and refuses it."""
    hosted_runner.fresh()
    home = hosted_runner.mkdir(hosted_runner.work / "home-nogroup")
    outsider = HostedRunner(hosted_runner.user, hosted_runner.uid, hosted_runner.gid, [], hosted_runner.work,
                            hosted_runner.path, hosted_runner.python)
    done = outsider.run([str(tree / HOST / "ensure-docker.sh")], cwd=tree, env=outsider.env(home), timeout=120)
    assert done.returncode == 1
    assert f"sudo usermod -aG docker {hosted_runner.user}" in done.stderr, done.stderr
