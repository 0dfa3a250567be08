"""Each harness's declared tool policy (upstream's ADR 0027): declared in its package from what its README says was
measured, listed by ``runner harnesses``, and a cell whose measured mode differs from it a finding in the reports."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runner.cli import app
from runner.harnesses.interpreters import FOLDERS, PACKAGES, declared_policy
from runner.harnesses.package import UNDECLARED, DeclaredPolicy
from runner.harnesses.profile import find_profile, known_harnesses
from runner.matrix.report import manifest, markdown
from runner.model.tool_policy import ToolPolicy
from tests.unit.test_report_measures import BROKER, MIXED, run, write

SECTION = re.compile(r"^## What it offers its model \(measured (\S+)\)\n(.*?)(?=^## |\Z)", re.S | re.M)
MODE = re.compile(r"\*\*mode\*\*: `([^`]+)`, inventory `([^`]+)`")


def readme_modes(package: str) -> dict[str, tuple[str, str]]:
    """Each profile's measured mode and inventory, as its package's README says them (``### `id` `` per profile
    when the package has several)."""
    found = SECTION.search((FOLDERS[package] / "README.md").read_text(encoding="utf-8"))
    if found is None:
        return {}
    parts = re.split(r"^### `([^`]+)`\n", found.group(2), flags=re.M)
    if len(parts) == 1:
        [profile] = [p.stem for p in FOLDERS[package].glob("*.yaml")]
        parts = ["", profile, parts[0]]
    return {pid: m.groups() for pid, body in zip(parts[1::2], parts[2::2], strict=True)  # type: ignore[misc]
            if (m := MODE.search(body))}


def test_every_runnable_harness_with_a_model_declares_what_its_readme_says_was_measured() -> None:
    said = {pid: modes for name in PACKAGES if name in FOLDERS for pid, modes in readme_modes(name).items()}
    for harness in known_harnesses():
        profile = find_profile(harness)
        declared = declared_policy(harness)
        if profile.unavailable or profile.model is None:
            assert declared is UNDECLARED, harness  # nothing measured: nothing declared
            continue
        assert (declared.mode, declared.inventory) == said[harness], harness
        assert declared.evidence and declared.evidence[0].startswith("runner/harnesses/"), harness
        readme = Path(__file__).resolve().parents[2] / declared.evidence[0].split("#", 1)[0]
        assert readme.is_file(), declared.evidence
    assert declared_policy("claude-code").mode == "broker-only" and declared_policy("pi").harness_local == ("codemode",)
    assert declared_policy("codex").external_direct == ("hosted:web_search",)
    assert declared_policy("a-plugin-that-declares-nothing") is UNDECLARED and UNDECLARED.mode == "unknown"


def test_a_declaration_is_held_to_upstreams_rules() -> None:
    with pytest.raises(ValueError, match="a broker-only policy names no local tool"):
        DeclaredPolicy("broker-only", "complete", harness_local=("bash",), evidence=("x",))
    with pytest.raises(ValueError, match="a complete inventory cites its evidence"):
        DeclaredPolicy("broker-only", "complete")
    policy = declared_policy("qwen").policy("sharedos")
    assert isinstance(policy, ToolPolicy) and policy.managed_mcp == ("sharedos",) and policy.mode == "mixed"


def test_runner_harnesses_shows_each_declared_policy() -> None:
    listed = CliRunner().invoke(app, ["harnesses", "--json"])
    assert listed.exit_code == 0, listed.output
    rows = {row["harness"]: row for row in json.loads(listed.stdout)}
    assert rows["codex"]["toolPolicy"] == declared_policy("codex").to_json()
    assert rows["codex"]["toolPolicy"]["externalDirect"] == ["hosted:web_search"]
    assert rows["reference"]["toolPolicy"]["mode"] == "unknown" and rows["model"]["toolPolicy"]["mode"] == "broker-only"
    text = CliRunner().invoke(app, ["harnesses"]).stdout
    header = text.splitlines()[0].split()
    assert header[-2:] == ["policy", "state"]
    assert any(line.split()[:1] == ["pi-direct"] and "broker-only" in line.split() for line in text.splitlines())


def test_a_cell_that_measured_another_mode_than_its_harness_declares_is_a_finding(tmp_path: Path) -> None:
    # model declares broker-only: one run measured mixed; codex declares mixed and measured it; "x" declares nothing
    nothing_seen = ToolPolicy("unknown", "unknown", ("sharedos",), evidence=("cli:1.0",))
    runs = write(tmp_path, [
        run("a.base.model", "pass", policy=MIXED), run("b.base.model", "pass", policy=BROKER),
        run("c.base.model", "pass", policy=nothing_seen), run("a.base.codex", "pass", policy=MIXED),
        run("a.base.x", "pass", policy=MIXED),
    ])
    found = list(manifest(runs).findings)
    assert found == ["model: tool policy measured mixed in 1 run(s), but the harness declares broker-only "
                     "(runner/harnesses/model/README.md#what-it-offers-its-model-measured-2026-12-06): a.base.model"]
    assert f"- {found[0]}" in markdown(runs)


def test_the_docs_table_says_what_each_harness_declares() -> None:
    """docs/harnesses.md's table of what each harness offers its model is a second place for the declarations: held
    equal to them, row by row, so a re-measured harness cannot leave the page behind."""
    page = (Path(__file__).resolve().parents[2] / "docs" / "harnesses.md").read_text(encoding="utf-8")
    row = re.compile(r"^\| \[([\w-]+)\]\([^)]*\) \| [^|]* \| (?:\*\*)?([\w-]+)(?:\*\*)? \| ([\w-]+) \|", re.M)
    table = {harness: (mode, inventory) for harness, mode, inventory in row.findall(page)}
    declared = {harness: (declared_policy(harness).mode, declared_policy(harness).inventory)
                for harness in known_harnesses() if declared_policy(harness) is not UNDECLARED}
    assert declared and {h: table.get(h) for h in declared} == declared
    assert set(table) - set(declared) == {"reference"}, "a row for a harness that declares nothing"
