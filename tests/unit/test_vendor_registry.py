"""The registry of columns: a column is its profile, its package under runner/harnesses (its ``HARNESS``) and its
image recipe, and nothing else in runner/ names it; a profile naming what no package provides, a dialect no model
speaks or a field the schema lacks is refused when it loads, with exit code 4 naming the file and the field, by
every command that loads profiles, before any engine is reached."""

from __future__ import annotations

import ast
import json
import pkgutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

import runner.harnesses
from runner.cli import Exit, app
from runner.harnesses.interpreters import INTERPRETERS, PACKAGES, SESSION_READERS, UnknownInterpreter, get_interpreter
from runner.harnesses.package import HarnessPackage
from runner.harnesses.profile import ProfileError, load_profile, shipped_profiles

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "runner"
SHIPPED = shipped_profiles()
cli = CliRunner()

GOOD = """\
id: bad
label: Bad
image: reference
argv: [/bin/true]
interpreter: jsonl
model:
  dialect: openai-chat
"""
# (what is misspelt, the profile's text, the field named, words of the message)
MISSPELT = [
    ("interpreter", GOOD.replace("interpreter: jsonl", "interpreter: codx"), "interpreter",
     f"no such interpreter 'codx' (known: {', '.join(sorted(INTERPRETERS))})"),
    ("dialect", GOOD.replace("dialect: openai-chat", "dialect: openai-chatt"), "model.dialect",
     "Input should be 'openai-responses', 'openai-chat', 'anthropic-messages' or 'gemini'"),
    ("field", GOOD.replace("interpreter: jsonl", "interpeter: jsonl"), "interpeter",
     "Extra inputs are not permitted"),
    ("nested field", GOOD + "wind_down: {grace_secs: 1}\n", "wind_down.grace_secs", "Extra inputs are not permitted"),
]


def misspelt(tmp_path: Path, text: str) -> Path:
    directory = tmp_path / "profiles"
    directory.mkdir()
    path = directory / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def invoke(monkeypatch: pytest.MonkeyPatch, *args: str) -> tuple[int, str, str]:
    # no engine answers here: a command that got as far as the engine would end with exit 5, not 4
    monkeypatch.setenv("DOCKER_HOST", "unix:///nonexistent/runner-test-no-engine.sock")
    result = cli.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


# --- the registry --------------------------------------------------------------------------------------------

def test_every_package_under_harnesses_declares_its_vendor() -> None:
    packages = {m.name for m in pkgutil.iter_modules(runner.harnesses.__path__) if m.ispkg}
    assert packages == set(PACKAGES) and "codex" in packages and "reference" in packages
    assert all(isinstance(vendor, HarnessPackage) for vendor in PACKAGES.values())


def test_the_interpreters_are_runners_own_two_and_every_packages_each_once() -> None:
    provided = [name for vendor in PACKAGES.values() for name in vendor.interpreters]
    assert len(provided) == len(set(provided))
    assert set(INTERPRETERS) == {"jsonl", "exit-code", *provided}
    assert INTERPRETERS["codex"] is PACKAGES["codex"].interpreters["codex"]
    assert {name: r for vendor in PACKAGES.values() for name, r in vendor.session_readers.items()} == SESSION_READERS


def test_every_interpreter_is_used_by_a_shipped_profile_and_every_profile_uses_one() -> None:
    used = {load_profile(path).interpreter for path in SHIPPED}
    assert used == set(INTERPRETERS), f"provided and used by no profile: {sorted(set(INTERPRETERS) - used)}"


def test_a_session_reader_belongs_to_an_interpreter_of_its_own_package() -> None:
    with pytest.raises(ValueError, match="session reader for an interpreter this package does not provide"):
        HarnessPackage(session_readers={"dsh": lambda home, code: []})


def test_an_unknown_interpreter_outside_a_profile_is_a_profile_problem_too() -> None:
    with pytest.raises(UnknownInterpreter) as caught:
        get_interpreter("codx")
    assert caught.value.exit_code == Exit.PROFILE and "codx" in str(caught.value)


