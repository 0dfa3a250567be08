"""Before a turn: does the engine wire this image the way a turn needs? Each failure is a named error with its fix.

A turn needs three things of the engine and the image that nothing else checks before the CLI runs,
and each one, missing, used to surface as the CLI's conduct (``mcp_not_connected``, a CLI that
"never opened an MCP session"):

- **The bind mount reaches the container.** The per-turn directory is created on runner's side and
  mounted by path; the engine resolves that path on *its* host. Under Docker-out-of-Docker, a remote
  ``DOCKER_HOST`` or Docker Desktop the container sees an empty or missing directory
  (:class:`MountsNotVisible`).
- **The relay is in the image.** Every profile's MCP server command, and runner-entry's model
  listener, is ``socat`` (:class:`RelayMissing`).
- **The runtime is the engine's.** ``--runtime runsc`` needs gVisor registered with the engine
  (``make engine RUNTIME=runsc``); an engine without it is :class:`RuntimeMissing`, before any container.
- **The resource limits are enforced.** Rootless Podman without cgroup delegation (or on cgroup v1)
  creates the container and drops ``pids_limit``/``mem_limit`` with at most a warning
  (:class:`LimitsNotEnforced`); or refuses to create it for want of a controller.

One probe container answers all three: the turn's own image, the turn's hardening and limits, a
fresh directory (under the same temporary root as the turn directories) holding a nonce file,
mounted where the turn directory goes. It exits 0, or 3 (no nonce), 4 (no relay), 5 (no pids
limit), 6 (the stream transport's relay has neither node nor python3).

Under gVisor (``runsc``) the container has no cgroup files of the host's: by default its ``/sys/fs/cgroup`` is
not mounted, and gVisor's own cgroupfs (``--cgroupfs``) has no pids controller and reports memory as unlimited
(measured, Debian's runsc 0.0~20221219). The limits are the host's cgroup of the whole sandbox (its kernel and
the CLI's processes together), so the probe reads them where they are enforced: the engine's stats of the
running probe container (``pids_stats.limit``, ``memory_stats.limit``), then runs the same script through an
exec with the limit check left out.

What the probe learns is kept by a :class:`WiringProbe`, by :class:`ProbeKey` (engine address, host,
temporary root, image id, transport, runtime). A pass is kept in memory and, when the caller hands in runner's
cache directory (``ImageSettings.cache_dir``: $RUNNER_CACHE_DIR, read at the edge), in its ``probes/`` (shared by
every process on the host); a failure is probed again next time (it is cheap, and it may be fixed), except
that a mount found not reaching the container is remembered for the process, so that ``auto``
(:mod:`runner.sandbox.factory`) need not probe it again before every turn. The probe is a field of the sandbox
backend (:class:`~runner.sandbox.docker_backend.DockerBackend`), shared by every turn of the command that connected
it; a test makes a fresh one.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import shutil
import socket
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import docker
import docker.errors
import docker.utils
import requests

from runner.engine import EngineClient, EngineError, call_with_retry
from runner.sandbox.container import CELL_LABEL, TURN_MOUNT, ContainerStartError, create_kwargs
from runner.sandbox.interface import RUNTIME_ENV, ContainerSpec, Runtime, Transport

RELAY = "socat"
NONCE_FILE = "probe-nonce"
NO_MOUNT = "-"  # the nonce argument of a probe for the stream transport: no mount to look through
PROBE_SCRIPT = (
    f'[ "$1" = {NO_MOUNT} ] || [ "$(cat {TURN_MOUNT}/{NONCE_FILE} 2>/dev/null)" = "$1" ] || exit 3; '
    f"command -v {RELAY} >/dev/null 2>&1 || exit 4; "
    f'[ "$1" != {NO_MOUNT} ] || command -v node >/dev/null 2>&1 || command -v python3 >/dev/null 2>&1 || exit 6; '

    '[ "$2" = - ] && exit 0; '  # runsc: the limits were read from the engine (no cgroup files inside gVisor)
    'p=$(cat /sys/fs/cgroup/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids/pids.max 2>/dev/null); '
    '[ "$p" = "$2" ] || exit 5'
)
PROBE_DEADLINE = 120


class WiringError(EngineError):
    """The engine or the image cannot carry a turn; the message says what and how to fix it."""


class MountsNotVisible(WiringError):
    """The engine does not show runner's files to its containers (they do not share a filesystem)."""


