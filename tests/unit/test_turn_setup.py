"""Choosing the model, and preparing the per-turn directory (HOME, config files, placeholders)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from runner.harnesses.profile import Profile
from runner.model.settings import ModelMode
from runner.turn.model_choice import ModelChoiceError, choose_model
from runner.turn.settings import SettingError, parse_model
from runner.turn.turndir import create_turn_dir, placeholder_values

VENDOR = {
    "id": "vendor", "label": "Vendor", "image": "vendor", "argv": ["/usr/local/bin/runner-entry", "cli", "${prompt}"],
    "home": "turn",
    "config_files": [{"path": ".cli/config.json", "content": '{"url": "${model_url}/v1", "key": "${api_key}"}'}],
    "model": {
        "dialect": "openai-chat", "port": 8899,
        "live": {"base_url": "https://api.example.test/v1", "credentials": ["VENDOR_API_KEY", "OTHER_KEY"]},
    },
    "credentials": ["VENDOR_API_KEY", "OTHER_KEY"],
}


def vendor() -> Profile:
    return Profile.model_validate(VENDOR)


def test_default_is_scripted_without_credentials_and_live_with_them() -> None:
    assert choose_model(None, vendor(), {}).mode == "scripted"
    choice = choose_model(None, vendor(), {"OTHER_KEY": "sk-live-123456789"})
    assert (choice.mode, choice.credential) == ("live", "OTHER_KEY")
    assert "sk-live" not in json.dumps(choice.to_json())
    assert choose_model(ModelMode.SCRIPTED, vendor(), {"OTHER_KEY": "sk-live-123456789"}).mode == "scripted"


def test_live_without_credentials_is_an_error_naming_the_variables() -> None:
    with pytest.raises(ModelChoiceError, match="VENDOR_API_KEY, OTHER_KEY"):
        choose_model(ModelMode.LIVE, vendor(), {})
    with pytest.raises(SettingError, match="unknown --model 'psychic'"):
        parse_model("psychic")


def test_a_harness_without_a_model_plays_its_script() -> None:
    reference = Profile.model_validate({"id": "ref", "label": "R", "image": "reference", "argv": ["x"]})
    assert choose_model(None, reference, {"OPENAI_API_KEY": "sk-xxxxxxxxxx"}).mode == "none"
    with pytest.raises(ModelChoiceError, match="talks to no model; --model live does not apply"):
        choose_model(ModelMode.LIVE, reference, {})


def test_turn_dir_holds_the_script_and_a_home_with_rendered_config(tmp_path: Path) -> None:
    profile = vendor()
    values = placeholder_values(profile, "say hi", "runner-scripted", "sk-placeholder")
    assert values["model_url"] == "http://127.0.0.1:8899" and values["home"] == "/run/runner/home"
    assert values["prompt_json"] == '"say hi"'
    turn = create_turn_dir(profile, {"actions": []}, values)
    try:
        assert json.loads((turn.host / "script.json").read_text()) == {"actions": []}
        config = json.loads((turn.host / "home/.cli/config.json").read_text())
        assert config == {"url": "http://127.0.0.1:8899/v1", "key": "sk-placeholder"}
        assert (turn.host / "home/work").is_dir()
        if os.geteuid() == 0:
            assert (turn.host / "home/work").stat().st_uid == 1000
        assert turn.workdir == "/run/runner/home/work"
    finally:
        turn.remove()
    assert not turn.host.exists()


def test_config_file_paths_must_stay_inside_home() -> None:
    bad = {**VENDOR, "config_files": [{"path": "../escape", "content": "x"}]}
    with pytest.raises(ValueError, match="inside HOME"):
        Profile.model_validate(bad)
