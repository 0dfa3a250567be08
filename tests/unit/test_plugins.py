"""Where harnesses come from: runner's own folders, a user's directory, ``--profiles-dir``, and plugins (other
distributions registering a harness package under the ``runner.harnesses`` entry point group). A plugin here is a real
installed distribution as pip leaves one (its ``.dist-info`` with ``entry_points.txt``, its package beside it) on the
path of a runner process started for the test; tests/integration/test_plugin_package.py builds and pip-installs one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from runner.harnesses.interpreters import INTERPRETERS, PACKAGES, discover_plugins
from runner.harnesses.profile import shipped_profile, shipped_profiles

RUNNER = str(Path(sys.executable).parent / "runner")
PROFILE = shipped_profile("reference").read_text(encoding="utf-8")


def distribution(site: Path, dist: str, entry_points: dict[str, str]) -> None:
    """A distribution as installed: its ``.dist-info`` naming its entry points in runner's group."""
    info = site / f"{dist.replace('-', '_')}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n", encoding="utf-8")
    lines = "".join(f"{name} = {target}\n" for name, target in entry_points.items())
    (info / "entry_points.txt").write_text(f"[runner.harnesses]\n{lines}", encoding="utf-8")


def module(site: Path, package: str, init: str, files: dict[str, str] | None = None) -> Path:
    folder = site / package
    folder.mkdir()
    (folder / "__init__.py").write_text(init, encoding="utf-8")
    for name, text in (files or {}).items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text, encoding="utf-8")
    return folder


GOOD = ("from runner.harnesses.interpreters import jsonl\nfrom runner.harnesses.package import HarnessPackage\n"
        "HARNESS = HarnessPackage(interpreters={'good-jsonl': jsonl})\n")


PLUGIN_MODULES = ("good_plugin", "misspelt_plugin", "failing_plugin", "string_plugin", "clash_plugin")


@pytest.fixture()
def site(tmp_path: Path) -> Iterator[Path]:
    """Installed plugins: a good one (a profile and an image folder beside its package), one whose profile is
    misspelt, one that does not import, one that gives a string, one named as a built-in package, and one whose
    interpreter is runner's own."""
    site = tmp_path / "site"
    site.mkdir()
    good = PROFILE.replace("id: reference", "id: good").replace("interpreter: jsonl", "interpreter: good-jsonl")
    recipe = json.dumps({"cli_package": "mcp", "wheels": [], "npm": [], "files": [], "build_args": {}})
    module(site, "good_plugin", GOOD, {"good.yaml": good, "images/good-image/recipe.json": recipe,
                                       "images/good-image/Dockerfile": "FROM scratch\n"})
    module(site, "misspelt_plugin", "from runner.harnesses.package import HarnessPackage\nHARNESS = HarnessPackage()\n",
           {"misspelt.yaml": PROFILE.replace("id: reference", "id: misspelt").replace("argv:", "argvv:")})
    module(site, "failing_plugin", "raise ImportError('failing_plugin is broken on purpose')\n")
    module(site, "string_plugin", "HARNESS = 'a string'\n")
    module(site, "clash_plugin", GOOD.replace("'good-jsonl'", "'jsonl'"))
    distribution(site, "runner-good", {"good": "good_plugin:HARNESS", "misspelt": "misspelt_plugin:HARNESS"})
    distribution(site, "runner-bad", {"failing": "failing_plugin:HARNESS", "stringy": "string_plugin:HARNESS",
                                      "reference": "good_plugin:HARNESS", "clash": "clash_plugin:HARNESS"})
    yield site
    for name in PLUGIN_MODULES:  # imported in this process by a test: the next test's are other files
        sys.modules.pop(name, None)


def test_plugins_are_found_by_entry_point_and_each_broken_one_set_aside_by_name(
    site: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(site))
    plugins, broken = discover_plugins(PACKAGES, INTERPRETERS)
    assert [(p.name, p.source, p.folder) for p in plugins] == [
        ("good", "plugin runner-good 0.1", site / "good_plugin"),
        ("misspelt", "plugin runner-good 0.1", site / "misspelt_plugin"),  # its profile is refused when it loads
    ]
    assert "good-jsonl" in plugins[0].package.interpreters
    why = {b.name: (b.source, b.problem) for b in broken}
    assert sorted(why) == ["clash", "failing", "reference", "stringy"]
    assert why["failing"] == ("plugin runner-bad 0.1", "cannot be loaded (failing_plugin:HARNESS): ImportError: "
                                                       "failing_plugin is broken on purpose")
    assert why["stringy"][1] == "string_plugin:HARNESS is a str, not a runner.harnesses.package.HarnessPackage"
    assert why["reference"][1] == "a harness package named 'reference' is already there"
    assert why["clash"][1] == "its interpreter(s) ['jsonl'] are another package's"


def test_the_image_builder_finds_a_plugins_image_folders(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from runner.images.tree import image_dirs, plugin_dirs

    monkeypatch.syspath_prepend(str(site))
    assert site / "good_plugin" in plugin_dirs()
    assert site / "failing_plugin" in plugin_dirs()  # found without importing it
    folders = image_dirs(Path(__file__).resolve().parents[2])
    assert folders["good-image"] == site / "good_plugin" / "images" / "good-image"
    assert "reference" in folders and "base" in folders


def runner(*args: str, site: Path | None, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "RUNNER_PROFILES_DIR")}
    env["XDG_CONFIG_HOME"] = str(tmp_path / "config")
    if site is not None:
        env["PYTHONPATH"] = str(site)
    return subprocess.run([RUNNER, *args], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)


