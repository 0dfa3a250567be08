"""One turn, end to end: case + profile in, settled result and record out (DESIGN "one turn").

1. The world and its envelope resolve the catalogue once; the latch wraps the envelope.
2. The prompt and instructions are composed and ``promptHash`` is annotated before anything starts.
3. The MCP server listens on ``<turn dir>/mcp.sock``; the CLI starts in its hardened container with
   the turn dir mounted, and its stdout is read through the profile's interpreter.
4. Nothing is stopped when the latch fires. Only the deadline stops the CLI: SIGTERM to its process
   group, a grace period, then SIGKILL.
5. The CLI's own outcome is settled by the latch and then by the envelope; the record is written.
6. Teardown always runs, in order: close the bridge (MCP server), remove the container (unless
   kept), remove the turn dir.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import docker

import runner
from runner.conformance.behaviours import Behaviour, actions_for
from runner.conformance.cases import Case
from runner.conformance.prompt import instructions_for, prompt_for, prompt_hash
from runner.core.envelope import Envelope, RuntimeInfo
from runner.core.latch import EscalationLatch
from runner.core.outcomes import ExecutionResult, Fail, Json, ProtocolError, RuntimeOutcome
from runner.core.vocabulary import Code, message
from runner.core.world import build_world
from runner.harnesses.interpreters import get_interpreter
from runner.harnesses.profile import Profile
from runner.harnesses.stream import StreamReader, Tail, harness_outcome
from runner.mcp.server import serve_mcp
from runner.sandbox.container import (
    CELL_LABEL,
    HOME,
    RUN_LABEL,
    STDOUT,
    TURN_MOUNT,
    ContainerSpec,
    ContainerStartError,
    SandboxedProcess,
)
from runner.sandbox.images import ImageRecord
from runner.turn.scrub import Scrubber
from runner.turn.transcript import StreamSink

THREADS = anyio.CapacityLimiter(16)  # our own: waits and pumps must not starve anyio's default pool
KILL_WAIT_SECONDS = 15.0
Progress = Callable[[str], None]


@dataclass(frozen=True)
class TurnRequest:
    case: Case
    profile: Profile
    behaviour: Behaviour
    image: ImageRecord
    out_dir: Path
    run_id: str
    deadline: float | None = None  # seconds; the profile's default when None
    keep: bool = False


@dataclass
class TurnReport:
    """What ``runner exec`` prints and writes."""

    request: TurnRequest
    result: ExecutionResult
    record: dict[str, Json]
    files: dict[str, str]
    container_id: str | None
    exit_code: int | None
    deadline_hit: bool
    elapsed: float
    mcp: dict[str, Json] = field(default_factory=dict)

    def to_json(self) -> dict[str, Json]:
        body = self.result.to_json()
        outcome: dict[str, Json] = {"metadata": self.result.metadata}
        if self.result.escalation is not None:
            outcome = {"type": "escalate", "reason": self.result.escalation.reason, **outcome}
        elif self.result.error is not None and self.result.status.value != "cancelled":
            outcome = {"type": "fail", "error": self.result.error.to_json(), **outcome}
        elif self.result.status.value == "succeeded":
            outcome = {"type": "complete", "output": self.result.output, **outcome}
        return {
            "status": self.result.status.value,
            "reasonCode": self.result.reason_code,
            "executionId": self.result.execution_id,
            "outcome": outcome,
            "error": body.get("error"),
            "escalation": body.get("escalation"),
            "harness": self.request.profile.id,
            "case": self.request.case.id,
            "behaviour": self.request.behaviour.value,
            "exitCode": self.exit_code,
            "deadlineHit": self.deadline_hit,
            "elapsedSeconds": round(self.elapsed, 3),
            "containerId": self.container_id,
            "kept": self.request.keep,
            "mcp": self.mcp,
            "files": self.files,
        }


async def run_turn(client: docker.DockerClient, req: TurnRequest, progress: Progress = lambda _: None) -> TurnReport:
    started = time.monotonic()
    profile, case = req.profile, req.case
    condition = case.condition
    execution_id = f"{case.id}.{condition.id}.{profile.id}"
    deadline = req.deadline if req.deadline is not None else profile.default_deadline_seconds
    scrubber = Scrubber(os.environ, profile.credentials)
    req.out_dir.mkdir(parents=True, exist_ok=True)

    world = build_world(condition.world)
    envelope = Envelope(world, execution_id, RuntimeInfo(f"runner.{profile.id}.mcp", runner.__version__))
    latch = EscalationLatch(envelope, envelope.catalogue.names)
    instructions = instructions_for(world.grants)
    prompt = prompt_for(case, issue_uncatalogued=profile.issues_uncatalogued)
    envelope.annotate("promptHash", prompt_hash(instructions, prompt))

    turn_dir = Path(tempfile.mkdtemp(prefix="runner-turn-"))
    os.chmod(turn_dir, 0o755)
    actions = actions_for(case, req.behaviour, issue_uncatalogued=profile.issues_uncatalogued)
    script = {"harness": profile.id, "server": profile.mcp_server_name, "actions": [a.to_json() for a in actions]}
    (turn_dir / "script.json").write_text(json.dumps(script), encoding="utf-8")
    os.chmod(turn_dir / "script.json", 0o644)

    values = {
        "prompt": prompt, "turn_dir": TURN_MOUNT, "mcp_socket": f"{TURN_MOUNT}/mcp.sock",
        "script": f"{TURN_MOUNT}/script.json", "home": HOME,
    }
    stdin = _stdin_for(profile, prompt)
    spec = ContainerSpec(
        image_id=req.image.image_id,
        argv=profile.render_argv(values),
        env=profile.render_env(values),
        turn_dir=turn_dir,
        labels={RUN_LABEL: req.run_id, CELL_LABEL: execution_id, "runner.harness": profile.id},
        stdin=stdin,
        keep_stdin_open=profile.prompt.keep_stdin_open,
    )
    reader = StreamReader(get_interpreter(profile.interpreter))
    tail = Tail()
    stdout = StreamSink(req.out_dir / "stdout.log", scrubber, tail, reader)
    stderr = StreamSink(req.out_dir / "stderr.log", scrubber, Tail(max_lines=20))
    mcp_log: list[dict[str, Any]] = []
    proc = SandboxedProcess(client, spec)
    exit_code: int | None = None
    deadline_hit = False
    not_started: str | None = None

    try:
        async with anyio.create_task_group() as tg, serve_mcp(
            turn_dir / "mcp.sock", envelope.catalogue, latch, instructions=instructions,
            server_name=profile.mcp_server_name, on_event=lambda kind, data: mcp_log.append({"event": kind, **data}),
        ) as server:
            progress(f"starting {profile.label} in {req.image.image_id[:19]}")
            try:
                await anyio.to_thread.run_sync(proc.start, limiter=THREADS)
            except ContainerStartError as err:
                not_started = str(err)
            if not_started is None:
                exited, pumped = anyio.Event(), anyio.Event()
                codes: list[int | None] = []

                def on_output(stream: int, data: bytes) -> None:
                    if stream != STDOUT:
                        stderr.feed(data)
                    elif stdout.feed(data) and profile.prompt.keep_stdin_open:
                        proc.close_stdin()  # the first terminal frame ends the CLI's input (§3.2)

                async def pump() -> None:
                    await anyio.to_thread.run_sync(proc.pump, on_output, limiter=THREADS, abandon_on_cancel=True)
                    pumped.set()

                async def wait() -> None:
                    codes.append(await anyio.to_thread.run_sync(proc.wait, limiter=THREADS, abandon_on_cancel=True))
                    exited.set()

                tg.start_soon(pump)
                tg.start_soon(wait)
                progress(f"turn running (deadline {deadline:g}s)")
                with anyio.move_on_after(deadline):
                    await exited.wait()
                if not exited.is_set():
                    deadline_hit = True
                    progress("deadline reached: SIGTERM to the CLI's process group")
                    await anyio.to_thread.run_sync(proc.signal, "SIGTERM", limiter=THREADS)
                    with anyio.move_on_after(profile.wind_down.grace_seconds):
                        await exited.wait()
                    if not exited.is_set():
                        progress("grace period over: SIGKILL")
                        await anyio.to_thread.run_sync(proc.signal, "SIGKILL", limiter=THREADS)
                        with anyio.move_on_after(KILL_WAIT_SECONDS):
                            await exited.wait()
                exit_code = codes[0] if codes else None
                # the output stream ends with the container; give the pump a moment to drain it
                with anyio.move_on_after(5):
                    await pumped.wait()
                tg.cancel_scope.cancel()
            mcp_summary = {
                "connections": server.connections, "sessionsInitialized": server.sessions_initialized,
                "calls": server.calls, "clients": server.client_infos,
            }
        stdout.close()
        stderr.close()

        transcript_tail = tail.lines()
        harness_metadata: dict[str, Json] = {
            "harness": profile.id,
            "toolshare": "mcp",
            "mcpServer": profile.mcp_server_name,
            "catalogHash": f"sha256:{envelope.catalogue.catalog_hash}",
            "transcriptTail": transcript_tail,
            "imageId": req.image.image_id,
            "cliVersion": req.image.cli_version,
            "behaviour": req.behaviour.value,
        }
        if not_started is not None:
            outcome: RuntimeOutcome = Fail(
                ProtocolError.of(Code.HARNESS_NOT_STARTED, message(Code.HARNESS_NOT_STARTED, harness=profile.id)),
            )
            harness_metadata["harnessStartError"] = scrubber.text(not_started)
        elif deadline_hit:
            text = message(Code.HARNESS_WIND_DOWN_TIMEOUT, harness=profile.id, deadline=f"{deadline:g}")
            outcome = Fail(ProtocolError.of(Code.HARNESS_WIND_DOWN_TIMEOUT, text, retryable=False))
        else:
            outcome = harness_outcome(reader, exit_code, profile.id)

        settled = latch.settle(outcome, harness_metadata)
        if deadline_hit and not latch.asked:
            # stopped before any ask: the turn was cancelled, whatever the CLI said afterwards
            result = envelope.cancel(f"the turn deadline of {deadline:g}s passed", settled.metadata)
        else:
            result = envelope.settle(settled)
        record = envelope.record(result)
        files = _write_artifacts(req.out_dir, record, result, script, prompt, instructions, mcp_log, scrubber)
        return TurnReport(
            request=req, result=result, record=record, files=files,
            container_id=proc.id, exit_code=exit_code, deadline_hit=deadline_hit,
            elapsed=time.monotonic() - started, mcp=mcp_summary,
        )
    finally:
        with anyio.CancelScope(shield=True):
            if not req.keep:
                await anyio.to_thread.run_sync(proc.remove, limiter=THREADS)
            shutil.rmtree(turn_dir, ignore_errors=True)


def _stdin_for(profile: Profile, prompt: str) -> bytes | None:
    if profile.prompt.via == "stdin-line":
        return (prompt + "\n").encode()
    if profile.prompt.via == "stdin-file":
        return prompt.encode()
    return None


def _write_artifacts(
    out: Path, record: dict[str, Json], result: ExecutionResult, script: dict[str, Json], prompt: str,
    instructions: str, mcp_log: list[dict[str, Any]], scrubber: Scrubber,
) -> dict[str, str]:
    def dump(name: str, body: object) -> str:
        path = out / name
        path.write_text(scrubber.text(json.dumps(body, indent=2, ensure_ascii=False)) + "\n", encoding="utf-8")
        return str(path)

    files = {
        "record": dump("record.json", record),
        "result": dump("result.json", result.to_json()),
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
