"""The host scripts are the package's (``runner/engine/host/``), the one copy the checkout's Makefile and the installed
tool's ``runner setup`` both run; what ``runner setup tools`` says it knows is the script's own list."""

from __future__ import annotations

import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path

from typer.testing import CliRunner

from runner.cli import app
from runner.cli.setup import TOOLS
from runner.engine.host import HOST_SCRIPTS, host_script, setup_hint

ROOT = Path(__file__).resolve().parents[2]


def test_every_script_the_makefile_runs_is_a_host_script_the_wheel_carries() -> None:
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    host = re.search(r"^HOST\s*:=\s*(\S+)$", makefile, re.M)
    assert host and ROOT / host.group(1) == HOST_SCRIPTS
    ran = set(re.findall(r"\$\(HOST\)/([\w.-]+\.sh)", makefile))
    assert ran == {"ensure-docker.sh", "ensure-runtime.sh", "ensure-tools.sh"}
    data = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-data"]
    for script in sorted(HOST_SCRIPTS.glob("*.sh")):
        relative = script.relative_to(ROOT / "runner").as_posix()
        assert any(fnmatch(relative, pattern) for pattern in data["runner"]), relative
        assert host_script(script.name) == script
    assert not (ROOT / "scripts").exists(), "one copy of the host scripts: runner/engine/host/"


def test_setup_tools_names_the_tools_the_script_knows() -> None:
    script = host_script("ensure-tools.sh").read_text(encoding="utf-8")
    known = re.search(r"\(known: ([a-z ]+)\)", script)
    assert known and known.group(1).split() == TOOLS.split(", ")
    shown = CliRunner().invoke(app, ["setup", "tools", "--help"], terminal_width=400)
    assert shown.exit_code == 0 and TOOLS in shown.output


def test_an_unknown_tool_is_the_scripts_usage_error() -> None:
    done = CliRunner().invoke(app, ["setup", "tools", "no-such-tool"])
    assert done.exit_code == 2


def test_the_hints_name_the_installed_tools_commands() -> None:
    assert setup_hint() == "runner setup engine"
    assert setup_hint("runsc") == "runner setup engine --runtime runsc"
    assert setup_hint("mmdebstrap") == "runner setup tools mmdebstrap"