class RelayMissing(WiringError):
    """The image lacks the MCP relay the profiles' MCP server command runs."""


class HardeningRefused(WiringError):
    """The engine refuses part of the container's hardening outright (e.g. Podman 4.3 and a tmpfs owned by uid 1000)."""


class RuntimeMissing(WiringError):
    """The engine has no runtime of the name the command asked for (``--runtime runsc`` before its set-up step)."""


class LimitsNotEnforced(WiringError):
    """The engine cannot enforce the container's resource limits (rootless Podman without cgroup delegation)."""


@dataclass(frozen=True)
class ProbeKey:
    """What one verdict of the probe holds for: the engine, the host and temporary root runner mounts from, the
    image, the transport and the container runtime (a pass under runc says nothing about runsc)."""

    engine: str
    host: str
    tmp_root: str
    image: str
    transport: Transport
    runtime: Runtime = Runtime.RUNC

    @classmethod
    def of(cls, engine: str, image_id: str, transport: Transport, runtime: Runtime = Runtime.RUNC) -> ProbeKey:
        """The key for ``image_id`` over ``transport`` under ``runtime`` on the engine at ``engine``, from this
        process's host and temporary root."""
        return cls(engine, socket.gethostname(), tempfile.gettempdir(), image_id, transport, runtime)

    def digest(self) -> str:
        """The name of its file in the probe cache (the mount transport's under runc is the image alone, as it
        always was)."""
        image = self.image if self.transport is Transport.MOUNT else f"{self.image}:{self.transport}"
        if self.runtime is not Runtime.RUNC:
            image = f"{image}@{self.runtime}"
        return hashlib.sha256("\0".join([self.engine, self.host, self.tmp_root, image]).encode()).hexdigest()[:32]


class WiringProbe:
    """The wiring probe with what it has learnt, by :class:`ProbeKey`: passes (in memory and in the probe cache),
    and where the mount did not reach the container (in memory: this process need not probe it again)."""

    def __init__(self) -> None:
        self._passed: set[ProbeKey] = set()
        self._mount_not_visible: set[ProbeKey] = set()
        self._runtimes: set[tuple[str, Runtime]] = set()  # (engine address, runtime) found registered

    def check_runtime(self, client: EngineClient, runtime: Runtime) -> None:
        """:class:`RuntimeMissing`, with its fix, unless the engine runs containers under ``runtime``."""
        key = (client.address, runtime)
        if key not in self._runtimes:
            check_runtime(client, runtime)
            self._runtimes.add(key)

    def check(self, client: EngineClient, spec: ContainerSpec, transport: Transport = Transport.MOUNT, *,
              cache: Path | None) -> None:
        """Probe ``spec``'s image over ``transport``, unless it passed before (in this probe, or in ``cache``'s
        ``probes/``, runner's cache directory handed down from the edge; None: this probe's memory only); raise a
        :class:`WiringError` subclass naming the fix. The stream transport mounts nothing (no nonce; node or python3
        for its relay)."""
        if spec.runtime is not Runtime.RUNC:  # runc, the engine's default, is checked once by the command line
            self.check_runtime(client, spec.runtime)
        key = ProbeKey.of(client.address, spec.image_id, transport, spec.runtime)
        if key in self._passed or (cache is not None and _cache_file(key, cache).exists()):
            self._passed.add(key)
            return
        try:
            _verdict(_probe(client, spec, transport is Transport.MOUNT), spec, client.address)
        except MountsNotVisible:
            self._mount_not_visible.add(key)
            raise
        self._passed.add(key)
        if cache is not None:
            _remember(key, cache)

    def mount_not_visible(self, engine: str, image_id: str, runtime: Runtime = Runtime.RUNC) -> bool:
        """Whether this probe found the mount not reaching ``image_id``'s container on the engine at ``engine``."""
        return ProbeKey.of(engine, image_id, Transport.MOUNT, runtime) in self._mount_not_visible



