"""One turn, end to end: case + profile in, settled result and record out (DESIGN "one turn").

:func:`run_turn` is its steps, in order, each a function of its own:

1. **Prepare** (:mod:`runner.turn.prepare`): the world and its envelope resolve the catalogue once;
   the latch wraps the envelope; the prompt and instructions are composed and ``promptHash`` is
   annotated; the turn dir is written and the profile rendered into the process's spec.
2. **Serve and start**: the MCP server listens on ``<turn dir>/mcp.sock`` and, for a CLI with a
   model, the model endpoint on ``<turn dir>/model.sock`` (both sockets listen before the container starts; the
   servers start, and the MCP SDK is imported, while the engine starts it); the CLI's sandbox comes from the
   injected :data:`~runner.sandbox.interface.SandboxFactory` (by default the sandbox backend's,
   :class:`~runner.sandbox.backend.SandboxBackend`: on Docker the hardened container over the requested
   transport), and the turn drives it through :class:`~runner.sandbox.interface.Sandbox` alone.
3. **Drive to the end** (:mod:`runner.turn.drive`): its stdout is read through the profile's
   interpreter. Nothing is stopped when the latch fires; only the deadline stops the CLI (SIGTERM to
   its group, the grace period, SIGKILL).
4. **Settle** (:mod:`runner.turn.settle`): the CLI's own outcome is settled by the latch and then by
   the envelope.
5. **Collect**: the record, the transcripts and the CLI's own session transcript are written, scrubbed.
6. **Teardown, always**, in order: close the bridge (MCP server), stop the model endpoint (both when
   step 2's stack exits), remove the sandbox (unless kept; once nothing more is read from it, while step 4
   settles and step 5 writes, so that the engine's work and runner's overlap), remove the turn dir.

The turn runs on one clock (:func:`runner.turn.timeline.start_clock`), started first: the turn's start
(``startedAt``), the stamps of the MCP events and the model exchanges, and every moment on the timeline
(``timeline.jsonl``), down to ``teardown_done`` and ``turn_ended``. From it the report takes
``windDownSeconds``: the ask answered to the CLI's exit by itself.
"""

from __future__ import annotations

import json
import socket
import stat
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING

import anyio
import anyio.abc
import anyio.from_thread

from runner.core.outcomes import ExecutionResult, JsonValue
from runner.core.scrub import Scrubber
from runner.core.timeline import TimelineEvent, TurnClock, wind_down_seconds
from runner.harnesses.interpreters import get_session_reader
from runner.sandbox.interface import Sandbox, SandboxFactory, Transport
from runner.sandbox.ownership import ContainerUser, give
from runner.turn.collect import SESSION_LIMITS, copy_session_transcript
from runner.turn.drive import THREADS, Drive, drive, start_cli
from runner.turn.measure import TurnMeasures, measure_turn
from runner.turn.prepare import PreparedTurn, TurnRequest, prepare_turn
from runner.turn.settle import Settlement, settle_turn
from runner.turn.timeline import start_clock

if TYPE_CHECKING:
    from runner.mcp.server import McpServerHandle
    from runner.model import ModelEndpointHandle
    from runner.sandbox.backend import SandboxBackend

__all__ = ["TurnReport", "TurnRequest", "run_turn"]

Progress = Callable[[str], None]


@dataclass
class TurnReport:
    """What ``runner exec`` prints and writes."""

    request: TurnRequest
    result: ExecutionResult
    record: dict[str, JsonValue]
    files: dict[str, str]
    drive: Drive
    elapsed: float
    transport: Transport | None  # which transport ran (mount or stream); None when no container ran (refused)
    mcp: dict[str, JsonValue] = field(default_factory=dict)
    infrastructure_error: dict[str, JsonValue] | None = None
    started_at: str | None = None  # the turn's start, on its clock (ISO-8601 UTC, milliseconds)
    wind_down_seconds: float | None = None  # the ask answered -> the CLI's exit by itself; None: no ask, or deadline
    measures: TurnMeasures | None = None  # usage, offered tools and tool policy, failure evidence (runner.turn.measure)

    def to_json(self) -> dict[str, JsonValue]:
        result = self.result
        outcome: dict[str, JsonValue] = {"metadata": result.metadata}
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
            "model": {**self.request.model.to_json()},
            "exitCode": self.drive.exit_code,
            "deadlineHit": self.drive.deadline_hit,
            "windDownSeconds": self.wind_down_seconds,
            "startedAt": self.started_at,
            "elapsedSeconds": round(self.elapsed, 3),
            "containerId": self.drive.container_id,
            "kept": self.request.keep,
            "transport": self.transport,
            "mcp": self.mcp,
            **self._measured(),
            "files": {**self.files},
        }

    def _measured(self) -> dict[str, JsonValue]:
        """``usage`` (with the model id it was spent on, as ``result.json`` writes it) and ``toolPolicy``, for a turn
        whose CLI had a model endpoint."""
        measures = self.measures
        if measures is None or measures.usage is None:
            return {}
        return {"usage": {"model": measures.model_id, **measures.usage.to_json()},
                "toolPolicy": measures.policy.to_json() if measures.policy is not None else None}


