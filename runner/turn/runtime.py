"""One turn, end to end: case + profile in, settled result and record out (DESIGN "one turn").

1. The world and its envelope resolve the catalogue once; the latch wraps the envelope.
2. The prompt and instructions are composed and ``promptHash`` is annotated before anything starts.
3. The MCP server listens on ``<turn dir>/mcp.sock`` and, for a CLI with a model, the model endpoint
   on ``<turn dir>/model.sock``; the CLI starts in its hardened container with the turn dir mounted,
   and its stdout is read through the profile's interpreter (:mod:`runner.turn.drive`).
4. Nothing is stopped when the latch fires. Only the deadline stops the CLI.
5. The CLI's own outcome is settled by the latch and then by the envelope; the record, the
   transcripts and the CLI's own session transcript are written, scrubbed.
6. Teardown always runs, in order: close the bridge (MCP server), stop the model endpoint, remove
   the container (unless kept), remove the turn dir.
"""

from __future__ import annotations

import json
import os
import string
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import docker

import runner
from runner.conformance.behaviours import Behaviour, actions_for
from runner.conformance.cases import Case, Condition
from runner.conformance.prompt import instructions_for, prompt_for, prompt_hash
from runner.core.envelope import Envelope, RuntimeInfo
from runner.core.latch import EscalationLatch
from runner.core.outcomes import ERROR_MESSAGE_LIMIT, ExecutionResult, Fail, Json, ProtocolError, RuntimeOutcome
from runner.core.vocabulary import Code, message
from runner.core.world import build_world
from runner.harnesses.interpreters import get_interpreter, get_session_reader
from runner.harnesses.profile import Profile
from runner.harnesses.stream import StreamReader, Tail, harness_outcome
from runner.mcp.server import serve_mcp
from runner.sandbox.container import CELL_LABEL, RUN_LABEL, ContainerSpec, SandboxedProcess
from runner.sandbox.images import ImageRecord
from runner.turn.collect import copy_session_transcript
from runner.turn.drive import THREADS, Drive, drive
from runner.turn.model_choice import ModelChoice
from runner.turn.scrub import Scrubber
from runner.turn.transcript import StreamSink
from runner.turn.turndir import create_turn_dir, placeholder_values

Progress = Any  # Callable[[str], None]
LIVE_BASE_URL_ENV = "RUNNER_LIVE_BASE_URL"
FAULT_ENV = "RUNNER_FAULT"


@dataclass(frozen=True)
class TurnRequest:
    case: Case
    profile: Profile
    behaviour: Behaviour
    image: ImageRecord
    out_dir: Path
    run_id: str
    model: ModelChoice
    deadline: float | None = None  # seconds; the profile's default when None
    keep: bool = False
    condition_id: str | None = None  # the row's condition; the case's first when None
    model_fault: str | None = None  # --model-fault KIND[@STEP]: the scripted model fails on purpose

    @property
    def condition(self) -> Condition:
        return self.case.condition_for(self.condition_id)


@dataclass
class TurnReport:
    """What ``runner exec`` prints and writes."""

    request: TurnRequest
    result: ExecutionResult
    record: dict[str, Json]
    files: dict[str, str]
    drive: Drive
    elapsed: float
    mcp: dict[str, Json] = field(default_factory=dict)
    infrastructure_error: dict[str, Json] | None = None

    def to_json(self) -> dict[str, Json]:
        result = self.result
        outcome: dict[str, Json] = {"metadata": result.metadata}
        if result.escalation is not None:
            outcome = {"type": "escalate", "reason": result.escalation.reason, **outcome}
        elif result.status.value == "succeeded":
            outcome = {"type": "complete", "output": result.output, **outcome}
        elif result.error is not None and result.status.value != "cancelled":
            outcome = {"type": "fail", "error": result.error.to_json(), **outcome}
        return {
            "status": result.status.value,
            "reasonCode": result.reason_code,
            "executionId": result.execution_id,
            "outcome": outcome,
            "error": result.error.to_json() if result.error else None,
            "escalation": result.escalation.to_json() if result.escalation else None,
            "infrastructureError": self.infrastructure_error,
            "harness": self.request.profile.id,
            "case": self.request.case.id,
            "behaviour": self.request.behaviour.value,
            "model": self.request.model.to_json(),
            "exitCode": self.drive.exit_code,
            "deadlineHit": self.drive.deadline_hit,
            "elapsedSeconds": round(self.elapsed, 3),
            "containerId": self.drive.container_id,
            "kept": self.request.keep,
            "mcp": self.mcp,
            "files": self.files,
        }