def check_runtime(client: EngineClient, runtime: Runtime) -> None:
    """:class:`RuntimeMissing`, naming the fix, unless the engine (``docker info``'s Runtimes) has ``runtime``.

    runc is the engine's default runtime: an engine whose default is another one (e.g. runsc made the default
    by hand) is refused too, so that a result pinned runc did run under runc."""
    try:
        info = call_with_retry(client.info)
    except requests.exceptions.RequestException as err:
        raise WiringError(f"the engine at {client.address} did not say which runtimes it has: {err}") from err
    runtimes = sorted(info.get("Runtimes") or {})
    default = info.get("DefaultRuntime")
    if runtime is Runtime.RUNC:
        if default not in (None, "runc", "crun"):
            raise RuntimeMissing(
                f"the engine at {client.address} runs containers under {default!r} by default, not runc, so "
                f"--runtime runc would not be what runs. Fix: choose --runtime {default} (or {RUNTIME_ENV}={default})"
                " if runner knows it, or set the engine's default-runtime back to runc in /etc/docker/daemon.json"
            )
        return
    if runtime.value not in runtimes:
        raise RuntimeMissing(
            f"the engine at {client.address} has no {runtime.value} runtime (it has: {', '.join(runtimes) or 'none'}"
            f"), which --runtime {runtime.value} asks for. Fix: `sudo runner setup engine --runtime {runtime.value}` "
            f"(in a checkout: sudo make engine RUNTIME={runtime.value}; it installs Debian's runsc and registers it "
            "with the engine), or choose --runtime runc"
        )


def _verdict(code: int, spec: ContainerSpec, where: str) -> None:
    """Nothing for the probe's exit code 0; else the named error its code stands for."""
    if code == 0:
        return
    if code == 3:
        raise MountsNotVisible(
            f"the engine at {where} does not show runner's files to its containers: a directory under "
            f"{tempfile.gettempdir()} bind-mounted at {TURN_MOUNT} came up without its file, so the MCP socket "
            "would not reach the CLI. runner and the engine do not share a filesystem (Docker-out-of-Docker, a "
            "remote DOCKER_HOST, Docker Desktop). Fix: run runner on the engine's host, or give runner's "
            "container a directory the engine's host has at the same path (e.g. -v /tmp/runner:/tmp/runner) "
            "and set TMPDIR to it"
        )
    if code == 4:
        raise RelayMissing(
            f"image {spec.image_id[:19]} has no `{RELAY}`, the relay every profile's MCP server command (and "
            "runner-entry's model listener) runs. Fix: build the image FROM base-cli (which has it), or "
            f"install {RELAY} in it"
        )
    if code == 6:
        raise RelayMissing(
            f"image {spec.image_id[:19]} has neither node nor python3, one of which runs the stream transport's "
            "relay. Fix: build the image FROM base-cli, or use --transport mount where the engine shares "
            "runner's files"
        )
    if code == 5:
        raise LimitsNotEnforced(_limits_fix(where, f"the probe container's pids limit ({spec.limits.pids}) is not "
                                                   "in force inside it"))
    raise WiringError(f"the wiring probe in image {spec.image_id[:19]} exited {code} (expected 0, 3, 4, 5 or 6)")


def _limits_fix(where: str, what: str) -> str:
    return (
        f"the engine at {where} does not enforce the container's resource limits: {what}. Rootless Podman needs "
        "cgroup v2 with the controllers delegated to the user: "
        "`printf '[Service]\\nDelegate=cpu cpuset io memory pids\\n' | sudo tee "
        "/etc/systemd/system/user@.service.d/delegate.conf && sudo systemctl daemon-reload`, then log in again "
        "(on cgroup v1 rootless Podman ignores every limit: boot with systemd.unified_cgroup_hierarchy=1)"
    )


