"""The settings a command runs with: parsed once at the edge (``runner.cli.settings``) into one frozen, typed record,
which carries the host's environment down to the turn; and the one rule for whether a cell runs a turn."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from runner.cli import Exit, app
from runner.cli import settings as edge
from runner.conformance.behaviours import Behaviour
from runner.conformance.cases import get_case
from runner.harnesses.profile import find_profile
from runner.images import ImageRecord, source_root
from runner.images.settings import ImageSettings
from runner.matrix.cells import Disposition, MatrixCell, cells
from runner.matrix.plan import CellOptions, plan_cells
from runner.model.settings import Dialect, FaultKind, ModelFault, ModelMode
from runner.model.types import DIALECT_NAMES
from runner.sandbox.interface import TransportChoice
from runner.turn.model_choice import ModelChoice
from runner.turn.prepare import TurnRequest, prepare_turn
from runner.turn.settings import (
    Host,
    SettingError,
    TurnSettings,
    parse_dialect,
    parse_fault,
    parse_model,
    parse_transport,
)

IMAGE = ImageRecord(harness="reference", image_id="sha256:" + "0" * 64, tag="runner/reference:unit", recipe_hash="unit",
                    base="unit", cli_package=None, cli_version="0.0-unit", version_output=None,
                    built_at="2026-01-01T00:00:00Z")


# --- parsing, once ---------------------------------------------------------------------------------------------

def test_each_option_parses_into_its_type() -> None:
    assert parse_model(None) == (None, None)
    assert parse_model("scripted") == (ModelMode.SCRIPTED, None)
    assert parse_model("live") == (ModelMode.LIVE, None)
    recording = Path("runs/x/model-exchanges.jsonl")
    assert parse_model(f"replay:{recording}") == (ModelMode.REPLAY, recording)
    assert parse_fault("stall@after-ask") == ModelFault(FaultKind.STALL, None, after_ask=True)
    assert parse_fault("error") == ModelFault(FaultKind.ERROR, 1) and parse_fault(None) is None
    assert parse_dialect("anthropic") is Dialect.ANTHROPIC_MESSAGES and parse_dialect(None) is None
    assert parse_transport("stream") is TransportChoice.STREAM


@pytest.mark.parametrize(("parse", "text", "words"), [
    (parse_model, "none", "unknown --model 'none': expected scripted, live or replay:PATH"),
    (parse_model, "replay", "unknown --model 'replay'"),
    (parse_fault, "boom", "--model-fault 'boom': expected KIND[@STEP]"),
    (parse_fault, "error@0", "STEP must be"),
    (parse_dialect, "klingon", "unknown --model-dialect 'klingon': expected one of anthropic, openai-responses"),
    (parse_transport, "carrier-pigeon", "--transport must be mount, stream or auto, not 'carrier-pigeon'"),
])
def test_a_value_an_option_does_not_take_is_a_usage_error_naming_it(parse: object, text: str, words: str) -> None:
    with pytest.raises(SettingError) as raised:
        parse(text)  # type: ignore[operator]
    assert words in str(raised.value) and raised.value.exit_code == Exit.USAGE


def test_the_dialect_enum_is_the_profiles_vocabulary() -> None:
    assert tuple(d.value for d in Dialect) == DIALECT_NAMES


def test_the_settings_are_frozen_and_never_print_the_hosts_variables() -> None:
    settings = TurnSettings(host=Host({"VENDOR_API_KEY": "sk-do-not-print-me"}))
    with pytest.raises(dataclasses.FrozenInstanceError):
        settings.keep = True  # type: ignore[misc]
    assert "sk-do-not-print-me" not in repr(settings)


# --- the environment, read at the edge --------------------------------------------------------------------------

def test_the_host_says_what_the_environment_handed_in_says() -> None:
    host = Host.from_environ({"RUNNER_FAULT": "latch-disabled", "RUNNER_LIVE_BASE_URL": "http://127.0.0.1:9", "A": "b"})
    assert host.latch_disabled and host.live_base_url == "http://127.0.0.1:9" and host.variables["A"] == "b"
    plain = Host.from_environ({"RUNNER_FAULT": "something-else", "RUNNER_LIVE_BASE_URL": ""})
    assert not plain.latch_disabled and plain.live_base_url is None


def test_the_edge_reads_the_profiles_dir_and_the_reaper_switch(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv(edge.PROFILES_ENV, raising=False)
    monkeypatch.delenv(edge.REAPER_ENV, raising=False)
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    user = Path.home() / ".config" / "runner" / "harnesses"  # the user's own, last
    assert edge.profiles_dirs() == [user] and edge.profiles_dirs(tmp_path) == [tmp_path, user]
    assert edge.reaper_enabled()
    monkeypatch.setenv(edge.PROFILES_ENV, str(tmp_path / "env"))
    monkeypatch.setenv(edge.REAPER_ENV, "0")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    assert edge.profiles_dirs(tmp_path) == [tmp_path, tmp_path / "env", tmp_path / "config" / "runner" / "harnesses"]
    assert [label for label, _ in edge.profile_search(tmp_path)] == ["--profiles-dir", "$RUNNER_PROFILES_DIR", "user"]
    assert not edge.reaper_enabled()


def test_the_image_settings_default_to_the_paths_a_user_who_sets_nothing_always_had(tmp_path: Path) -> None:
    """Read once at the edge: with no variable set, the repository is found from the package, the cache is
    ~/.cache/runner, the CA certificates are update-ca-certificates' directory and no base is pinned."""
    plain = ImageSettings.from_environ({"PATH": "/usr/bin"})
    assert plain.repo_root is None and source_root(plain) == Path(__file__).resolve().parents[2]
    assert plain.cache_dir == Path.home() / ".cache" / "runner" == ImageSettings().cache_dir
    assert plain.ca_certs_dir == Path("/usr/local/share/ca-certificates") and plain.base_refs == {}
    assert plain.environ == {"PATH": "/usr/bin"}  # what npm and mmdebstrap run with
    ref = "debian@sha256:" + "0" * 64
    set_ = ImageSettings.from_environ({"RUNNER_REPO_ROOT": str(tmp_path), "RUNNER_CACHE_DIR": str(tmp_path / "c"),
                                       "RUNNER_CA_CERTS_DIR": str(tmp_path / "certs"), "RUNNER_BASE_IMAGE": ref,
                                       "RUNNER_BASE_NODE_IMAGE": "node:20", "RUNNER_REAPER": "0"})
    assert (source_root(set_), set_.cache_dir, set_.ca_certs_dir) == (tmp_path, tmp_path / "c", tmp_path / "certs")
    assert set_.base_refs == {"RUNNER_BASE_IMAGE": ref, "RUNNER_BASE_NODE_IMAGE": "node:20"}
    assert Host.from_environ({"RUNNER_CACHE_DIR": str(tmp_path / "c")}).images.cache_dir == tmp_path / "c"


