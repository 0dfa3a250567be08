"""What a turn measured besides its outcome: the tokens its model answers reported, the tools its CLI offered its
model (and the tool policy they support), and the evidence of why it ended as it did.

Read after the turn has ended, from what runner itself counted and wrote, never from the CLI's files:

- **usage**: the model endpoint's own totals (:attr:`runner.model.ModelEndpointHandle.usage`, counted as each answer
  was sent), conversation and side requests apart, and the model id the turn asked for (what a price file is keyed
  by); None for a CLI without a model endpoint;
- **offered tools**: every generation request's tool list, read back from runner's exchange log
  (``model-exchanges.jsonl``, its bodies as logged: one past the log's bound is unreadable, and says so in the
  policy); a line that does not parse is skipped (the log is runner's, but a body in it is what the CLI sent);
- **evidence** (:class:`runner.conformance.failures.TurnEvidence`, without the grade, which the cell adds): the drive,
  the MCP session count, the endpoint's counters, malformed frames, and whether a model answer was still pending
  when the CLI was stopped, and the engine's ``OOMKilled`` as the sandbox read it once the CLI exited (None where
  it could not: the classifier then says an OOM kill is not ruled out for a CLI killed by signal 9).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING

from runner.conformance.failures import TurnEvidence
from runner.core.outcomes import ExecutionResult, JsonValue
from runner.core.usage import UsageTotals
from runner.harnesses.stream import StreamReader
from runner.intake.files import PastTheBound, read_bounded
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


def read_exchanges(path: Path, limit: int = MAX_LOG_BYTES) -> list[dict[str, JsonValue]]:
    """The entries of an exchange log (runner's own file), bounded; a line that is no JSON object is skipped."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return []
    try:
        data = read_bounded(fd, limit)
    except PastTheBound:
        return []  # a log past the bound is not read: the policy says its inventory is unknown
    finally:
        os.close(fd)
    entries: list[dict[str, JsonValue]] = []
    for line in data.splitlines():
        try:
            entry = loads(line)
        except Malformed:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


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
    entries = read_exchanges(model.log_path)
    offered = tuple(offered_in_log(entries, model.log_path.name))
    generations = [e for e in entries if e.get("side_request") is not None]
    pending = bool(generations) and generations[-1].get("ended") in PENDING_ENDINGS
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