@dataclass
class Played:
    """What serving the turn and driving its CLI to the end left behind."""

    run: Drive
    server: McpServerHandle
    mcp: dict[str, JsonValue]
    divergence: dict[str, JsonValue] | None
    model: ModelEndpointHandle | None = None


def _quiet(_message: str) -> None:
    pass


async def run_turn(
    backend: SandboxBackend | None, req: TurnRequest, progress: Progress = _quiet,
    *, sandboxes: SandboxFactory | None = None,
) -> TurnReport:
    """Run one turn; its CLI's sandbox comes from ``sandboxes`` (by default, ``backend``'s over the turn's
    transport and runtime)."""
    clock = start_clock()
    if sandboxes is None:
        if backend is None:
            raise ValueError("run_turn needs a sandbox backend or a sandbox factory")
        sandboxes = backend.sandboxes(req.settings.transport, req.settings.runtime,
                                      probe_cache=req.settings.host.images.cache_dir)
    turn = prepare_turn(req, clock)
    if turn.envelope.refusal is not None:
        # refused at admission (authority unavailable, no grant admitting the turn): no runtime may run it, so no
        # container is started; the record of the refusal is the turn
        try:
            return _refused(turn, clock)
        finally:
            await _teardown(turn, None)
    proc: Sandbox | None = None
    removed = False
    try:
        proc = await anyio.to_thread.run_sync(sandboxes, turn.spec, limiter=THREADS)
        turn.timeline.record(TimelineEvent.CONTAINER_CREATED)
        played = await _serve_and_drive(turn, proc, progress)
        turn.transcript.close()
        session = await anyio.to_thread.run_sync(_copy_session, turn, proc, limiter=THREADS)
        if session is not None:  # a CLI whose outcome is in its session log, not on stdout (dsh), is read now
            await anyio.to_thread.run_sync(_read_session_log, turn, played.run, session, limiter=THREADS)
        async with anyio.create_task_group() as tg:
            if not req.keep:  # nothing more is read from the container: the engine removes it while the turn settles
                await _begin_in_thread(tg, proc.remove)
            settled = settle_turn(turn, played.run, played.server.sessions_initialized, played.divergence)
            files = _collect(turn, settled, session)
            measures = measure_turn(turn, played.run, settled.result, turn.transcript.reader,
                                    played.server.sessions_initialized, played.model, settled.infrastructure_error)
        removed = not req.keep
        return TurnReport(
            request=req, result=settled.result, record=settled.record, files=files, drive=played.run,
            elapsed=clock.now().t, transport=proc.transport, mcp=played.mcp,
            infrastructure_error=settled.infrastructure_error, started_at=clock.started.at,
            wind_down_seconds=wind_down_seconds(turn.timeline.entries), measures=measures,
        )
    finally:
        await _teardown(turn, None if removed else proc)


async def _begin_in_thread(tasks: anyio.abc.TaskGroup, work: Callable[[], object]) -> None:
    """Run ``work`` in a worker thread, as a task of ``tasks``; return once the thread has taken it up, so that what
    the caller does next without yielding (writing files, importing) does not hold it back."""
    under_way = anyio.Event()

    def run() -> None:
        anyio.from_thread.run_sync(under_way.set)
        work()

    tasks.start_soon(partial(anyio.to_thread.run_sync, run, limiter=THREADS))
    await under_way.wait()


