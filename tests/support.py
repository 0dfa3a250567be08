"""Helpers shared by the integration and end-to-end layers: run the installed ``runner`` as a user would."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import docker
import docker.errors
import pytest

from runner.images.settings import ImageSettings
from runner.images.tree import image_dirs
from runner.model.faults import ModelFault
from runner.sandbox.interface import Sandbox

RUNNER = shutil.which("runner", path=str(Path(sys.executable).parent)) or "runner"


# Runs a command and writes the peak resident set (KiB) of it and its descendants to argv[1]: measured on this
# one process tree, not on every child the test process has waited for so far (RUSAGE_CHILDREN of pytest itself
# would carry whatever an earlier test ran, so a memory bound read there depends on the order tests run in).
_PEAK_OF = ("import resource, subprocess, sys; code = subprocess.call(sys.argv[2:]); "
            "open(sys.argv[1], 'w').write(str(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)); "
            "sys.exit(code)")


def runner_exec(
    tmp_path: Path, *args: str, expect_exit: int = 0, env: dict[str, str] | None = None, peak_to: Path | None = None
) -> dict[str, Any]:
    """``runner exec --json`` as a user runs it; ``peak_to``: where to write the run's peak RSS in KiB
    (:func:`peak_mib`)."""
    turn_tmp = tmp_path / "tmp"
    turn_tmp.mkdir(exist_ok=True)
    env = {**os.environ, **(env or {}), "TMPDIR": str(turn_tmp)}
    measured = [sys.executable, "-c", _PEAK_OF, str(peak_to)] if peak_to is not None else []
    proc = subprocess.run(
        [*measured, RUNNER, "exec", "--json", "--out", str(tmp_path / "out"), *args],
        capture_output=True, text=True, env=env, timeout=240,
    )
    assert proc.returncode == expect_exit, proc.stderr
    lines = [line for line in proc.stdout.splitlines() if line.strip()]
    assert len(lines) == 1, f"exactly one JSON object on stdout, got: {proc.stdout[:2000]}"
    # no per-turn socket directory survives the turn
    assert list(turn_tmp.iterdir()) == []
    return json.loads(lines[0])


def peak_mib(peak_to: Path) -> float:
    """The peak RSS :func:`runner_exec` wrote to ``peak_to``, in MiB."""
    return int(peak_to.read_text()) / 1024


def no_containers_left(engine: docker.DockerClient, report: dict[str, Any]) -> None:
    cid = report.get("containerId")
    assert cid, "the report names its container"
    with pytest.raises(docker.errors.NotFound):
        engine.containers.get(cid)


def record_of(report: dict[str, Any]) -> dict[str, Any]:
    return json.loads(Path(report["files"]["record"]).read_text())


def meta(report: dict[str, Any]) -> dict[str, Any]:
    result: dict[str, Any] = report["outcome"]["metadata"]
    return result


# --- a turn against a faulted scripted model (tests/e2e) ---


def exchanges(report: dict[str, Any]) -> list[dict[str, Any]]:
    """The turn's model exchanges in the order the requests arrived (``request_seq``). The log is written in
    completion order, and a CLI's concurrent requests (a title request beside a conversation request) arrive and
    finish in either order: only the conversation's own requests, which a CLI sends one after another, have an
    order a test may rely on (:func:`conversation`)."""
    path = Path(report["files"]["modelExchanges"])
    logged = [json.loads(line) for line in path.read_text().splitlines()]
    return sorted(logged, key=lambda r: r["request_seq"])


def conversation(logged: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The conversation requests of ``logged`` (the ones the scripted model played a step for), in its order:
    not the side requests (titles), nor the auxiliary ones (token counts, model lists, preconnects)."""
    return [r for r in logged if "decision" in r and r["decision"]["reply"] != "side"]


def faulted_exec(tmp_path: Path, harness: str, fault: str, *extra: str) -> dict[str, Any]:
    report = runner_exec(tmp_path, "--harness", harness, "--case", "escalation", "--model-fault", fault, *extra)
    assert report["infrastructureError"] is None, report["infrastructureError"]
    assert report["model"]["mode"] == "scripted" and report["model"]["fault"] == ModelFault.parse(fault).spec
    return report


def assert_faulted_exchanges(report: dict[str, Any], spec: str, ended: str | None = None) -> None:
    """The fault took the conversation down from its request on, and nothing else: whatever the order in which
    concurrent requests reached the endpoint (runner.model.faults)."""
    logged = exchanges(report)
    faulted = [r for r in logged if "fault" in r]
    assert faulted, "the exchange log records the injected fault"
    assert all(r["fault"]["spec"] == spec and r["fault"]["injected"] is True for r in faulted)
    talk = conversation(logged)
    # only conversation requests are faulted: a side request is answered, whenever it came
    assert [r["request_seq"] for r in faulted if r not in talk] == []
    # nothing before the fault was faulted, and every conversation request from it on was
    first = talk.index(faulted[0])
    assert faulted == talk[first:]
    assert [r["fault"]["request"] for r in faulted] == list(range(first + 1, len(talk) + 1))
    assert {r["fault"]["fired_at_request"] for r in faulted} == {first + 1}
    fault = ModelFault.parse(spec)
    if not fault.after_ask:
        assert first + 1 == fault.step, f"the fault fired on conversation request {first + 1}, not {fault.step}"
    if ended is not None:
        assert {r["ended"] for r in faulted} == {ended}


def sections(text: str) -> dict[str, list[str]]:
    """A probe script's output cut at its ``== name`` headers: each section's lines, by name."""
    out: dict[str, list[str]] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("== "):
            current = line[3:]
            out[current] = []
        elif current:
            out[current].append(line)
    return out


def copy_image_recipes(root: Path, dest: Path) -> None:
    """The image folders of the source root ``root`` (the bases and common files under runner/images/, each harness
    package's images/) and the package files their recipes list, copied to ``dest`` (another tree's place, for
    ``RUNNER_REPO_ROOT``)."""
    for src in [root / "runner" / "images" / "bases", root / "runner" / "images" / "common",
                *(root / "runner" / "harnesses").glob("*/images")]:
        shutil.copytree(src, dest / src.relative_to(root))
    for folder in image_dirs(dest).values():
        for rel in json.loads((folder / "recipe.json").read_text()).get("files", []):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(root / rel, dest / rel)


def stage_debs(root: Path, engine: Any, settings: ImageSettings) -> None:
    """A synthetic Debian stage for each buildable recipe with ``debian`` packages (vibe's), keyed by its base as
    it stands in the synthetic cache (the npm stages and base tarballs must be there first; ``engine`` holds no
    base)."""
    from runner.images.bootstrap import debian_root
    from runner.images.lock import _base_identity_now, lock_integrity_or_none
    from runner.images.recipes import buildable_harnesses, load_harness_recipe
    from runner.images.staging import debs_dir

    for harness in buildable_harnesses(root):
        recipe = load_harness_recipe(harness, root)
        if recipe.debian:
            name = debian_root(root, recipe.base)[0]
            identity = _base_identity_now(engine, name, root, lock_integrity_or_none(root), settings)
            stage = debs_dir(recipe, identity, settings)
            (stage / "debs").mkdir(parents=True, exist_ok=True)
            (stage / ".complete").write_text(f"{hash(harness) & (1 << 63) - 1:064x}\n")


def gone(engine: docker.DockerClient, box: Sandbox) -> bool:
    """Whether the engine no longer has ``box``'s container (removed, however it ended)."""
    try:
        engine.containers.get(str(box.id))
    except docker.errors.NotFound:
        return True
    return False
