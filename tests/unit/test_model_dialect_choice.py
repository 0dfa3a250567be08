"""``--model-dialect``: resolved once in the plan, it reaches the profile's ``model.dialect`` (and so the agent's
argv and the live endpoint), the pins (a cell in another dialect is another cell for resume) and the repro
command; a column that cannot speak it is refused when asked for by name and keeps its own in a matrix."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from typer.testing import CliRunner

from runner.cli import Exit, app
from runner.conformance.cases import get_case
from runner.harnesses.profile import find_profile
from runner.matrix.artifact import reusable
from runner.matrix.cells import MatrixCell
from runner.matrix.plan import CellOptions, CellPlan, plan_cells
from runner.turn.model_choice import ModelChoiceError
from runner.turn.settings import Host, SettingError, parse_dialect
from runner.turn.turndir import placeholder_values

CASE = get_case("escalation")


def plans(*harnesses: str, dialect: str | None = None, strict: bool = False, **environ: str) -> list[CellPlan]:
    cells = [MatrixCell(CASE, CASE.condition, find_profile(h)) for h in harnesses]
    options = CellOptions(dialect=parse_dialect(dialect), host=Host(environ))
    return plan_cells(cells, options, fault_every_harness=strict)


def test_the_default_is_the_profiles_and_it_is_pinned_on_a_column_that_can_choose() -> None:
    [model] = plans("model")
    assert model.dialect == "openai-chat" and model.planned_pins().model_dialect == "openai-chat"
    assert model.repro_argv()[-2:] == ["--model-dialect", "openai-chat"]
    # a vendor column speaks one dialect: nothing new is pinned, its repro is what it was
    [codex] = plans("codex")
    assert codex.dialect == "openai-responses" and "modelDialect" not in codex.planned_pins().to_dict()
    assert "--model-dialect" not in codex.repro_argv()


@pytest.mark.parametrize(("asked", "name", "credential"), [
    ("anthropic", "anthropic-messages", "ANTHROPIC_API_KEY"), ("anthropic-messages", "anthropic-messages", None),
    ("gemini", "gemini", "GEMINI_API_KEY"), ("openai-responses", "openai-responses", "OPENAI_API_KEY"),
])
def test_the_chosen_dialect_reaches_the_profile_the_agent_and_the_live_endpoint(
    asked: str, name: str, credential: str | None
) -> None:
    [plan] = plans("model", dialect=asked)
    model = plan.cell.profile.model
    assert model is not None and plan.dialect == name
    values = placeholder_values(plan.cell.profile, "p", "runner-scripted", "k")
    argv = plan.cell.profile.render_argv(values)
    assert argv[argv.index("--dialect") + 1] == name
    assert model.live is not None and model.live.credentials[0] == (credential or "ANTHROPIC_API_KEY")
    if credential:  # live when that dialect's key is on the host, scripted otherwise
        [live] = plans("model", dialect=asked, **{credential: "x"})
        assert live.model.mode == "live" and live.model.credential == credential


def test_another_dialect_is_another_cell_for_resume() -> None:
    [chat] = plans("model")
    [gemini] = plans("model", dialect="gemini")
    assert chat.id == gemini.id and chat.planned_pins() != gemini.planned_pins()
    done: Any = SimpleNamespace(reusable=True, pins=chat.planned_pins())
    assert reusable(done, chat.planned_pins())
    assert not reusable(done, gemini.planned_pins())


def test_a_column_that_cannot_speak_it_is_refused_by_name_and_keeps_its_own_in_a_matrix() -> None:
    with pytest.raises(ModelChoiceError, match="speaks anthropic-messages, not gemini"):
        plans("claude-code", dialect="gemini", strict=True)
    with pytest.raises(ModelChoiceError, match="talks to no model"):
        plans("reference", dialect="gemini", strict=True)
    reference, claude, model = plans("reference", "claude-code", "model", dialect="gemini")
    assert (reference.dialect, claude.dialect, model.dialect) == (None, "anthropic-messages", "gemini")
    with pytest.raises(ModelChoiceError, match="none of the chosen harnesses speaks it"):
        plans("reference", "claude-code", dialect="gemini")
    with pytest.raises(SettingError, match="unknown --model-dialect"):
        plans("model", dialect="klingon")


def test_exec_and_run_take_the_option(tmp_path: Path) -> None:
    for command in (["exec", "--harness", "claude-code"], ["run", "--harness", "reference", "--out", str(tmp_path)]):
        result = CliRunner().invoke(app, [*command, "--case", "escalation", "--model-dialect", "gemini"])
        assert result.exit_code == Exit.USAGE, result.output
    text = CliRunner().invoke(app, ["run", "--help"], terminal_width=200).output
    assert "--model-dialect" in text and "openai-responses" in text
