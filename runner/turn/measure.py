"""What a turn measured besides its outcome: the tokens its model answers reported, the tools its CLI offered its
model (and the tool policy they support), and the evidence of why it ended as it did.

Read after the turn has ended, from what runner itself counted and wrote, never from the CLI's files:

- **usage**: the model endpoint's own totals (:attr:`runner.model.ModelEndpointHandle.usage`, counted as each answer
  was sent), conversation and side requests apart, and the model id the turn asked for (what a price file is keyed
  by); None for a CLI without a model endpoint;
- **offered tools**: every generation request's tool list, read back from runner's exchange log
  (``model-exchanges.jsonl``, its bodies as logged: one past the log's bound is unreadable, and says so in the
  policy); a line that does not parse is skipped (the log is runner's, but a body in it is what the CLI sent). The
  log is read a line at a time and each entry dropped once its tools are taken (:func:`exchanges_in`): parsed
  whole, the tool lists a CLI sent cost runner some nine times the log's size;
- **evidence** (:class:`runner.conformance.failures.TurnEvidence`, without the grade, which the cell adds): the drive,
  the MCP session count, the endpoint's counters, malformed frames, and whether a model answer was still pending
  when the CLI was stopped, and the engine's ``OOMKilled`` as the sandbox read it once the CLI exited (None where
  it could not: the classifier then says an OOM kill is not ruled out for a CLI killed by signal 9).
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from runner.conformance.failures import TurnEvidence
from runner.core.outcomes import ExecutionResult, JsonValue
from runner.core.usage import UsageTotals
from runner.harnesses.stream import StreamReader
from runner.intake.payload import Malformed, loads
from runner.model.tool_policy import (
    OfferedTools,
    ToolInventory,
    ToolPolicy,
    measure_inventory,
    offered_in_log,
    tool_policy,
)
from runner.turn.drive import Drive

if TYPE_CHECKING:
    from runner.model import ModelEndpointHandle
    from runner.turn.prepare import PreparedTurn

MAX_LOG_BYTES = 256 * 1024 * 1024  # an exchange log read back for its tool lists (its bodies are bounded each)
PENDING_ENDINGS = frozenset({"client_disconnected", "server_stopped"})  # an answer still under way when stopped


@dataclass(frozen=True)
class TurnMeasures:
    """What :func:`measure_turn` found; ``offered`` is every generation request's tools (for a cell's union)."""

    evidence: TurnEvidence
    usage: UsageTotals | None = None
    offered: tuple[OfferedTools, ...] = ()
    policy: ToolPolicy | None = None
    inventory: ToolInventory | None = None
    launch: tuple[str, ...] = field(default_factory=tuple)  # the evidence the policy cites besides the requests
    model_id: str | None = None  # the model the turn asked its endpoint for: what a price file is keyed by


def exchanges_in(path: Path, limit: int = MAX_LOG_BYTES) -> Iterator[dict[str, JsonValue]]:
    """The entries of an exchange log (runner's own file, never through a link), one at a time: a line that is no
    JSON object is skipped; a log past ``limit`` bytes yields nothing (the policy then says its inventory is
    unknown)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return
    with os.fdopen(fd, "rb") as log:
        if os.fstat(fd).st_size > limit:
            return
        read = 0
        for line in log:
            read += len(line)
            if read > limit:  # grown since: what is past the bound is not read
                return
            try:
                entry = loads(line)
            except Malformed:
                continue
            if isinstance(entry, dict):
                yield entry


def launch_evidence(turn: PreparedTurn) -> tuple[str, ...]:
    """What the policy cites besides the requests: the image, the CLI's version, the profile and its launch line."""
    req, profile = turn.req, turn.profile
    argv = turn.scrubber.text(" ".join(profile.argv))
    return (f"image:{req.image.image_id}", f"cli:{req.image.cli_version}", f"profile:{profile.id}", f"argv:{argv}")


def policy_of(offered: Sequence[OfferedTools], server: str, launch: Sequence[str]) -> tuple[ToolPolicy, ToolInventory]:
    """The policy every request's tools support together (a cell of several turns: all of them)."""
    inventory = measure_inventory(offered, server)
    return tool_policy(inventory, launch), inventory


def measure_turn(
    turn: PreparedTurn, run: Drive, result: ExecutionResult, reader: StreamReader, sessions: int,
    model: ModelEndpointHandle | None, infrastructure_error: dict[str, JsonValue] | None,
) -> TurnMeasures:
    """The turn's usage, tool policy and failure evidence (see the module)."""
    profile = turn.profile
    failed = result.status.value == "failed"
    code = result.text("harnessErrorCode") or (result.reason_code if failed else None)
    infra_kind = infra_detail = None
    if infrastructure_error is not None:
        infra_kind, infra_detail = str(infrastructure_error.get("kind")), str(infrastructure_error.get("detail"))
    base = TurnEvidence(
        infrastructure_kind=infra_kind, infrastructure_detail=infra_detail, exit_code=run.exit_code,
        oom_killed=run.oom_killed, deadline_hit=run.deadline_hit, harness_error_code=code, mcp_sessions=sessions,
        mcp_required=profile.requires_mcp_session, model_mode=turn.req.model.mode.value,
        malformed_frames=reader.malformed,
    )
    if model is None or model.log_path is None:
        return TurnMeasures(evidence=base)
    found: list[OfferedTools] = []
    last_ended: JsonValue = None  # how the last generation request's exchange ended
    for entry in exchanges_in(model.log_path):
        found += offered_in_log([entry], model.log_path.name)
        if entry.get("side_request") is not None:
            last_ended = entry.get("ended")
    offered = tuple(found)
    pending = last_ended in PENDING_ENDINGS
    evidence = replace(
        base, model_requests=model.generation_requests, tool_requests=model.tool_requests,
        last_model_status=model.last_status, model_error_statuses=dict(model.error_statuses),
        upstream_errors=model.upstream_errors, model_faults=model.faults, model_stalls=model.stalls,
        model_pending_at_end=pending,
    )
    launch = launch_evidence(turn)
    policy, inventory = policy_of(offered, profile.mcp_server_name, launch)
    return TurnMeasures(evidence=evidence, usage=model.usage, offered=offered, policy=policy, inventory=inventory,
                        launch=launch, model_id=turn.model_id)