def _refused(turn: PreparedTurn, clock: TurnClock) -> TurnReport:
    result = turn.envelope.refusal
    assert result is not None
    record = turn.scrubber.value(turn.envelope.record(result))
    files = _write_artifacts(turn.req.out_dir, record, result, turn.script, turn.prompt, turn.instructions,
                             turn.mcp_log, turn.scrubber)
    files["timeline"] = str(turn.timeline_file.path)
    turn.transcript.close()
    run = Drive()
    return TurnReport(request=turn.req, result=result, record=record, files=files, drive=run,
                      elapsed=clock.now().t, transport=None, started_at=clock.started.at)


async def _serve_and_drive(turn: PreparedTurn, proc: Sandbox, progress: Progress) -> Played:
    """Serve MCP (and the model), start the CLI and drive it to its end; the servers stop on the way out.

    The sockets are bound and listening before anything else, then the engine creates and starts the CLI's container
    (in a worker thread) while this process imports the MCP SDK and starts its servers: the CLI never finds a socket
    missing, one that connects early waits in the kernel's backlog for its first answer, and the engine's work and
    runner's overlap instead of following each other."""
    req, profile = turn.req, turn.profile
    progress(f"starting {profile.label} in {req.image.image_id[:19]} ({req.model.mode} model)")
    async with AsyncExitStack() as stack:
        user = turn.turn_dir.user
        mcp_sock = stack.enter_context(_listening(turn.turn_dir.mcp_socket, user))
        model_sock = stack.enter_context(_listening(turn.turn_dir.model_socket, user)) if profile.model else None
        tasks = await stack.enter_async_context(anyio.create_task_group())
        started: list[str | None] = []
        ready, under_way = anyio.Event(), anyio.Event()

        async def start() -> None:
            problem = await start_cli(proc, under_way)
            if problem is None:  # on the clock as soon as the engine says so: the CLI may call the servers next
                turn.timeline.record(TimelineEvent.CONTAINER_STARTED)
            started.append(problem)
            ready.set()

        tasks.start_soon(start)
        await under_way.wait()  # a worker thread is creating the container before the servers' start-up below
        from runner.mcp.server import serve_mcp  # the SDK's import (about half a second of CPU) overlaps it

        server = await stack.enter_async_context(serve_mcp(
            turn.turn_dir.mcp_socket, turn.envelope.catalogue, turn.invoker, instructions=turn.instructions,
            server_name=profile.mcp_server_name, on_event=turn.log_mcp, protocol=req.settings.protocol, sock=mcp_sock,
        ))
        model = await _serve_model(stack, turn, model_sock)
        await ready.wait()
        run = await drive(proc, turn.transcript.stdout, turn.transcript.stderr, turn.deadline, profile, progress,
                          turn.timeline, started=(started[0],), limits=turn.spec.limits)
        mcp: dict[str, JsonValue] = {
            "connections": server.connections, "sessionsInitialized": server.sessions_initialized,
            "calls": server.calls, "clients": [{**info} for info in server.client_infos],
        }
        divergence = None
        if model is not None:
            mcp["modelRequests"] = model.requests
            divergence = model.divergence
    return Played(run, server, mcp, divergence, model)


@contextmanager
def _listening(path: Path, user: ContainerUser) -> Iterator[socket.socket]:
    """A unix socket bound at ``path`` and listening, reachable by the container's ``user`` and runner alone (its
    server takes it over); closed and unlinked on the way out."""
    with suppress(FileNotFoundError):
        if stat.S_ISSOCK(path.lstat().st_mode):
            path.unlink()  # a stale socket from an earlier run in the same directory
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(path))  # in the turn dir, which nobody else may pass through
        give(path, user)  # 0600, the container's: connecting takes write permission on the socket
        sock.listen(128)
        yield sock
    finally:
        sock.close()
        path.unlink(missing_ok=True)


async def _serve_model(
    stack: AsyncExitStack, turn: PreparedTurn, sock: socket.socket | None = None,
) -> ModelEndpointHandle | None:
    req, actions, scrubber = turn.req, turn.actions, turn.scrubber
    profile = req.profile
    if profile.model is None:
        return None
    from runner.harnesses.interpreters import tool_naming
    from runner.model import ModelEndpointConfig, serve_model

    live, host = profile.model.live, req.settings.host
    if live is not None and host.live_base_url:
        live = live.model_copy(update={"base_url": host.live_base_url})
    config = ModelEndpointConfig(
        mode=req.model.mode, actions=actions, live=live, scrubber=scrubber, environ=host.variables,
        recording=req.model.recording, placeholder_key=profile.model.placeholder_key, fault=req.model.fault,
        invents=profile.issues_uncatalogued, dialect=profile.model.dialect, naming=tool_naming(profile.source),
    )
    return await stack.enter_async_context(serve_model(
        turn.turn_dir.model_socket, config, req.out_dir / "model-exchanges.jsonl", server_name=profile.mcp_server_name,
        timeline=turn.timeline, sock=sock,
    ))


