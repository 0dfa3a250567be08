"""The machine and the versions a bench run took its figures on (cores, memory, kernel, Docker, packages)."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path
from typing import TYPE_CHECKING, NotRequired, Protocol, TypedDict

from runner.core.outcomes import JsonValue

if TYPE_CHECKING:
    import docker


class EngineInfo(TypedDict, total=False):
    """The engine's own report (values as docker-py gives them), or why there is none."""

    server: JsonValue
    api: JsonValue
    cgroup: JsonValue
    storageDriver: JsonValue
    cpus: JsonValue
    error: str


class MachineInfo(TypedDict):
    cores: int | None
    usableCores: int
    memoryMiB: float | None
    kernel: str
    loadAverage: list[float]
    platform: str
    docker: EngineInfo
    loadAverageAtEnd: NotRequired[list[float]]


class ReferenceImage(Protocol):
    """What the versions report reads of the reference image's lock record."""

    @property
    def image_id(self) -> str: ...

    @property
    def version_output(self) -> str | None: ...


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _mem_total_mib() -> float | None:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024, 0)
    except (OSError, ValueError, IndexError):
        return None
    return None


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def machine_info(client: docker.DockerClient) -> MachineInfo:
    engine: EngineInfo = {}
    try:
        version, info = client.version(), client.info()
        engine = {
            "server": version.get("Version"), "api": version.get("ApiVersion"),
            "cgroup": info.get("CgroupVersion"), "storageDriver": info.get("Driver"), "cpus": info.get("NCPU"),
        }
    except Exception as err:  # the figures are still worth having; say why this part is missing
        engine = {"error": repr(err)}
    return {
        "cores": os.cpu_count(),
        "usableCores": len(os.sched_getaffinity(0)),
        "memoryMiB": _mem_total_mib(),
        "kernel": platform.release(),
        "loadAverage": load_average(),  # at the start: other work on the machine skews it
        "platform": platform.platform(),
        "docker": engine,
    }


def versions_info(reference: ReferenceImage | None) -> dict[str, JsonValue]:
    import runner

    body: dict[str, JsonValue] = {
        "runner": runner.__version__,
        "python": platform.python_version(),
        "mcp": _version("mcp"),
        "mcpTypes": _version("mcp-types"),
        "anyio": _version("anyio"),
        "dockerPy": _version("docker"),
    }
    if reference is not None:
        body["referenceImage"] = {"imageId": reference.image_id, "versionOutput": reference.version_output}
    return body
