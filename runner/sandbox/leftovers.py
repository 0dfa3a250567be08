"""What ``runner gc`` removes from the engine: the containers of runs that are gone, and nothing of a live run's.

An engine is shared: other people's runs, other machines' (Docker-out-of-Docker jobs, a remote engine), runs of
an older runner. Every container runner makes carries its run and where that run's lease is
(:func:`runner.sandbox.lease.lease_labels`); each is judged by it:

- **dead**: its lease is on this machine (the same scope) and nobody holds it, or it ran on an earlier boot of this
  machine (the same machine id and host name): the runner that made it is gone. Removed.
- **live**: its runner holds its lease. Left alone, even when named with ``--run`` (stop the run instead: Ctrl-C).
- **elsewhere**: its lease is on another machine or in another filesystem view, where nothing here can try it.
  Left alone unless its run is named with ``--run``.
- **unknown**: its lease is here but this user cannot read it (another user's directory). Left alone unless named.
- **unmarked**: no lease at all (a runner from before leases; a tool of its own that labels as runner does). Left
  alone unless named.

A turn whose container is removed under it anyway (``--run`` from another machine) ends as an infrastructure error
(:class:`~runner.sandbox.container.ContainerRemoved`), never as the CLI's conduct. The per-run reaper
(:mod:`runner.sandbox.reaper`) is unchanged: it removes its own run's containers when its runner dies, whatever gc does.
"""

from __future__ import annotations

import socket
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path

import docker
import docker.errors

from runner.engine import call_with_retry
from runner.sandbox.container import OWNER_LABEL, RUN_LABEL
from runner.sandbox.lease import (
    HOST_LABEL,
    LEASE_LABEL,
    SCOPE_LABEL,
    Liveness,
    from_an_earlier_boot,
    liveness,
    scope,
    token_of_lease,
)


class RunState(StrEnum):
    DEAD = "dead"
    LIVE = "live"
    ELSEWHERE = "elsewhere"
    UNKNOWN = "unknown"
    UNMARKED = "unmarked"


@dataclass(frozen=True)
class Leftover:
    """One container gc looked at: its id, its run, the host it says it ran on, and the verdict."""

    id: str
    run: str
    host: str
    verdict: RunState

    def to_json(self) -> dict[str, str]:
        return {"id": self.id, "run": self.run, "host": self.host, "verdict": self.verdict.value}


@dataclass
class Collected:
    removed: list[Leftover] = field(default_factory=list)
    kept: list[Leftover] = field(default_factory=list)


def judge(labels: dict[str, str], here: str) -> RunState:
    """Whether the run a container's ``labels`` name is dead, seen from the lease scope ``here``."""
    lease, where = labels.get(LEASE_LABEL), labels.get(SCOPE_LABEL)
    if not lease:
        return RunState.UNMARKED
    path = Path(lease)
    if not path.is_absolute() or token_of_lease(path.name) is None:  # a label anyone could set: only a lease's name
        return RunState.UNMARKED
    if where and from_an_earlier_boot(where, here) and labels.get(HOST_LABEL) == socket.gethostname():
        return RunState.DEAD
    if not where or where != here:
        return RunState.ELSEWHERE
    return {Liveness.DEAD: RunState.DEAD, Liveness.LIVE: RunState.LIVE}.get(liveness(path), RunState.UNKNOWN)


def collect(client: docker.DockerClient, runs: set[str] | None = None) -> Collected:
    """Remove the containers of dead runs (only of ``runs``, when given, and those whatever their verdict but live);
    what was removed and what was left, with why. Engine calls are retried; EngineCallFailed when they keep failing."""
    here = scope()
    collected = Collected()
    # the list call's own answer carries the labels: no inspect per container
    for container in call_with_retry(client.api.containers, all=True, filters={"label": f"{OWNER_LABEL}=runner"}):
        labels = container.get("Labels") or {}
        run = labels.get(RUN_LABEL, "")
        if runs is not None and run not in runs:
            continue
        verdict = judge(labels, here)
        found = Leftover(str(container["Id"]), run, labels.get(HOST_LABEL, ""), verdict)
        if verdict is RunState.DEAD or (runs is not None and verdict is not RunState.LIVE):
            if _remove(client, found.id):
                collected.removed.append(found)
        else:
            collected.kept.append(found)
    return collected


def _remove(client: docker.DockerClient, container_id: str) -> bool:
    try:
        call_with_retry(client.api.remove_container, container_id, force=True, v=True)
    except docker.errors.APIError as err:
        if err.status_code not in (404, 409):  # gone already, or its removal is under way
            raise
        return False
    return True