def _copy_session(turn: PreparedTurn, proc: Sandbox) -> Path | None:
    """Copy the CLI's own session transcript out of its HOME (scrubbed), read through the sandbox, so it works
    however the turn's files reach the engine; where it landed, or None."""
    req, profile, home = turn.req, turn.profile, turn.turn_dir.home_host
    if not profile.session_transcript or home is None:
        return None
    relative = str((home / profile.session_transcript).relative_to(turn.turn_dir.host))
    with proc.read_tree(relative, SESSION_LIMITS) as tree:
        copied = copy_session_transcript(tree, req.out_dir / "session", turn.scrubber).files if tree else []
    return req.out_dir / "session" if copied else None


def _read_session_log(turn: PreparedTurn, run: Drive, session: Path) -> None:
    """Give the stream reader the steps a CLI's session log holds (only interpreters that have a session
    reader: runner.harnesses.interpreters.SESSION_READERS), once the CLI has exited. ``session`` is runner's own
    copy (:func:`_copy_session`, made through the intake), never the CLI's tree in the turn dir."""
    reader = get_session_reader(turn.profile.interpreter)
    if reader is not None and run.not_started is None:
        turn.transcript.reader.steps(reader(session, run.exit_code))


def _collect(turn: PreparedTurn, settled: Settlement, session: Path | None) -> dict[str, str]:
    """Write the turn's artifacts; the files, by role (the session transcript was copied before settling)."""
    req, profile = turn.req, turn.profile
    files = _write_artifacts(req.out_dir, settled.record, settled.result, turn.script, turn.prompt,
                             turn.instructions, turn.mcp_log, turn.scrubber)
    if session is not None:
        files["session"] = str(session)
    if profile.model is not None:
        files["modelExchanges"] = str(req.out_dir / "model-exchanges.jsonl")
    files["timeline"] = str(turn.timeline_file.path)
    return files


async def _teardown(turn: PreparedTurn, proc: Sandbox | None) -> None:
    """Remove the sandbox (unless kept) and the turn dir, whatever happened before, even under cancellation; the
    timeline's last two entries, and its file closed."""
    with anyio.CancelScope(shield=True):
        try:
            if proc is not None and not turn.req.keep:
                await anyio.to_thread.run_sync(proc.remove, limiter=THREADS)
            turn.turn_dir.remove()
            turn.timeline.record(TimelineEvent.TEARDOWN_DONE)
            turn.timeline.record(TimelineEvent.TURN_ENDED)
        finally:
            turn.timeline_file.close()


def _write_artifacts(
    out: Path, record: dict[str, JsonValue], result: ExecutionResult, script: dict[str, JsonValue], prompt: str,
    instructions: str, mcp_log: list[dict[str, JsonValue]], scrubber: Scrubber,
) -> dict[str, str]:
    """The turn's own files. Text from the CLI may hold what UTF-8 cannot encode (a lone surrogate a frame escaped):
    JSON takes it as its escape, and text as the same backslash escape, never an error."""

    def dump(name: str, body: object) -> str:
        path = out / name
        path.write_text(scrubber.text(json.dumps(body, indent=2, ensure_ascii=False)) + "\n", encoding="utf-8",
                        errors="backslashreplace")
        return str(path)

    files = {
        "record": dump("record.json", record),
        "executionResult": dump("execution-result.json", result.to_json()),
        "script": dump("script.json", script),
        "stdout": str(out / "stdout.log"),
        "stderr": str(out / "stderr.log"),
    }
    (out / "prompt.txt").write_text(scrubber.text(f"{instructions}\n\n---\n\n{prompt}\n"), encoding="utf-8",
                                    errors="backslashreplace")
    files["prompt"] = str(out / "prompt.txt")
    with (out / "mcp-events.jsonl").open("w", encoding="utf-8", errors="backslashreplace") as fh:
        for event in mcp_log:
            fh.write(scrubber.text(json.dumps(event, ensure_ascii=False)) + "\n")
    files["mcpEvents"] = str(out / "mcp-events.jsonl")
    return files
