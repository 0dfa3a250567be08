"""Staging a recipe's npm packages with the real npm client leaves nothing in the user's TMPDIR.

The package is the test's own, packed from a directory (no registry): its postinstall makes a directory in
``os.tmpdir()``, as ``@kilocode/cli`` 7.7.7's does (an empty ``$TMPDIR/kilo``, found by an e2e test's check that
a turn leaves its TMPDIR empty, on a cold machine where that test was the first to build Kilo's image).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from runner.images.recipes import HarnessRecipe
from runner.images.settings import ImageSettings
from runner.images.staging import stage_npm

POSTINSTALL = "node -e \"require('fs').mkdirSync(require('path').join(require('os').tmpdir(), 'leaky-postinstall'))\""


def packed(tmp_path: Path) -> Path:
    source = tmp_path / "leaky"
    source.mkdir()
    (source / "package.json").write_text(json.dumps(
        {"name": "leaky", "version": "1.0.0", "bin": {"leaky": "cli.js"}, "scripts": {"postinstall": POSTINSTALL}}
    ))
    (source / "cli.js").write_text("#!/usr/bin/env node\nconsole.log('leaky 1.0.0')\n")
    out = subprocess.run(["npm", "pack", "--silent", "--pack-destination", str(tmp_path)], cwd=source,
                         capture_output=True, text=True, check=True).stdout
    return tmp_path / out.strip().splitlines()[-1]


def test_an_install_script_writing_to_tmpdir_leaves_the_users_tmpdir_and_the_stage_clean(tmp_path: Path) -> None:
    tarball = packed(tmp_path)
    user_tmp = tmp_path / "user-tmp"
    user_tmp.mkdir()
    # the host's environment as the edge hands it down (npm's PATH and HOME), the user's TMPDIR in it
    environ = {**os.environ, "TMPDIR": str(user_tmp), "RUNNER_CACHE_DIR": str(tmp_path / "cache")}
    settings = ImageSettings.from_environ(environ)
    recipe = HarnessRecipe(harness="leaky", directory=tmp_path, wheels=(), wheel_python="", wheel_platforms=(),
                           npm=(str(tarball),), files=(), build_args={}, version_command=(), cli_package=None)

    tree = stage_npm(recipe, lambda _line: None, settings)

    assert (tree.path / "bin" / "leaky").exists(), "the package was installed and linked"
    assert list(user_tmp.iterdir()) == [], "the install script wrote into runner's own TMPDIR"
    stage = tree.path.parent
    assert sorted(p.name for p in stage.iterdir()) == [".complete", "installed.json", "npm-global", "npm.log"]