def _probe(client: EngineClient, spec: ContainerSpec, mount: bool = True) -> int:
    nonce = secrets.token_hex(16) if mount else NO_MOUNT
    directory = Path(tempfile.mkdtemp(prefix="runner-probe-"))
    container: Any = None
    try:
        os.chmod(directory, 0o755)
        (directory / NONCE_FILE).write_text(nonce, encoding="utf-8")
        os.chmod(directory / NONCE_FILE, 0o644)
        labels = {**spec.labels, CELL_LABEL: f"{spec.labels.get(CELL_LABEL, 'turn')}.probe", "runner.probe": "wiring"}
        script = ["sh", "-c", PROBE_SCRIPT, "probe", nonce]
        gvisor = spec.runtime is Runtime.RUNSC
        # under gVisor the container holds still while the engine's stats show its limits; the script runs by exec
        argv = ["sleep", str(PROBE_DEADLINE)] if gvisor else [*script, str(spec.limits.pids)]
        probe = ContainerSpec(spec.image_id, argv, directory, labels, limits=spec.limits, workdir="/",
                              runtime=spec.runtime)
        kwargs = create_kwargs(probe)
        kwargs["stdin_open"], kwargs["environment"] = False, {}
        if not mount:
            kwargs["mounts"] = []
        try:
            container = call_with_retry(client.containers.create, **kwargs)
            call_with_retry(container.start)
        except (docker.errors.APIError, EngineError) as err:
            raise _classify_start_error(err, client.address) from err
        if gvisor:
            _check_sandbox_limits(container, spec, client.address)
            return int(call_with_retry(container.exec_run, [*script, NO_MOUNT]).exit_code)
        result = call_with_retry(container.wait, timeout=PROBE_DEADLINE)
        return int(result.get("StatusCode", -1))
    except requests.exceptions.RequestException as err:
        raise WiringError(f"the wiring probe did not finish: {err}") from err
    finally:
        if container is not None:
            with contextlib.suppress(EngineError, docker.errors.APIError):  # labelled: the reaper or gc removes it
                call_with_retry(container.remove, force=True)
        shutil.rmtree(directory, ignore_errors=True)


def _check_sandbox_limits(container: Any, spec: ContainerSpec, where: str) -> None:
    """Under gVisor: the pids and memory limits in force on the sandbox's host cgroup, as the engine reads them
    (its stats of the running container); :class:`LimitsNotEnforced` when either is not the one asked for."""
    stats = call_with_retry(container.stats, stream=False, one_shot=True)
    pids = (stats.get("pids_stats") or {}).get("limit")
    memory = (stats.get("memory_stats") or {}).get("limit")
    wanted = docker.utils.parse_bytes(spec.limits.memory)
    if pids != spec.limits.sandbox_pids or memory != wanted:
        raise LimitsNotEnforced(_limits_fix(
            where, f"under runsc the sandbox's cgroup holds pids {pids} and memory {memory} (asked for "
                              f"{spec.limits.sandbox_pids} and {wanted})"))


def _classify_start_error(err: Exception, where: str) -> EngineError:
    text = str(err)
    lowered = text.lower()
    if "bind source path does not exist" in lowered or ("no such file or directory" in lowered and "mount" in lowered):
        return MountsNotVisible(
            f"the engine at {where} has no {Path(tempfile.gettempdir())} on its side ({text}). runner and "
            "the engine do not share a filesystem. Fix: run runner on the engine's host, or give runner's container "
            "a directory the engine's host has at the same path and set TMPDIR to it"
        )
    if "invalid mount option" in lowered or "unknown mount option" in lowered:
        return HardeningRefused(
            f"the engine at {where} refuses the container's hardening ({text}): the CLI's HOME is a tmpfs "
            "owned by uid 1000 (uid=/gid= options), which Podman's Docker-compatible API (4.3) does not accept. Fix: "
            "use a Docker Engine, or a Podman that accepts tmpfs uid=/gid="
        )
    if "cgroup" in lowered or "controller" in lowered:
        return LimitsNotEnforced(_limits_fix(where, f"it refused the limits ({text})"))
    return ContainerStartError(f"the wiring probe container could not be started: {text}")


def _cache_file(key: ProbeKey, cache: Path) -> Path:
    return cache / "probes" / f"{key.digest()}.json"


def _remember(key: ProbeKey, cache: Path) -> None:
    path = _cache_file(key, cache)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps({"engine": key.engine, "image": key.image, "tmp": key.tmp_root,
                                       "passed": True}) + "\n", encoding="utf-8")
        partial.replace(path)
    except OSError:
        pass  # the next process probes again
