"""After the CLI has ended: its own outcome, settled by the latch and then by the envelope. Pure.

The CLI's frames and exit give its outcome (:func:`cli_outcome`); the latch turns it into
``escalate`` when it asked, keeping it in ``harnessOutcome``; a deadline that passed before any ask
cancels the turn; the envelope re-checks the catalogue gate and writes the record. A turn that never
really ran (no container, an engine that failed mid-turn, an MCP server the CLI never reached), or whose CLI was
stopped for writing past its disk budget, is an infrastructure error (:func:`infrastructure_error`).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from runner.core.outcomes import ERROR_MESSAGE_LIMIT, ExecutionResult, Fail, JsonValue, ProtocolError, RuntimeOutcome
from runner.core.scrub import Scrubber
from runner.core.vocabulary import Code, message
from runner.harnesses.profile import Profile
from runner.harnesses.stream import StreamReader, Tail, harness_outcome
from runner.turn.drive import Drive
from runner.turn.prepare import PreparedTurn


@dataclass(frozen=True)
class Settlement:
    result: ExecutionResult
    record: dict[str, JsonValue]
    infrastructure_error: dict[str, JsonValue] | None


def settle_turn(turn: PreparedTurn, run: Drive, sessions: int, divergence: dict[str, JsonValue] | None) -> Settlement:
    """The turn's result, its record and (for a turn that never really ran) the infrastructure error;
    ``sessions`` is how many MCP sessions the CLI opened, ``divergence`` where a replay stopped."""
    profile, scrubber, latch, envelope = turn.profile, turn.scrubber, turn.latch, turn.envelope
    reader = turn.transcript.reader
    outcome = cli_outcome(run, reader, profile, turn.deadline)
    metadata = harness_metadata(turn)
    if run.not_started is not None:
        metadata["harnessStartError"] = scrubber.text(run.not_started)
    settled = latch.settle(outcome, metadata)
    if run.deadline_hit and not latch.asked:
        # stopped before any ask: the turn was cancelled, whatever the CLI said afterwards
        result = envelope.cancel(f"the turn deadline of {turn.deadline:g}s passed", settled.metadata)
    else:
        result = envelope.settle(settled)
    result = scrubbed(result, scrubber)
    record = scrubber.value(envelope.record(result))
    infra = infrastructure_error(run, reader, sessions, profile, turn.transcript.err_tail, scrubber)
    if divergence:
        # a replay stops at the first request that differs from the recording instead of improvising
        infra = {"kind": "replay_diverged", "detail": scrubber.text(f"step {divergence.get('step')}: "
                                                                    f"{divergence.get('what')}"), **divergence}
    return Settlement(result, record, infra)


def harness_metadata(turn: PreparedTurn) -> dict[str, JsonValue]:
    req = turn.req
    metadata: dict[str, JsonValue] = {
        "harness": req.profile.id,
        "toolshare": "mcp",
        "mcpServer": req.profile.mcp_server_name,
        "catalogHash": f"sha256:{turn.envelope.catalogue.catalog_hash}",
        "transcriptTail": [*turn.transcript.tail.lines()],
        "imageId": req.image.image_id,
        "cliVersion": req.image.cli_version,
        "behaviour": req.behaviour.value,
        "modelMode": req.model.mode,
    }
    if turn.model_id:
        metadata["model"] = turn.model_id
    return metadata


def cli_outcome(run: Drive, reader: StreamReader, profile: Profile, deadline: float) -> RuntimeOutcome:
    """The CLI's own outcome: not started, unseen exit, stopped at the deadline, or what its frames say."""
    if run.not_started is not None:
        text = message(Code.HARNESS_NOT_STARTED, harness=profile.id)
        return Fail(ProtocolError.of(Code.HARNESS_NOT_STARTED, text, retryable=False))
    if run.engine_failed is not None:  # its exit went unseen: say no more than that
        text = message(Code.HARNESS_EXITED_WITHOUT_OUTCOME, harness=profile.id, code="unknown")
        return Fail(ProtocolError.of(Code.HARNESS_EXITED_WITHOUT_OUTCOME, text, retryable=True))
    if run.deadline_hit:
        text = message(Code.HARNESS_WIND_DOWN_TIMEOUT, harness=profile.id, deadline=f"{deadline:g}")
        return Fail(ProtocolError.of(Code.HARNESS_WIND_DOWN_TIMEOUT, text, retryable=False))
    return harness_outcome(reader, run.exit_code, profile.id)


def infrastructure_error(
    run: Drive, reader: StreamReader, sessions: int, profile: Profile, err_tail: Tail, scrubber: Scrubber
) -> dict[str, JsonValue] | None:
    """A turn that never really ran (no container, no MCP) is the infrastructure's fault, not the CLI's."""
    if run.not_started is not None:
        return {"kind": "container_not_started", "detail": scrubber.text(run.not_started)}
    if run.engine_failed is not None:
        kind = "container_removed" if run.container_removed else "engine_failed"
        return {"kind": kind, "detail": scrubber.text(run.engine_failed), "stderrTail": [*err_tail.lines()]}
    if run.over_budget is not None:
        return {"kind": "disk_budget_exceeded", "detail": run.over_budget, "stderrTail": [*err_tail.lines()]}
    failed = [s for s in reader.startup if not s.connected]
    if failed:
        words = "; ".join(f"{s.server}: {s.detail}" for s in failed)
        return {"kind": "mcp_not_connected", "detail": f"the CLI reported its MCP server not connected ({words})",
                "stderrTail": [*err_tail.lines()]}
    if profile.mcp_startup_required and not reader.startup:
        return {"kind": "mcp_not_connected", "detail": "the CLI never reported its MCP servers at start-up",
                "stderrTail": [*err_tail.lines()]}
    if profile.requires_mcp_session and sessions == 0:
        return {"kind": "mcp_not_connected", "detail": "the CLI never opened an MCP session on the mounted socket",
                "stderrTail": [*err_tail.lines()]}
    return None


def scrubbed(result: ExecutionResult, scrubber: Scrubber) -> ExecutionResult:
    """The result with what the CLI or the model said scrubbed: a reason, an output or an error message
    can carry a host secret into memory, and from there into result.json and the printed report."""
    if not scrubber.active:
        return result
    error = result.error
    if error is not None:
        error = replace(error, message=scrubber.text(error.message)[:ERROR_MESSAGE_LIMIT],
                        details=scrubber.value(error.details))
    escalation = result.escalation
    if escalation is not None:
        escalation = replace(escalation, reason=scrubber.text(escalation.reason))
    return replace(result, events=scrubber.value(result.events), metadata=scrubber.value(result.metadata),
                   output=scrubber.value(result.output), error=error, escalation=escalation)