async def run_turn(client: docker.DockerClient, req: TurnRequest, progress: Progress = lambda _: None) -> TurnReport:
    started = time.monotonic()
    profile, case, condition = req.profile, req.case, req.condition
    execution_id = f"{case.id}.{condition.id}.{profile.id}"
    deadline = req.deadline if req.deadline is not None else profile.default_deadline_seconds
    scrubber = Scrubber(os.environ, profile.credentials)
    req.out_dir.mkdir(parents=True, exist_ok=True)

    world = build_world(condition.world)
    envelope = Envelope(
        world, execution_id, RuntimeInfo(f"runner.{profile.id}.mcp", runner.__version__), clock=world.clock
    )
    latch = EscalationLatch(envelope, envelope.catalogue.names)
    # A deliberately broken build, for proving the judge and the gate catch it: the MCP server calls
    # the envelope directly, and the CLI's own outcome is the turn's (ADR 0018's "before").
    invoker = envelope if os.environ.get(FAULT_ENV) == "latch-disabled" else latch
    instructions = instructions_for(world.grants)
    prompt = prompt_for(case, issue_uncatalogued=profile.issues_uncatalogued, condition=condition)
    envelope.annotate("promptHash", prompt_hash(instructions, prompt))

    actions = [
        a.to_json()
        for a in actions_for(case, req.behaviour, issue_uncatalogued=profile.issues_uncatalogued, condition=condition)
    ]
    script: dict[str, object] = {"harness": profile.id, "server": profile.mcp_server_name, "actions": actions}
    model_id = _model_id(profile, req.model)
    values = placeholder_values(profile, prompt, model_id, profile.model.placeholder_key if profile.model else None)
    turn_dir = create_turn_dir(profile, script, values)

    env = {**profile.render_env(values), "HOME": turn_dir.home}
    if profile.home == "turn":
        env.update({"RUNNER_CD": turn_dir.workdir, "PWD": turn_dir.workdir})
    if profile.model is not None:
        env["RUNNER_MODEL_PORT"] = str(profile.model.port)
    spec = ContainerSpec(
        image_id=req.image.image_id,
        argv=profile.render_argv(values),
        env=env,
        turn_dir=turn_dir.host,
        labels={RUN_LABEL: req.run_id, CELL_LABEL: execution_id, "runner.harness": profile.id},
        stdin=_stdin_for(profile, prompt, values),
        keep_stdin_open=profile.prompt.keep_stdin_open,
        workdir=turn_dir.workdir,
    )
    reader = StreamReader(get_interpreter(profile.interpreter))
    tail, err_tail = Tail(), Tail(max_lines=20)
    stdout = StreamSink(req.out_dir / "stdout.log", scrubber, tail, reader)
    stderr = StreamSink(req.out_dir / "stderr.log", scrubber, err_tail)
    mcp_log: list[dict[str, Any]] = []

    def log_mcp(kind: str, data: dict[str, Any]) -> None:
        mcp_log.append({"event": kind, **data})

    proc = SandboxedProcess(client, spec)
    try:
        async with AsyncExitStack() as stack:
            server = await stack.enter_async_context(serve_mcp(
                turn_dir.mcp_socket, envelope.catalogue, invoker, instructions=instructions,
                server_name=profile.mcp_server_name, on_event=log_mcp,
            ))
            model = await _serve_model(stack, req, turn_dir.model_socket, actions, scrubber, model_id)
            progress(f"starting {profile.label} in {req.image.image_id[:19]} ({req.model.mode} model)")
            run = await drive(proc, stdout, stderr, deadline, profile, progress)
            divergence = None
            mcp_summary: dict[str, Json] = {
                "connections": server.connections, "sessionsInitialized": server.sessions_initialized,
                "calls": server.calls, "clients": server.client_infos,
            }
            if model is not None:
                mcp_summary["modelRequests"] = getattr(model, "requests", None)
                divergence = getattr(model, "divergence", None)
        stdout.close()
        stderr.close()
        await anyio.to_thread.run_sync(_read_session_log, profile, turn_dir.home_host, run, reader, limiter=THREADS)

        harness_metadata: dict[str, Json] = {
            "harness": profile.id,
            "toolshare": "mcp",
            "mcpServer": profile.mcp_server_name,
            "catalogHash": f"sha256:{envelope.catalogue.catalog_hash}",
            "transcriptTail": tail.lines(),
            "imageId": req.image.image_id,
            "cliVersion": req.image.cli_version,
            "behaviour": req.behaviour.value,
            "modelMode": req.model.mode,
        }
        if model_id:
            harness_metadata["model"] = model_id
        outcome = _harness_outcome(run, reader, profile, deadline)
        if run.not_started is not None:
            harness_metadata["harnessStartError"] = scrubber.text(run.not_started)
        settled = latch.settle(outcome, harness_metadata)
        if run.deadline_hit and not latch.asked:
            # stopped before any ask: the turn was cancelled, whatever the CLI said afterwards
            result = envelope.cancel(f"the turn deadline of {deadline:g}s passed", settled.metadata)
        else:
            result = envelope.settle(settled)
        result = _scrubbed(result, scrubber)
        record = scrubber.value(envelope.record(result))
        infra = _infrastructure_error(run, reader, server.sessions_initialized, profile, err_tail, scrubber)
        if divergence:
            # a replay stops at the first request that differs from the recording instead of improvising
            infra = {"kind": "replay_diverged", "detail": scrubber.text(f"step {divergence.get('step')}: "
                                                                        f"{divergence.get('what')}"), **divergence}
        files = _write_artifacts(req.out_dir, record, result, script, prompt, instructions, mcp_log, scrubber)
        if profile.session_transcript and turn_dir.home_host is not None:
            copied = copy_session_transcript(
                turn_dir.home_host / profile.session_transcript, req.out_dir / "session", scrubber
            )
            if copied:
                files["session"] = str(req.out_dir / "session")
        if profile.model is not None:
            files["modelExchanges"] = str(req.out_dir / "model-exchanges.jsonl")
        return TurnReport(
            request=req, result=result, record=record, files=files, drive=run,
            elapsed=time.monotonic() - started, mcp=mcp_summary, infrastructure_error=infra,
        )
    finally:
        with anyio.CancelScope(shield=True):
            if not req.keep:
                await anyio.to_thread.run_sync(proc.remove, limiter=THREADS)
            turn_dir.remove()