def _code_strings(path: Path) -> list[tuple[int, str]]:
    """Every string constant in a module's code (docstrings aside), with its line."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docstrings = {
        id(node.body[0].value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
        and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)
    }
    return [
        (node.lineno, node.value) for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
    ]


# Names that are also something other than a column: the model dialect "gemini" (runner.model.types and .settings),
# and the scripted model's exposure schemes (runner.model.names), named after the CLI each scheme was first measured on:
# the model resolves a tool by the names a request carries, never by which column sent it, and the scheme is
# written to the model's log, so its names stay.
NOT_A_COLUMN: dict[str, set[str]] = {
    "runner/model/types.py": {"gemini"},
    "runner/model/settings.py": {"gemini"},
    "runner/model/compare.py": {"gemini"},
    "runner/model/dialects/gemini.py": {"gemini"},
    "runner/model/names.py": {"codex", "gemini", "copilot", "cline"},
}


def test_nothing_outside_a_columns_package_names_a_vendor_column() -> None:
    # runner's own columns (the reference harness, the model column: runner's jsonl frames) are named where the runner
    # needs them
    vendors = {path.stem for path in SHIPPED if load_profile(path).interpreter != "jsonl"}
    vendor_names = vendors | {name for vendor in PACKAGES.values() for name in vendor.interpreters}
    own = {PACKAGE / "harnesses" / name for name in PACKAGES}
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if any(path.is_relative_to(directory) for directory in own):
            continue
        relative = str(path.relative_to(ROOT))
        allowed = NOT_A_COLUMN.get(relative, set())
        found += [f"{relative}:{line}: {value!r}" for line, value in _code_strings(path)
                  if value in vendor_names and value not in allowed]
    assert found == []


# --- a misspelt profile, refused at load --------------------------------------------------------------------

@pytest.mark.parametrize(("what", "text", "field", "words"), MISSPELT, ids=[m[0] for m in MISSPELT])
def test_a_misspelt_profile_is_refused_at_load_naming_the_file_and_field(
    tmp_path: Path, what: str, text: str, field: str, words: str
) -> None:
    path = misspelt(tmp_path, text)
    with pytest.raises(ProfileError) as caught:
        load_profile(path)
    assert caught.value.exit_code == Exit.PROFILE
    assert f"{path}: field '{field}'" in str(caught.value) and words in str(caught.value)


@pytest.mark.parametrize(("what", "text", "field", "words"), MISSPELT, ids=[m[0] for m in MISSPELT])
@pytest.mark.parametrize("command", ["harnesses", "exec", "run"])
def test_every_command_that_loads_profiles_exits_4_naming_the_file_and_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, command: str, what: str, text: str, field: str, words: str
) -> None:
    path = misspelt(tmp_path, text)
    args = {
        "harnesses": ["harnesses", "--profiles-dir", str(path.parent)],
        "exec": ["exec", "--profile", str(path), "--case", "escalation"],
        "run": ["run", "--profiles-dir", str(path.parent), "--harness", "bad", "--case", "escalation",
                "--out", str(tmp_path / "runs")],
    }[command]
    exit_code, stdout, stderr = invoke(monkeypatch, *args)
    assert exit_code == Exit.PROFILE, (stdout, stderr)
    said = stderr.replace("\n", "")  # the console may fold a long line at a terminal's width
    assert f"{path}: field '{field}'" in said and words.replace(" ", "") in said.replace(" ", "")
    if command == "run":
        assert not (tmp_path / "runs").exists()  # no cell was planned, let alone run


def test_runner_harnesses_still_lists_every_profile_and_marks_the_misspelt_one_invalid(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = misspelt(tmp_path, MISSPELT[0][1])
    exit_code, stdout, _ = invoke(monkeypatch, "harnesses", "--json", "--profiles-dir", str(path.parent))
    rows = {row["harness"]: row for row in json.loads(stdout)}
    assert exit_code == Exit.PROFILE
    assert rows["bad"]["state"] == "invalid" and "no such interpreter 'codx'" in rows["bad"]["why"]
    assert rows["reference"]["state"] == "ok" and set(rows) == {"bad", *(p.stem for p in SHIPPED)}


def test_the_shipped_profiles_list_with_exit_0(monkeypatch: pytest.MonkeyPatch) -> None:
    exit_code, stdout, stderr = invoke(monkeypatch, "harnesses", "--json")
    assert exit_code == Exit.OK, stderr
    assert "invalid" not in stdout


# --- tool naming: each harness's own record -----------------------------------------------------------------------


def test_a_harness_that_talks_to_a_model_names_its_tools_and_one_that_does_not_names_none() -> None:
    """The scripted model calls a CLI's tools by its harness's ``tool_naming``: a package whose profiles have a model
    endpoint declares at least one scheme, one whose profiles have none declares nothing to be read."""
    for name, package in PACKAGES.items():
        profiles = [load_profile(p) for p in SHIPPED if p.parent.name == name]
        talks = any(profile.model is not None for profile in profiles)
        naming = package.tool_naming
        assert bool(naming.direct or naming.proxies or naming.deferred) is talks, name


def test_a_profile_gets_its_own_packages_naming_and_one_outside_every_package_gets_every_built_in_scheme(
    tmp_path: Path,
) -> None:
    from runner.harnesses.interpreters import tool_naming
    from runner.model.names import BUILT_IN

    for path in SHIPPED:
        assert tool_naming(str(path)) is PACKAGES[path.parent.name].tool_naming
    assert tool_naming(str(tmp_path / "droid.yaml")) is BUILT_IN
