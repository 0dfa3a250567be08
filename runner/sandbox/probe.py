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
- **The resource limits are enforced.** Rootless Podman without cgroup delegation (or on cgroup v1)
  creates the container and drops ``pids_limit``/``mem_limit`` with at most a warning
  (:class:`LimitsNotEnforced`); or refuses to create it for want of a controller.

One probe container answers all three: the turn's own image, the turn's hardening and limits, a
fresh directory (under the same temporary root as the turn directories) holding a nonce file,
mounted where the turn directory goes. It exits 0, or 3 (no nonce), 4 (no relay), 5 (no pids
limit), 6 (the stream transport's relay has neither node nor python3).

What the probe learns is kept by a :class:`WiringProbe`, by :class:`ProbeKey` (engine address, host,
temporary root, image id, transport). A pass is kept in memory and in ``$RUNNER_CACHE_DIR/probes/``
(shared by every process on the host); a failure is probed again next time (it is cheap, and it may be
fixed), except that a mount found not reaching the container is remembered for the process, so that
``auto`` (:mod:`runner.sandbox.factory`) need not probe it again before every turn. The process has one
probe, :data:`WIRING`, which every factory shares unless it is handed another (a test hands a fresh one).
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
import requests

from runner.sandbox.container import CELL_LABEL, TURN_MOUNT, ContainerSpec, ContainerStartError
from runner.sandbox.engine import EngineError, call_with_retry, engine_address
from runner.sandbox.interface import Transport

RELAY = "socat"
NONCE_FILE = "probe-nonce"
NO_MOUNT = "-"  # the nonce argument of a probe for the stream transport: no mount to look through
PROBE_SCRIPT = (
    f'[ "$1" = {NO_MOUNT} ] || [ "$(cat {TURN_MOUNT}/{NONCE_FILE} 2>/dev/null)" = "$1" ] || exit 3; '
    f"command -v {RELAY} >/dev/null 2>&1 || exit 4; "
    f'[ "$1" != {NO_MOUNT} ] || command -v node >/dev/null 2>&1 || command -v python3 >/dev/null 2>&1 || exit 6; '

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


class LimitsNotEnforced(WiringError):
    """The engine cannot enforce the container's resource limits (rootless Podman without cgroup delegation)."""


@dataclass(frozen=True)
class ProbeKey:
    """What one verdict of the probe holds for: the engine, the host and temporary root runner mounts from, the
    image and the transport. A container runtime (runc, runsc), once runner chooses one, is one more field here:
    a pass under one says nothing about another."""

    engine: str
    host: str
    tmp_root: str
    image: str
    transport: Transport

    @classmethod
    def of(cls, image_id: str, transport: Transport) -> ProbeKey:
        """The key for ``image_id`` over ``transport`` on this process's engine, host and temporary root."""
        return cls(engine_address(), socket.gethostname(), tempfile.gettempdir(), image_id, transport)

    def digest(self) -> str:
        """The name of its file in the probe cache (the mount transport's is the image alone, as it always was)."""
        image = self.image if self.transport is Transport.MOUNT else f"{self.image}:{self.transport}"
        return hashlib.sha256("\0".join([self.engine, self.host, self.tmp_root, image]).encode()).hexdigest()[:32]


class WiringProbe:
    """The wiring probe with what it has learnt, by :class:`ProbeKey`: passes (in memory and in the probe cache),
    and where the mount did not reach the container (in memory: this process need not probe it again)."""

    def __init__(self) -> None:
        self._passed: set[ProbeKey] = set()
        self._mount_not_visible: set[ProbeKey] = set()

    def check(self, client: docker.DockerClient, spec: ContainerSpec, transport: Transport = Transport.MOUNT) -> None:
        """Probe ``spec``'s image over ``transport``, unless it passed before; raise a :class:`WiringError`
        subclass naming the fix. The stream transport mounts nothing (no nonce; node or python3 for its relay)."""
        key = ProbeKey.of(spec.image_id, transport)
        if key in self._passed or _cache_file(key).exists():
            self._passed.add(key)
            return
        try:
            _verdict(_probe(client, spec, transport is Transport.MOUNT), spec)
        except MountsNotVisible:
            self._mount_not_visible.add(key)
            raise
        self._passed.add(key)
        _remember(key)

    def mount_not_visible(self, image_id: str) -> bool:
        """Whether this probe found the mount not reaching ``image_id``'s container on this engine."""
        return ProbeKey.of(image_id, Transport.MOUNT) in self._mount_not_visible


WIRING = WiringProbe()  # this process's: every turn's factory shares it unless handed another


def check_wiring(client: docker.DockerClient, spec: ContainerSpec, transport: Transport = Transport.MOUNT) -> None:
    """Probe once per engine and image (remembered by :data:`WIRING`); raise a :class:`WiringError` naming the fix."""
    WIRING.check(client, spec, transport)


def _verdict(code: int, spec: ContainerSpec) -> None:
    """Nothing for the probe's exit code 0; else the named error its code stands for."""
    if code == 0:
        return
    where = engine_address()
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
            "runner-entry's model listener) runs. Fix: build the image FROM images/base-cli (which has it), or "
            f"install {RELAY} in it"
        )
    if code == 6:
        raise RelayMissing(
            f"image {spec.image_id[:19]} has neither node nor python3, one of which runs the stream transport's "
            "relay. Fix: build the image FROM images/base-cli, or use --transport mount where the engine shares "
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


def _probe(client: docker.DockerClient, spec: ContainerSpec, mount: bool = True) -> int:
    nonce = secrets.token_hex(16) if mount else NO_MOUNT
    directory = Path(tempfile.mkdtemp(prefix="runner-probe-"))
    container: Any = None
    try:
        os.chmod(directory, 0o755)
        (directory / NONCE_FILE).write_text(nonce, encoding="utf-8")
        os.chmod(directory / NONCE_FILE, 0o644)
        labels = {**spec.labels, CELL_LABEL: f"{spec.labels.get(CELL_LABEL, 'turn')}.probe", "runner.probe": "wiring"}
        probe = ContainerSpec(spec.image_id, ["sh", "-c", PROBE_SCRIPT, "probe", nonce, str(spec.limits.pids)],
                              directory, labels, limits=spec.limits, workdir="/")
        kwargs = {**probe.create_kwargs(), "stdin_open": False, "environment": {}}
        if not mount:
            kwargs["mounts"] = []
        try:
            container = call_with_retry(client.containers.create, **kwargs)
            call_with_retry(container.start)
        except (docker.errors.APIError, EngineError) as err:
            raise _classify_start_error(err) from err
        result = call_with_retry(container.wait, timeout=PROBE_DEADLINE)
        return int(result.get("StatusCode", -1))
    except requests.exceptions.RequestException as err:
        raise WiringError(f"the wiring probe did not finish: {err}") from err
    finally:
        if container is not None:
            with contextlib.suppress(EngineError, docker.errors.APIError):  # labelled: the reaper or gc removes it
                call_with_retry(container.remove, force=True)
        shutil.rmtree(directory, ignore_errors=True)


def _classify_start_error(err: Exception) -> EngineError:
    text = str(err)
    lowered = text.lower()
    if "bind source path does not exist" in lowered or ("no such file or directory" in lowered and "mount" in lowered):
        return MountsNotVisible(
            f"the engine at {engine_address()} has no {Path(tempfile.gettempdir())} on its side ({text}). runner and "
            "the engine do not share a filesystem. Fix: run runner on the engine's host, or give runner's container "
            "a directory the engine's host has at the same path and set TMPDIR to it"
        )
    if "invalid mount option" in lowered or "unknown mount option" in lowered:
        return HardeningRefused(
            f"the engine at {engine_address()} refuses the container's hardening ({text}): the CLI's HOME is a tmpfs "
            "owned by uid 1000 (uid=/gid= options), which Podman's Docker-compatible API (4.3) does not accept. Fix: "
            "use a Docker Engine, or a Podman that accepts tmpfs uid=/gid="
        )
    if "cgroup" in lowered or "controller" in lowered:
        return LimitsNotEnforced(_limits_fix(engine_address(), f"it refused the limits ({text})"))
    return ContainerStartError(f"the wiring probe container could not be started: {text}")


def _cache_file(key: ProbeKey) -> Path:
    from runner.sandbox.images.common import cache_dir

    return cache_dir() / "probes" / f"{key.digest()}.json"


def _remember(key: ProbeKey) -> None:
    path = _cache_file(key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        partial = path.with_suffix(f".{os.getpid()}.tmp")
        partial.write_text(json.dumps({"engine": key.engine, "image": key.image, "tmp": key.tmp_root,
                                       "passed": True}) + "\n", encoding="utf-8")
        partial.replace(path)
    except OSError:
        pass  # the next process probes again