def _model_id(profile: Profile, choice: ModelChoice) -> str | None:
    if profile.model is None:
        return None
    if choice.mode == "live" and profile.model.live and profile.model.live.model:
        return profile.model.live.model
    return profile.model.scripted_model


async def _serve_model(
    stack: AsyncExitStack, req: TurnRequest, socket_path: Path, actions: list[dict[str, Any]],
    scrubber: Scrubber, model_id: str | None,
) -> Any:
    profile = req.profile
    if profile.model is None:
        return None
    from runner.model import ModelEndpointConfig, serve_model

    live = profile.model.live
    if live is not None and os.environ.get(LIVE_BASE_URL_ENV):
        # a gateway, a recording proxy, or (in the tests) a local upstream standing in for the vendor
        live = live.model_copy(update={"base_url": os.environ[LIVE_BASE_URL_ENV]})
    config = ModelEndpointConfig(
        mode=req.model.mode, actions=actions, live=live, scrubber=scrubber,
        recording=Path(req.model.recording) if req.model.recording else None,
        placeholder_key=profile.model.placeholder_key, fault=req.model_fault,
    )
    return await stack.enter_async_context(
        serve_model(socket_path, config, req.out_dir / "model-exchanges.jsonl", server_name=profile.mcp_server_name)
    )