def test_the_edge_reads_the_image_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RUNNER_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("RUNNER_REPO_ROOT", str(tmp_path))
    settings = edge.image_settings()
    assert (settings.cache_dir, settings.repo_root) == (tmp_path / "cache", tmp_path.resolve())
    assert edge.host().images == settings


def test_the_edge_builds_the_plans_options_with_the_host(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RUNNER_FAULT", "latch-disabled")
    given = {"behaviour": "persistent", "model": "scripted", "model_fault": "stall@2", "model_dialect": "gemini",
             "transport": "mount", "deadline": 5.0}
    options = edge.cell_options(given, run_id="r", run_unsupported=True)
    assert options == CellOptions(behaviour=Behaviour.PERSISTENT, model=ModelMode.SCRIPTED,
                                  fault=ModelFault(FaultKind.STALL, 2), dialect=Dialect.GEMINI,
                                  transport=TransportChoice.MOUNT, deadline=5.0, run_id="r",
                                  host=Host(latch_disabled=True), run_unsupported=True)
    assert options.host.variables["RUNNER_FAULT"] == "latch-disabled"


def test_a_turn_takes_the_hosts_environment_from_its_request_not_from_the_process(tmp_path: Path) -> None:
    """The scrubber hides what the request's host holds, and the broken build is the request's to ask for."""
    secret = "sk-unit-secret-value-123"
    host = Host.from_environ({"VENDOR_API_KEY": secret, "RUNNER_FAULT": "latch-disabled"})
    request = TurnRequest(case=get_case("escalation"), profile=find_profile("reference"), image=IMAGE,
                          out_dir=tmp_path / "out", model=ModelChoice(ModelMode.NONE, "unit"),
                          settings=TurnSettings(host=host))
    turn = prepare_turn(request)
    try:
        assert turn.scrubber.text(f"key={secret}") == "key=[scrubbed:VENDOR_API_KEY]"
        assert turn.invoker is turn.envelope  # the latch is bypassed, as RUNNER_FAULT=latch-disabled asks
    finally:
        turn.turn_dir.remove()
    plain = prepare_turn(dataclasses.replace(request, settings=TurnSettings()))
    try:
        assert plain.invoker is plain.latch and plain.scrubber.text(secret) == secret
    finally:
        plain.turn_dir.remove()


def test_exec_refuses_a_bad_transport_as_one_json_error() -> None:
    result = CliRunner().invoke(app, ["exec", "--harness", "reference", "--transport", "pigeon", "--json"])
    assert result.exit_code == Exit.USAGE
    body = json.loads(result.stdout)
    assert body["error"]["message"] == "--transport must be mount, stream or auto, not 'pigeon'"


# --- whether a cell runs a turn: one rule -------------------------------------------------------------------------

def cell(cell_id: str) -> MatrixCell:
    [found] = [c for c in cells("all", "all") if c.id == cell_id]
    return found


@pytest.mark.parametrize(("cell_id", "matrix", "exec_"), [
    ("escalation.baseline.reference", Disposition.TURN, Disposition.TURN),
    ("typed-governed-views.declared.reference", Disposition.NOT_IMPLEMENTED, Disposition.NOT_IMPLEMENTED),
    # the kernel refuses this row's turn at admission: no container, on any available column, exec included
    ("authority-unavailable.outage-at-turn-boundary.codex", Disposition.REFUSED_AT_ADMISSION,
     Disposition.REFUSED_AT_ADMISSION),
    ("authority-unavailable.outage-at-turn-boundary.amp", Disposition.UNAVAILABLE, Disposition.UNAVAILABLE),
    ("escalation-refused.escalation-withheld.reference", Disposition.UNSUPPORTED, Disposition.TURN),
    ("forged-grant.baseline.amp", Disposition.UNAVAILABLE, Disposition.UNAVAILABLE),
    # an unavailable column's unsupported row is declared as unsupported, and exec does not run it either
    ("escalation-refused.escalation-withheld.amp", Disposition.UNSUPPORTED, Disposition.UNSUPPORTED),
])
def test_the_cell_decides_and_the_plan_asks_it(cell_id: str, matrix: Disposition, exec_: Disposition) -> None:
    found = cell(cell_id)
    assert found.disposition() is matrix and found.disposition(run_unsupported=True) is exec_
    assert found.runs_a_turn() == (matrix is Disposition.TURN)
    [in_a_matrix] = plan_cells([found], CellOptions())
    [by_name] = plan_cells([found], CellOptions(run_unsupported=True))
    assert (in_a_matrix.disposition, by_name.disposition) == (matrix, exec_)
    assert by_name.runs_a_turn == (exec_ is Disposition.TURN)