def test_runner_harnesses_lists_a_plugin_with_its_source_and_names_every_broken_one(
    site: Path, tmp_path: Path
) -> None:
    proc = runner("harnesses", "--json", site=site, tmp_path=tmp_path)
    assert proc.returncode == 4, proc.stderr
    listed = json.loads(proc.stdout)
    rows = {row["harness"]: row for row in listed if row["harness"] != "reference"}
    assert (rows["good"]["state"], rows["good"]["source"]) == ("ok", "plugin runner-good 0.1 (good)")
    assert rows["good"]["interpreter"] == "good-jsonl"
    assert rows["good"]["toolPolicy"]["mode"] == "unknown"  # a plugin may declare none: ADR 0027's default
    assert rows["misspelt"]["state"] == "invalid" and "field 'argvv'" in rows["misspelt"]["why"]
    for name in ("failing", "stringy", "clash"):
        assert rows[name]["state"] == "invalid" and rows[name]["source"] == "plugin runner-bad 0.1", name
    # a plugin named as a built-in package displaces nothing: runner's own reference is listed as it is, and the
    # plugin after it, set aside
    assert [(r["state"], r["source"]) for r in listed if r["harness"] == "reference"] == [
        ("ok", "built-in"), ("invalid", "plugin runner-bad 0.1")]
    assert {r["harness"] for r in listed if r["source"] == "built-in"} == {p.stem for p in shipped_profiles()}
    assert "plugin 'failing' (plugin runner-bad 0.1) skipped" in proc.stderr


def test_a_broken_plugin_is_a_warning_for_another_command_never_its_failure(site: Path, tmp_path: Path) -> None:
    proc = runner("exec", "--harness", "nope", "--case", "escalation", site=site, tmp_path=tmp_path)
    assert proc.returncode == 3  # the unknown harness, not the plugins
    assert "runner: plugin 'stringy' (plugin runner-bad 0.1) skipped" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_no_such_harness_names_where_it_looked(tmp_path: Path) -> None:
    extra = tmp_path / "mine"
    extra.mkdir()
    proc = runner("exec", "--harness", "nope", "--case", "escalation", "--profiles-dir", str(extra), site=None,
                  tmp_path=tmp_path)
    assert proc.returncode == 3
    message = next(line for line in proc.stderr.splitlines() if "no such harness: 'nope'" in line)
    looked = message.partition("looked in ")[2].rstrip(")").split(", ")
    harnesses = Path(shipped_profile("reference")).parents[1]
    assert looked == [str(extra), str(tmp_path / "config" / "runner" / "harnesses"), str(harnesses)]


def test_a_users_own_profile_is_found_and_shown_as_the_users(tmp_path: Path) -> None:
    mine = tmp_path / "config" / "runner" / "harnesses"
    mine.mkdir(parents=True)
    (mine / "mine.yaml").write_text(PROFILE.replace("id: reference", "id: mine"), encoding="utf-8")
    proc = runner("harnesses", "--json", site=None, tmp_path=tmp_path)
    assert proc.returncode == 0, proc.stderr
    rows = {row["harness"]: row for row in json.loads(proc.stdout)}
    assert (rows["mine"]["source"], rows["mine"]["path"]) == ("user", str(mine / "mine.yaml"))
    listing = runner("harnesses", site=None, tmp_path=tmp_path)
    assert f"profiles are looked up in, in order: {mine}; " in listing.stderr


def test_version_says_where_the_profiles_recipes_and_cache_are(tmp_path: Path) -> None:
    import runner as package

    text = runner("--version", site=None, tmp_path=tmp_path)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0] == f"runner {package.__version__}"
    assert [line.partition(":")[0] for line in lines[1:]] == ["profiles", "recipes", "cache"]
    body = json.loads(runner("--version", "--json", site=None, tmp_path=tmp_path).stdout)
    root = Path(package.__file__).resolve().parent
    assert body["version"] == package.__version__
    assert body["profiles"] == [str(tmp_path / "config" / "runner" / "harnesses"), str(root / "harnesses")]
    assert body["recipes"] == [str(root / "harnesses" / "*" / "images"), str(root / "images" / "bases")]
    assert body["cache"] == os.environ.get("RUNNER_CACHE_DIR", str(Path.home() / ".cache" / "runner"))


def test_shell_completion_is_offered_and_completes_the_commands(tmp_path: Path) -> None:
    helped = runner("--help", site=None, tmp_path=tmp_path).stdout
    assert "--install-completion" in helped and "--show-completion" in helped
    script = runner("--show-completion", "bash", site=None, tmp_path=tmp_path)
    assert script.returncode == 0 and "_RUNNER_COMPLETE" in script.stdout
    env = {**os.environ, "_RUNNER_COMPLETE": "complete_bash", "COMP_WORDS": "runner har", "COMP_CWORD": "1"}
    completed = subprocess.run([RUNNER], capture_output=True, text=True, timeout=60, env=env)
    assert completed.stdout.split() == ["harnesses"]
