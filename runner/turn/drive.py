"""Driving the CLI's process for the length of a turn: start, read, wait, and the deadline.

Nothing here reacts to what the CLI asked: the only stop is the deadline, which sends SIGTERM to the
CLI's process group, waits the profile's grace period, then sends SIGKILL. Blocking docker-py calls
run in worker threads from our own limiter, so the MCP server keeps answering meanwhile.

Each engine call is retried on its own (runner.sandbox.engine). One that still fails mid-turn (the
wait, a signal) is kept in ``Drive.engine_failed``: the turn then ends as an infrastructure error,
and teardown removes the container as always.
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import anyio.to_thread

from runner.harnesses.profile import Profile
from runner.sandbox.container import STDOUT, ContainerStartError
from runner.sandbox.engine import EngineError
from runner.turn.process import CliProcess
from runner.turn.transcript import StreamSink

THREADS = anyio.CapacityLimiter(16)  # our own: waits and pumps must not starve anyio's default pool
KILL_WAIT_SECONDS = 15.0
DRAIN_SECONDS = 5.0


@dataclass
class Drive:
    container_id: str | None = None
    exit_code: int | None = None
    deadline_hit: bool = False
    not_started: str | None = None
    engine_failed: str | None = None  # the engine kept failing a call mid-turn: nobody knows how the CLI ended


async def drive(
    proc: CliProcess, stdout: StreamSink, stderr: StreamSink, deadline: float, profile: Profile,
    progress: object,
) -> Drive:
    say = progress if callable(progress) else (lambda _m: None)
    run = Drive()
    try:
        await anyio.to_thread.run_sync(proc.start, limiter=THREADS)
    except ContainerStartError as err:
        run.not_started = str(err)
        return run
    run.container_id = proc.id
    exited, pumped = anyio.Event(), anyio.Event()
    codes: list[int | None] = []
    failures: list[EngineError] = []  # engine calls that kept failing after their retries

    def on_output(stream: int, data: bytes) -> None:
        if stream != STDOUT:
            stderr.feed(data)
        elif stdout.feed(data) and profile.prompt.keep_stdin_open:
            proc.close_stdin()  # the first terminal frame ends the CLI's input (§3.2)

    async def pump() -> None:
        await anyio.to_thread.run_sync(proc.pump, on_output, limiter=THREADS, abandon_on_cancel=True)
        pumped.set()

    async def wait() -> None:
        try:
            codes.append(await anyio.to_thread.run_sync(proc.wait, limiter=THREADS, abandon_on_cancel=True))
        except EngineError as err:
            failures.append(err)  # nobody can say how the CLI ended; teardown removes the container
        exited.set()

    async def send(signal: str) -> None:
        try:
            await anyio.to_thread.run_sync(proc.signal, signal, limiter=THREADS)
        except EngineError as err:
            failures.append(err)

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump)
        tg.start_soon(wait)
        say(f"turn running (deadline {deadline:g}s)")
        with anyio.move_on_after(deadline):
            await exited.wait()
        if not exited.is_set():
            run.deadline_hit = True
            say("deadline reached: SIGTERM to the CLI's process group")
            await send("SIGTERM")
            with anyio.move_on_after(profile.wind_down.grace_seconds):
                await exited.wait()
            if not exited.is_set():
                say("grace period over: SIGKILL")
                await send("SIGKILL")
                with anyio.move_on_after(KILL_WAIT_SECONDS):
                    await exited.wait()
        # the output stream ends with the container; let the pump drain what is left
        with anyio.move_on_after(DRAIN_SECONDS):
            await pumped.wait()
        tg.cancel_scope.cancel()
    run.exit_code = codes[0] if codes else None
    if failures:
        run.engine_failed = str(failures[0])
    return run
