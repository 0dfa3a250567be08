"""Driving the CLI's container for the length of a turn: start, read, wait, and the deadline.

Nothing here reacts to what the CLI asked: the only stop is the deadline, which sends SIGTERM to the
CLI's process group, waits the profile's grace period, then sends SIGKILL. Blocking docker-py calls
run in worker threads from our own limiter, so the MCP server keeps answering meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass

import anyio
import anyio.to_thread

from runner.harnesses.profile import Profile
from runner.sandbox.container import STDOUT, ContainerStartError, SandboxedProcess
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


async def drive(
    proc: SandboxedProcess, stdout: StreamSink, stderr: StreamSink, deadline: float, profile: Profile,
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

    async with anyio.create_task_group() as tg:
        tg.start_soon(pump)
        tg.start_soon(wait)
        say(f"turn running (deadline {deadline:g}s)")
        with anyio.move_on_after(deadline):
            await exited.wait()
        if not exited.is_set():
            run.deadline_hit = True
            say("deadline reached: SIGTERM to the CLI's process group")
            await anyio.to_thread.run_sync(proc.signal, "SIGTERM", limiter=THREADS)
            with anyio.move_on_after(profile.wind_down.grace_seconds):
                await exited.wait()
            if not exited.is_set():
                say("grace period over: SIGKILL")
                await anyio.to_thread.run_sync(proc.signal, "SIGKILL", limiter=THREADS)
                with anyio.move_on_after(KILL_WAIT_SECONDS):
                    await exited.wait()
        # the output stream ends with the container; let the pump drain what is left
        with anyio.move_on_after(DRAIN_SECONDS):
            await pumped.wait()
        tg.cancel_scope.cancel()
    run.exit_code = codes[0] if codes else None
    return run
