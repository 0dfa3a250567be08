"""``--runtime runc|runsc``: the runtime reaches the container's create call (runsc only: runc is the engine's
default), the probe's key (a pass under runc says nothing about runsc), the pins and the repro command; an engine
without it is a named infrastructure error with its fix (the engine-backed cases: tests/integration/test_runtime.py)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from runner.cli import Exit, app
from runner.conformance.cases import get_case
from runner.engine import DEFAULT_SOCKET
from runner.errors import InfrastructureError
from runner.harnesses.profile import find_profile
from runner.matrix.artifact import ALWAYS_COMPARED
from runner.matrix.cells import MatrixCell
from runner.matrix.options import RUNTIME_ENV as CLI_RUNTIME_ENV
from runner.matrix.plan import CellOptions, CellPlan, plan_cells
from runner.sandbox import probe
from runner.sandbox.container import create_kwargs
from runner.sandbox.interface import RUNTIME_ENV, ContainerSpec, Runtime, Transport

CASE = get_case("escalation")
IMAGE = "sha256:" + "0" * 64


class Engine:
    """What ``docker info`` says about runtimes (the unit layer's stand-in for the engine's answer)."""

    address = DEFAULT_SOCKET

    def __init__(self, runtimes: list[str], default: str = "runc") -> None:
        self.answer = {"Runtimes": {name: {"path": name} for name in runtimes}, "DefaultRuntime": default}

    def info(self) -> dict[str, Any]:
        return self.answer


def plan(runtime: Runtime) -> CellPlan:
    [made] = plan_cells([MatrixCell(CASE, CASE.condition, find_profile("reference"))], CellOptions(runtime=runtime))
    return made


def test_the_command_line_and_the_sandbox_name_the_same_environment_variable() -> None:
    assert CLI_RUNTIME_ENV == RUNTIME_ENV == "RUNNER_RUNTIME"


def test_only_runsc_is_asked_of_the_engine_by_name() -> None:
    spec = ContainerSpec(IMAGE, ["true"], Path("/tmp"), {})
    assert "runtime" not in create_kwargs(spec)
    assert create_kwargs(ContainerSpec(IMAGE, ["true"], Path("/tmp"), {}, runtime=Runtime.RUNSC))["runtime"] == "runsc"


def test_under_runsc_the_pids_limit_is_the_whole_sandboxs() -> None:
    runc = create_kwargs(ContainerSpec(IMAGE, ["true"], Path("/tmp"), {}))
    runsc = create_kwargs(ContainerSpec(IMAGE, ["true"], Path("/tmp"), {}, runtime=Runtime.RUNSC))
    assert (runc["pids_limit"], runsc["pids_limit"]) == (256, 1024)
    assert runc["mem_limit"] == runsc["mem_limit"]


def test_a_probe_under_runsc_is_another_key_and_runcs_file_keeps_its_name() -> None:
    runc = probe.ProbeKey.of(DEFAULT_SOCKET, IMAGE, Transport.MOUNT)
    runsc = probe.ProbeKey.of(DEFAULT_SOCKET, IMAGE, Transport.MOUNT, Runtime.RUNSC)
    assert runc != runsc and runc.digest() != runsc.digest()
    assert runc.runtime is Runtime.RUNC
    assert runc == probe.ProbeKey.of(DEFAULT_SOCKET, IMAGE, Transport.MOUNT, Runtime.RUNC)


def test_an_engine_without_runsc_is_a_named_infrastructure_error_with_its_fix() -> None:
    with pytest.raises(probe.RuntimeMissing, match=r"has no runsc runtime \(it has: runc\).*make engine RUNTIME=runsc"):
        probe.check_runtime(Engine(["runc"]), Runtime.RUNSC)  # type: ignore[arg-type]
    assert issubclass(probe.RuntimeMissing, InfrastructureError)
    probe.check_runtime(Engine(["runc", "runsc"]), Runtime.RUNSC)  # type: ignore[arg-type]


def test_runc_is_refused_where_the_engines_default_is_another_runtime() -> None:
    probe.check_runtime(Engine(["runc"]), Runtime.RUNC)  # type: ignore[arg-type]
    with pytest.raises(probe.RuntimeMissing, match="by default, not runc"):
        probe.check_runtime(Engine(["runc", "runsc"], default="runsc"), Runtime.RUNC)  # type: ignore[arg-type]


def test_the_runtime_is_pinned_and_repeated_in_repro_under_runsc_only() -> None:
    runc, runsc = plan(Runtime.RUNC), plan(Runtime.RUNSC)
    assert "runtime" not in runc.planned_pins().to_dict() and "--runtime" not in runc.repro_argv()
    assert runsc.planned_pins().to_dict()["runtime"] == "runsc" and runsc.repro_argv()[-2:] == ["--runtime", "runsc"]
    assert "runtime" in ALWAYS_COMPARED  # a result under gVisor never stands in for one under runc, nor back


def test_an_unknown_runtime_is_a_usage_error(monkeypatch: pytest.MonkeyPatch) -> None:
    result = CliRunner().invoke(app, ["exec", "--harness", "reference", "--runtime", "kata"])
    assert result.exit_code == Exit.USAGE and "must be one of runc, runsc, not 'kata'" in result.output
    monkeypatch.setenv(RUNTIME_ENV, "kata")
    result = CliRunner().invoke(app, ["run", "--harness", "reference", "--case", "escalation"])
    assert result.exit_code == Exit.USAGE and "RUNNER_RUNTIME" in result.output
