"""Every cell setting is one row (``runner.matrix.options``), and everything that says a setting derives from the
rows: the commands' declarations, the parsing, the pins, the repro command (``repro.sh``) and the rerun
(``runner repro``). For every row, a cell planned with a value other than the default goes through the real writer
(``result.json``, ``repro.sh``), and both ways of reproducing it give the same setting back; a row added to the
table reaches each of them."""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path
from typing import Any

import anyio
import pytest
import typer
import typer.core
from typer.testing import CliRunner

from runner.cli import Exit, app
from runner.conformance.cases import get_case
from runner.core.protocol import ProtocolEpoch
from runner.harnesses.profile import find_profile
from runner.matrix import options
from runner.matrix.artifact import ALWAYS_COMPARED, REPRO, RESULT, load_result
from runner.matrix.cells import MatrixCell
from runner.matrix.options import BEHAVIOUR, SETTINGS, S, Setting
from runner.matrix.plan import CellOptions, CellPlan, plan_cells
from runner.matrix.repro import repro_plan, unmatched_pins
from runner.matrix.result import CellPins, CellResult
from runner.matrix.run_cell import run_cell
from runner.model.settings import ModelMode
from runner.sandbox.interface import RUNTIME_ENV, Runtime
from runner.turn.settings import Host

# with a credential, the model's default is live: scripted is then a choice the cell must keep
HOST = Host.from_environ({"OPENAI_API_KEY": "sk-unit-options"})
# per row: a column that takes it, and a value other than its default
VALUES: dict[str, tuple[str, Any]] = {
    "behaviour": ("reference", "persistent"),
    "model": ("codex", "scripted"),
    "deadline": ("reference", 7.5),
    "model_fault": ("codex", "stall@2"),
    "model_dialect": ("model", "gemini"),
    "runtime": ("reference", "runsc"),
    "protocol": ("reference", "2"),
    "transport": ("reference", "stream"),
    "keep": ("reference", True),
    "trials": ("reference", 3),
}
# the pins that name the cell and its code, not a setting
IDENTITY_PINS = {"caseSetHash", "worldSetHash", "judgeVersion", "imageId", "cliVersion", "runnerVersion",
                 "profileHash", "trial", "promptHash", "catalogHash"}
GOLDEN = Path(__file__).resolve().parents[1] / "golden/runs/matrix/escalation.baseline.reference/result.json"
EXEC_ONLY = {"deadline", "keep"}  # one turn's: a matrix takes the profile's deadline and keeps no container


@pytest.fixture(autouse=True)
def _no_runtime_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(RUNTIME_ENV, raising=False)


def command(name: str) -> typer.core.TyperCommand:
    """The command ``runner <name>`` as the real command line builds it."""
    group = typer.main.get_command(app)
    assert isinstance(group, typer.core.TyperGroup)
    found = group.commands[name]
    assert isinstance(found, typer.core.TyperCommand)
    return found


def fields(row: Setting[Any], settings: CellOptions) -> dict[str, object]:
    """The fields of ``settings`` that ``row`` sets."""
    return {name: getattr(settings, name) for name in row.fields}


def given(row: Setting[Any], value: object) -> CellOptions:
    return CellOptions.parse({row.name: value}, run_id="unit", host=HOST, run_unsupported=True)


def written(row: Setting[Any], directory: Path) -> tuple[CellPlan, CellResult]:
    """A cell planned with the row's value, written by the real writer (result.json, repro.sh); its column is made
    unavailable so that the cell runs no turn (its pins and repro are the planned ones)."""
    harness, value = VALUES[row.name]
    case = get_case("escalation")
    profile = find_profile(harness)
    cell = MatrixCell(case, case.condition_for(None), profile.model_copy(update={"unavailable": "unit: no turn"}))
    [plan] = plan_cells([cell], given(row, value), fault_every_harness=True)
    anyio.run(run_cell, None, plan, directory)
    return plan, load_result(directory / RESULT)


def test_every_row_has_a_value_here() -> None:
    """A new row is held to the round trip below: it needs a column and a value other than its default, and that
    value sets the fields the row says it sets, and no other."""
    assert set(VALUES) == {row.name for row in SETTINGS}
    default = dataclasses.asdict(given(BEHAVIOUR, BEHAVIOUR.default))
    for row in SETTINGS:
        value = VALUES[row.name][1]
        changed = {k for k, v in dataclasses.asdict(given(row, value)).items() if v != default[k]}
        assert changed <= set(row.fields) and (changed or row.pin is None), f"{row.name}: {value!r} sets {changed}"


@pytest.mark.parametrize("row", SETTINGS, ids=lambda row: row.name)
def test_a_setting_survives_the_result_and_both_reproductions(row: Setting[Any], tmp_path: Path) -> None:
    plan, recorded = written(row, tmp_path / "cell")
    asked = fields(row, plan.options)
    reproduced = row.pin is not None or row.recalled is not None  # else not part of the experiment: the default
    expected = asked if reproduced else fields(row, given(row, row.default))

    # runner repro: the recorded result, read back by the rows
    rerun = repro_plan(recorded, tmp_path / "cell", "unit", HOST)
    assert fields(row, rerun.options) == expected
    assert unmatched_pins(recorded.pins, rerun.planned_pins()) == []
    assert rerun.repro == recorded.repro == plan.repro

    # repro.sh: its command, parsed by the real command line
    script = (tmp_path / "cell" / REPRO).read_text().splitlines()[-1]
    program, verb, *argv = shlex.split(script.removeprefix("exec "))
    assert (program, verb) == ("runner", "exec")
    ctx = command("exec").make_context("exec", argv)
    from runner.cli.settings import cell_options

    assert fields(row, cell_options(ctx.params, run_id="unit")) == expected
    harness, case, condition = (ctx.params[k] for k in ("harness", "case", "condition"))
    assert (harness, case, condition) == (recorded.cell.harness, recorded.cell.case, recorded.cell.condition)


