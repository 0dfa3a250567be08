"""runner as a user installs it (this checkout's wheel in a fresh venv of the system's Python, tests/local_users.py),
run from a directory outside the checkout: everything it says it uses lies in the installed package, and what
``make engine`` and ``make base-tools`` do for the checkout, ``runner setup`` does for it, from the scripts the wheel
carries."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from tests.local_users import installed_runner

CHECKOUT = Path(__file__).resolve().parents[2]


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RUNNER_", "PYTHON"))}
    env["XDG_CONFIG_HOME"] = str(cwd / "config")
    return subprocess.run([str(installed_runner()), *argv], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=300)


def test_the_installed_tool_says_where_it_looks_and_all_of_it_is_the_package(tmp_path: Path) -> None:
    done = run(tmp_path, "--version", "--json")
    assert done.returncode == 0, done.stderr
    where = json.loads(done.stdout)
    venv = installed_runner().parent.parent
    packaged = [Path(p) for p in where["recipes"]] + [Path(p) for p in where["profiles"] if "site-packages" in p]
    assert packaged and all(p.is_relative_to(venv) for p in packaged), where
    assert not any(CHECKOUT in Path(p).parents for p in [*where["recipes"], *where["profiles"]]), where
    listed = run(tmp_path, "harnesses", "--json")
    rows = {row["harness"]: row for row in json.loads(listed.stdout)}
    assert rows["reference"]["state"] == rows["codex"]["state"] == "ok", listed.stderr
    assert Path(rows["codex"]["path"]).is_relative_to(venv)


def test_runner_setup_runs_the_packaged_scripts(tmp_path: Path) -> None:
    engine = run(tmp_path, "setup", "engine")
    assert engine.returncode == 0, engine.stderr
    assert "Docker Engine answers" in engine.stderr
    gvisor = run(tmp_path, "setup", "engine", "--runtime", "runsc")
    assert gvisor.returncode == 0, gvisor.stderr
    assert "the engine has the runsc runtime" in gvisor.stderr
    tools = run(tmp_path, "setup", "tools", "socat")
    assert (tools.returncode, tools.stderr) == (0, ""), tools.stderr
    unknown = run(tmp_path, "setup", "tools", "no-such-tool")
    assert unknown.returncode == 2
    assert "unknown tool 'no-such-tool' (known: mmdebstrap socat sudo chromium chromedriver)" in unknown.stderr
