"""A harness as a plugin, as a vendor would ship one: its own Python project (tests/plugins/reference_plugin, the
reference harness packaged outside runner's tree as ``reference-plugin``) built and installed beside runner in a fresh
virtual environment, with a broken plugin (tests/plugins/broken_plugin) installed too; that runner, run from a
directory outside the checkout, lists the plugin with where it came from, names the broken ones without losing any
other harness, and runs a full turn of the plugin on the real engine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import docker
import pytest

from runner.images import ImageRecord, ensure_image
from runner.images.settings import ImageSettings
from tests.local_users import runner_venv

PLUGINS = Path(__file__).resolve().parents[1] / "plugins"


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The venv's ``runner``: runner, the reference plugin and the broken plugin installed from copies of their
    projects (a build writes into the project it builds)."""
    projects = tmp_path_factory.mktemp("plugin-projects")
    copies = [Path(shutil.copytree(PLUGINS / name, projects / name)) for name in ("reference_plugin", "broken_plugin")]
    return runner_venv("runner-plugins-", *copies) / "bin" / "runner"


def run(runner: Path, cwd: Path, *argv: str, image_settings: ImageSettings) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "TMPDIR": str(cwd), "RUNNER_CACHE_DIR": str(image_settings.cache_dir),
           "XDG_CONFIG_HOME": str(cwd / "config")}
    env.pop("RUNNER_PROFILES_DIR", None)
    return subprocess.run([str(runner), *argv], capture_output=True, text=True, env=env, cwd=cwd, timeout=480)


def test_the_plugin_is_listed_with_its_source_and_the_broken_ones_by_name(
    installed: Path, tmp_path: Path, image_settings: ImageSettings
) -> None:
    proc = run(installed, tmp_path, "harnesses", "--json", image_settings=image_settings)
    assert proc.returncode == 4, proc.stderr  # an unusable plugin ends the listing as an unusable profile does
    rows = {row["harness"]: row for row in json.loads(proc.stdout)}
    plugin = rows["reference-plugin"]
    assert (plugin["state"], plugin["interpreter"], plugin["image"]) == ("ok", "reference-plugin-jsonl", "reference")
    assert plugin["source"] == "plugin runner-reference-plugin 0.1.0 (reference-plugin)"
    assert Path(plugin["path"]).parent.name == "reference_plugin" and "site-packages" in plugin["path"]
    assert rows["broken-import"]["state"] == rows["broken-object"]["state"] == "invalid"
    assert "ImportError: broken_plugin.fails is deliberately broken" in rows["broken-import"]["why"]
    assert "is a str, not a runner.harnesses.package.HarnessPackage" in rows["broken-object"]["why"]
    assert "plugin 'broken-import' (plugin runner-broken-plugin 0.1.0) skipped" in proc.stderr
    built_in = {name for name, row in rows.items() if row["source"] == "built-in"}
    assert {"reference", "claude-code", "codex", "model"} <= built_in
    assert all(rows[name]["state"] in ("ok", "unavailable") for name in built_in)
    listing = run(installed, tmp_path, "harnesses", image_settings=image_settings)
    assert "reference-plugin" in listing.stdout and "plugin runner-reference-plugin 0.1.0" in listing.stdout
    search = next(line for line in listing.stderr.splitlines() if "profiles are looked up in" in line)
    assert str(tmp_path / "config" / "runner" / "harnesses") in search and "reference_plugin" in search


def test_the_plugin_runs_a_full_turn_to_escalated(
    installed: Path, tmp_path: Path, engine: docker.DockerClient, image_settings: ImageSettings
) -> None:
    reference: ImageRecord = ensure_image(engine, "reference", image_settings)  # built by this checkout if need be
    out = tmp_path / "cell"
    proc = run(installed, tmp_path, "exec", "--harness", "reference-plugin", "--case", "escalation", "--json",
               "--out", str(out), image_settings=image_settings)
    assert proc.returncode == 0, proc.stderr[-3000:]
    report = json.loads(proc.stdout)
    assert report["status"] == "escalated" and report["infrastructureError"] is None
    assert report["outcome"]["metadata"]["harnessOutcome"] == "complete"
    assert report["harness"] == report["cell"]["harness"] == "reference-plugin"
    assert report["pins"]["imageId"] == reference.image_id  # the installed runner found the same image
    # the broken plugins are a warning here, never the turn's failure
    assert "plugin 'broken-object'" in proc.stderr


def test_the_plugin_is_a_column_of_the_matrix_and_its_report(
    installed: Path, tmp_path: Path, engine: docker.DockerClient, image_settings: ImageSettings
) -> None:
    ensure_image(engine, "reference", image_settings)
    out = tmp_path / "matrix"
    proc = run(installed, tmp_path, "run", "--harness", "reference,reference-plugin", "--case", "escalation",
               "--out", str(out), image_settings=image_settings)
    assert proc.returncode == 0, proc.stderr[-3000:]
    grades = {p.parent.name: json.loads(p.read_text(encoding="utf-8"))["grade"]["status"]
              for p in out.glob("*/result.json")}
    assert grades == {"escalation.baseline.reference": "pass", "escalation.baseline.reference-plugin": "pass"}
    assert "reference-plugin" in (out / "report.md").read_text(encoding="utf-8")