def test_a_runsc_cell_reproduces_under_runsc_both_ways(tmp_path: Path) -> None:
    """The defect this table removes: repro_plan had no runtime, so ``runner repro`` reran a runsc cell under runc
    (and said ``pin not matched: runtime``) while its repro.sh passed ``--runtime runsc``."""
    _, recorded = written(options.RUNTIME, tmp_path / "cell")
    assert recorded.pins.runtime == "runsc" and recorded.repro.endswith("--runtime runsc")
    rerun = repro_plan(recorded, tmp_path / "cell", "unit", HOST)
    assert rerun.options.runtime is Runtime.RUNSC and rerun.planned_pins().runtime == "runsc"


def test_a_live_cell_is_asked_live_by_repro_sh_and_replayed_by_runner_repro(tmp_path: Path) -> None:
    """The one row whose two reproductions differ on purpose: ``runner repro`` replays the cell's own exchanges."""
    case = get_case("escalation")
    cell = MatrixCell(case, case.condition_for(None), find_profile("codex").model_copy(update={"unavailable": "unit"}))
    live = CellOptions.parse({"model": "live"}, run_id="unit", host=HOST)
    [plan] = plan_cells([cell], live, fault_every_harness=True)
    anyio.run(run_cell, None, plan, tmp_path)
    recorded = load_result(tmp_path / RESULT)
    assert recorded.pins.model_mode == "live" and "--model live" in recorded.repro
    (tmp_path / "model-exchanges.jsonl").touch()  # what the live turn would have recorded
    rerun = repro_plan(recorded, tmp_path, "unit", HOST)
    assert (rerun.options.model, rerun.options.recording) == (ModelMode.REPLAY, tmp_path / "model-exchanges.jsonl")
    assert unmatched_pins(recorded.pins, rerun.planned_pins()) == []  # modelMode: expected to differ


def test_an_unpinned_epoch_reruns_as_epoch_1_and_the_default_epoch_goes_unsaid() -> None:
    """An absent ``protocolVersion`` means epoch 1 (every older result), whatever the default is; repro.sh says the
    epoch unless it is the default's."""
    assert options.PROTOCOL.recall(load_result(GOLDEN), Path()) == ProtocolEpoch.ONE.value
    assert options.PROTOCOL.default is None  # the released epoch: neither pinned nor said while it is 1


def test_the_pins_are_the_rows_and_the_cells(tmp_path: Path) -> None:
    """Every pin of result.json is a row's or names the cell: a setting pinned anywhere else has no row."""
    pins = {field.serialization_alias or name for name, field in CellPins.model_fields.items()}
    rows = {row.pin for row in SETTINGS if row.pin is not None}
    assert not rows & IDENTITY_PINS and rows | IDENTITY_PINS == pins
    assert set(ALWAYS_COMPARED) == rows | {"trial"}  # resume never takes a result of another setting


def test_the_options_fields_are_the_rows() -> None:
    """Every field of the plan's options is set by a row, but what the command itself supplies."""
    set_by_rows = {name for row in SETTINGS for name in row.fields}
    supplied = {"run_id", "host", "run_unsupported"}
    assert set_by_rows | supplied == {f.name for f in dataclasses.fields(CellOptions)}
    assert CellOptions.parse({}, run_id="r", host=Host()) == CellOptions(run_id="r")


@pytest.mark.parametrize("name", ["exec", "run"])
def test_the_commands_declare_each_option_from_its_row(name: str) -> None:
    declared = {p.name: p for p in command(name).params if isinstance(p, typer.core.TyperOption)}
    for row in SETTINGS:
        if name == "run" and row.name in EXEC_ONLY:
            assert row.name not in declared
            continue
        param = declared[row.name]
        assert row.flag in param.opts and param.help == row.help and param.default == row.default
        assert (param.metavar, param.envvar) == (row.metavar, row.envvar)


def test_a_row_added_to_the_table_reaches_the_parsing_the_pins_the_repro_and_the_rerun(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A throwaway row, added to the table only: every consumer walks it."""
    seen: list[str] = []

    def sets(settings: S, value: str | None) -> S:
        seen.append(str(value))
        return settings  # a real row sets its field of the plan's options

    extra = Setting[str | None]("colour", "A throwaway.", default=None, sets=sets, fields=(), pin="colour",
                                pinned=lambda _plan: "blue",
                                recalled=lambda result, _dir: f"{result.cell.harness}-blue")
    plan, recorded = written(options.BEHAVIOUR, tmp_path / "cell")
    monkeypatch.setattr(options, "SETTINGS", (*SETTINGS, extra))
    assert options.pins(plan)["colour"] == "blue"
    assert options.argv(plan)[-2:] == ["--colour", "blue"]
    assert options.recalled(recorded, tmp_path)["colour"] == "reference-blue"
    CellOptions.parse({"colour": "red"}, run_id="r", host=Host())
    assert seen == ["red"]


@pytest.mark.parametrize(("argv", "code", "said"), [
    (["--deadline", "0"], Exit.USAGE, "--deadline must be a positive number of seconds"),
    (["--behaviour", "sulky"], Exit.UNKNOWN, "no such behaviour: 'sulky'"),
])
def test_a_value_a_row_refuses_ends_the_command_before_anything_starts(argv: list[str], code: Exit, said: str) -> None:
    result = CliRunner().invoke(app, ["exec", "--harness", "reference", "--json", *argv])
    assert result.exit_code == code
    assert said in json.loads(result.stdout)["error"]["message"]
