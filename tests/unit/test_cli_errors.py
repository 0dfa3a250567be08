"""Bad input to ``runner exec``: a clear message, a distinct exit code, and nothing started."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runner.cli import Exit, app
from runner.harnesses.profile import ProfileError, load_profile, shipped_profile

cli = CliRunner()


def run(*args: str) -> tuple[int, str, str]:
    result = cli.invoke(app, list(args))
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (["--harness", "nope"], Exit.UNKNOWN, "no such harness: 'nope'"),
        (["--harness", "reference", "--case", "nope"], Exit.UNKNOWN, "no such case: 'nope'"),
        (["--harness", "reference", "--behaviour", "nope"], Exit.UNKNOWN, "no such behaviour: 'nope'"),
        (["--case", "escalation"], Exit.USAGE, "give --harness"),
        (["--harness", "reference", "--deadline", "0"], Exit.USAGE, "--deadline"),
    ],
)
def test_unknown_names_exit_with_a_distinct_code_before_anything_starts(
    args: list[str], code: Exit, words: str
) -> None:
    exit_code, _, stderr = run("exec", *args)
    assert exit_code == code
    assert words in stderr


def test_json_mode_prints_one_error_object(tmp_path: Path) -> None:
    exit_code, stdout, _ = run("exec", "--json", "--harness", "nope")
    assert exit_code == Exit.UNKNOWN
    assert json.loads(stdout)["error"]["kind"] == "unknown"


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return path


GOOD = "id: {id}\nlabel: X\nimage: reference\nargv: [/bin/true]\n"


@pytest.mark.parametrize(
    ("body", "field", "words"),
    [
        ("id: bad\nlabel: X\nimage: reference\n", "argv", "Field required"),
        (GOOD.format(id="bad") + "surprise: 1\n", "surprise", "Extra inputs are not permitted"),
        (GOOD.format(id="bad") + "default_deadline_seconds: soon\n", "default_deadline_seconds", "valid number"),
        ("id: bad\nlabel: X\nimage: reference\nargv: [run, '${shell}']\n", "argv", "unknown placeholder ${shell}"),
        ("id: bad\nlabel: X\nimage: reference\nargv: [run, '$(rm -rf /)']\n", "argv", "invalid placeholder"),
        (GOOD.format(id="bad") + "env: {'BAD NAME': x}\n", "env", "not an environment variable name"),
        (GOOD.format(id="bad") + "prompt: {via: carrier-pigeon}\n", "prompt.via", "Input should be"),
        (GOOD.format(id="other"), "id", "expected 'bad' (the file name)"),
        ("- just\n- a list\n", "", "expected a mapping"),
        ("id: [unclosed\n", "", "not valid YAML"),
    ],
)
def test_a_malformed_profile_names_the_file_and_the_field(tmp_path: Path, body: str, field: str, words: str) -> None:
    path = write(tmp_path, "bad", body)
    with pytest.raises(ProfileError) as caught:
        load_profile(path)
    text = str(caught.value)
    assert str(path) in text and words in text
    if field:
        assert f"field '{field}" in text
    exit_code, _, stderr = run("exec", "--profile", str(path))
    assert exit_code == Exit.PROFILE and str(path) in stderr.replace("\n", "")


def test_profile_values_are_substituted_without_a_shell(tmp_path: Path) -> None:
    path = write(tmp_path, "ok", "id: ok\nlabel: X\nimage: reference\nargv: [cli, '-p', '${prompt}', 'cost: $$5']\n")
    profile = load_profile(path)
    argv = profile.render_argv({"prompt": "a; rm -rf / && $(echo pwned)", "turn_dir": "/run/runner",
                                "mcp_socket": "s", "script": "x", "home": "/h"})
    assert argv == ["cli", "-p", "a; rm -rf / && $(echo pwned)", "cost: $5"]


def test_every_shipped_profile_loads() -> None:
    exit_code, stdout, _ = run("harnesses")
    assert exit_code == 0 and "reference" in stdout and "ok" in stdout


def test_an_unavailable_column_says_why_and_starts_nothing(tmp_path: Path) -> None:
    # no shipped column is unavailable any more (dsh runs since issue 11): a profile of our own that is
    shipped = shipped_profile("deepseek")
    text = shipped.read_text(encoding="utf-8").replace("id: deepseek", "id: gone")
    (tmp_path / "gone.yaml").write_text(text + "unavailable: needs a CLI this machine lacks\n", encoding="utf-8")
    exit_code, _, stderr = run("exec", "--profiles-dir", str(tmp_path), "--harness", "gone", "--case", "escalation")
    assert exit_code == Exit.INFRASTRUCTURE
    assert "gone harness is unavailable" in stderr.replace("\n", "")
    assert "needs a CLI this machine lacks" in stderr.replace("\n", " ")


def test_live_without_credentials_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("OPENAI_API_KEY", "CODEX_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    exit_code, _, stderr = run("exec", "--harness", "codex", "--model", "live")
    assert exit_code == Exit.USAGE
    assert "OPENAI_API_KEY, CODEX_API_KEY" in stderr.replace("\n", "")