def _read_session_log(profile: Profile, home: Path | None, run: Drive, reader: StreamReader) -> None:
    """For a CLI whose outcome is in its session log, not on stdout (dsh): read that log once it has exited."""
    session_reader = get_session_reader(profile.interpreter)
    if session_reader is None or home is None or not profile.session_transcript or run.not_started is not None:
        return
    reader.steps(session_reader(home / profile.session_transcript, run.exit_code))


def _harness_outcome(run: Drive, reader: StreamReader, profile: Profile, deadline: float) -> RuntimeOutcome:
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


def _infrastructure_error(
    run: Drive, reader: StreamReader, sessions: int, profile: Profile, err_tail: Tail, scrubber: Scrubber
) -> dict[str, Json] | None:
    """A turn that never really ran (no container, no MCP) is the infrastructure's fault, not the CLI's."""
    if run.not_started is not None:
        return {"kind": "container_not_started", "detail": scrubber.text(run.not_started)}
    if run.engine_failed is not None:
        return {"kind": "engine_failed", "detail": scrubber.text(run.engine_failed), "stderrTail": err_tail.lines()}
    failed = [s for s in reader.startup if not s.connected]
    if failed:
        words = "; ".join(f"{s.server}: {s.detail}" for s in failed)
        return {"kind": "mcp_not_connected", "detail": f"the CLI reported its MCP server not connected ({words})",
                "stderrTail": err_tail.lines()}
    if profile.mcp_startup_required and not reader.startup:
        return {"kind": "mcp_not_connected", "detail": "the CLI never reported its MCP servers at start-up",
                "stderrTail": err_tail.lines()}
    if profile.requires_mcp_session and sessions == 0:
        return {"kind": "mcp_not_connected", "detail": "the CLI never opened an MCP session on the mounted socket",
                "stderrTail": err_tail.lines()}
    return None


def _scrubbed(result: ExecutionResult, scrubber: Scrubber) -> ExecutionResult:
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


def _stdin_for(profile: Profile, prompt: str, values: dict[str, str]) -> bytes | None:
    feed = profile.prompt
    if feed.via == "stdin-line":
        line = string.Template(feed.stdin_template).substitute(values) if feed.stdin_template else prompt
        return line.encode() + b"\n"
    if feed.via == "stdin-file":
        return prompt.encode()
    return None


def _write_artifacts(
    out: Path, record: dict[str, Json], result: ExecutionResult, script: dict[str, Any], prompt: str,
    instructions: str, mcp_log: list[dict[str, Any]], scrubber: Scrubber,
) -> dict[str, str]:
    def dump(name: str, body: object) -> str:
        path = out / name
        path.write_text(scrubber.text(json.dumps(body, indent=2, ensure_ascii=False)) + "\n", encoding="utf-8")
        return str(path)

    files = {
        "record": dump("record.json", record),
        "executionResult": dump("execution-result.json", result.to_json()),
        "script": dump("script.json", script),
        "stdout": str(out / "stdout.log"),
        "stderr": str(out / "stderr.log"),
    }
    (out / "prompt.txt").write_text(scrubber.text(f"{instructions}\n\n---\n\n{prompt}\n"), encoding="utf-8")
    files["prompt"] = str(out / "prompt.txt")
    with (out / "mcp-events.jsonl").open("w", encoding="utf-8") as fh:
        for event in mcp_log:
            fh.write(scrubber.text(json.dumps(event, ensure_ascii=False)) + "\n")
    files["mcpEvents"] = str(out / "mcp-events.jsonl")
    return files
