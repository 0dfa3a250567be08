"""A base that must be bootstrapped on a host without mmdebstrap: the error names the tool, why it is needed now,
and the command that installs it (the hosted runner's column job meets this on a cache miss without Prepare)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.images.bootstrap import _bootstrap
from runner.images.errors import ImageBuildError
from runner.images.tree import image_dir

REPO = Path(__file__).resolve().parents[2]


def test_a_missing_mmdebstrap_is_named_with_the_command_that_installs_it(tmp_path: Path) -> None:
    recipe = json.loads((image_dir("base", REPO) / "recipe.json").read_text(encoding="utf-8"))
    tar = tmp_path / "cache" / "base" / "0123abcd.tar"
    with pytest.raises(ImageBuildError) as raised:
        # a system without it: mmdebstrap runs with the environment handed down, whose PATH has none
        _bootstrap(recipe, tar, lambda _line: None, {"PATH": str(tmp_path / "empty")}, "base")
    message = str(raised.value)
    assert "mmdebstrap is needed to bootstrap the Debian base 'base'" in message
    assert "sudo apt-get install -y mmdebstrap debian-archive-keyring uidmap" in message
    assert not tar.exists()
