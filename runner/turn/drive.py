"""Driving the CLI's sandbox for the length of a turn: start, read, wait, and the deadline.

Nothing here reacts to what the CLI asked: the only stop is the deadline, which sends SIGTERM to the
CLI's process group, waits the profile's grace period, then sends SIGKILL. Blocking docker-py calls
run in worker threads from our own limiter, so the MCP server keeps answering meanwhile.

One bound besides the deadline: what the CLI writes where the host keeps it (the turn dir under the mount
transport). Looked at while the CLI runs (:meth:`~runner.sandbox.interface.Sandbox.disk_look`, every
``ResourceLimits.disk_poll_seconds``, more often once past half the budget), a turn dir over its budget stops the
CLI at once with SIGKILL (a grace period would let it write on), kept in ``Drive.over_budget``: the turn then ends
as an infrastructure error that says so.

Every moment of it goes on the turn's timeline when one is given: the container started, the CLI's first
output, each deadline signal, the CLI's exit (``by`` itself, or by the deadline).

Each engine call is retried on its own (runner.engine). One that still fails mid-turn (the
wait, a signal) is kept in ``Drive.engine_failed``: the turn then ends as an infrastructure error,
and teardown removes the container as always.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import anyio
import anyio.from_thread
import anyio.to_thread

from runner.core.outcomes import JsonValue
from runner.core.timeline import EXITED_BY_BUDGET, EXITED_BY_DEADLINE, EXITED_BY_ITSELF, Timeline, TimelineEvent
from runner.engine import EngineError
from runner.harnesses.profile import Profile
from runner.sandbox.container import ContainerRemoved, ContainerStartError
from runner.sandbox.interface import STDOUT, ResourceLimits, Sandbox, Signal
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
    over_budget: str | None = None  # what the CLI wrote passed the turn's disk budget: it was stopped, and why
    container_removed: bool = False  # the engine failure was the container's removal by someone else
    oom_killed: bool | None = None  # the engine's State.OOMKilled once the CLI exited (None: not read)


async def start_cli(proc: Sandbox, under_way: anyio.Event | None = None) -> str | None:
    """Create and start the CLI's sandbox (in a worker thread); why it could not start, or None. ``under_way`` is
    set once the worker thread has taken the work up (a caller that then blocks the event loop does not hold the
    start back)."""

    def start() -> None:
        if under_way is not None:
            anyio.from_thread.run_sync(under_way.set)
        proc.start()

    try:
        await anyio.to_thread.run_sync(start, limiter=THREADS)
    except ContainerStartError as err:
        return str(err)
    finally:
        if under_way is not None:
            under_way.set()  # also when the thread never ran
    return None


async def drive(
    proc: Sandbox, stdout: StreamSink, stderr: StreamSink, deadline: float, profile: Profile,
    progress: object, timeline: Timeline | None = None, *, started: tuple[str | None] | None = None,
    limits: ResourceLimits | None = None,
) -> Drive:
    """Start the CLI (unless ``started`` holds what :func:`start_cli` said) and drive it to its end: by itself, or
    stopped by the deadline and the wind-down, or by its disk budget (``limits``: how often to look; None: never)."""
    say = progress if callable(progress) else (lambda _m: None)
    run = Drive()
    not_started = (await start_cli(proc)) if started is None else started[0]
    if not_started is not None:
        run.not_started = not_started
        return run
    run.container_id = proc.id
    watch = _Watch(proc, stdout, stderr, profile, timeline)
    if started is None:  # a caller that started the CLI itself put its start on the timeline
        watch.mark(TimelineEvent.CONTAINER_STARTED)
    async with anyio.create_task_group() as tg:
        tg.start_soon(watch.pump)
        tg.start_soon(watch.wait)
        if limits is not None:
            tg.start_soon(watch.budget, limits)
        say(f"turn running (deadline {deadline:g}s)")
        if not await watch.exited_within(deadline):
            run.deadline_hit = watch.deadline_hit = True
            await _wind_down(watch, profile, deadline, say)
        # the output stream ends with the process; let the pump drain what is left
        with anyio.move_on_after(DRAIN_SECONDS):
            await watch.pumped.wait()
        tg.cancel_scope.cancel()
    run.exit_code = watch.codes[0] if watch.codes else None
    run.oom_killed = proc.oom_killed
    if watch.failures:
        run.engine_failed = str(watch.failures[0])
        run.container_removed = isinstance(watch.failures[0], ContainerRemoved)
    run.over_budget = watch.over_budget
    return run


async def _wind_down(watch: _Watch, profile: Profile, deadline: float, say: Callable[[str], None]) -> None:
    """The deadline passed: SIGTERM to the CLI's process group, the grace period, then SIGKILL."""
    say("deadline reached: SIGTERM to the CLI's process group")
    await watch.send("SIGTERM", f"the turn deadline of {deadline:g}s passed")
    grace = profile.wind_down.grace_seconds
    if await watch.exited_within(grace):
        return
    say("grace period over: SIGKILL")
    await watch.send("SIGKILL", f"the grace period of {grace:g}s after SIGTERM passed")
    await watch.exited_within(KILL_WAIT_SECONDS)


class _Watch:
    """The running CLI: its output pumped into the sinks, its exit awaited, signals sent, failures kept."""

    def __init__(
        self, proc: Sandbox, stdout: StreamSink, stderr: StreamSink, profile: Profile, timeline: Timeline | None
    ) -> None:
        self.proc, self.stdout, self.stderr, self.profile = proc, stdout, stderr, profile
        self.timeline = timeline
        self.exited, self.pumped = anyio.Event(), anyio.Event()
        self.codes: list[int | None] = []
        self.failures: list[EngineError] = []  # engine calls that kept failing after their retries
        self.deadline_hit = False
        self.over_budget: str | None = None
        self.heard = False  # the CLI's first output is on the timeline

    def mark(self, event: TimelineEvent, **fields: JsonValue) -> None:
        if self.timeline is not None:
            self.timeline.record(event, **fields)

    def on_output(self, stream: int, data: bytes) -> None:
        if not self.heard and data:  # called from the pump's one thread: no other caller races this flag
            self.heard = True
            self.mark(TimelineEvent.CLI_FIRST_OUTPUT, stream="stdout" if stream == STDOUT else "stderr")
        if stream != STDOUT:
            self.stderr.feed(data)
        elif self.stdout.feed(data) and self.profile.prompt.keep_stdin_open:
            self.proc.close_stdin()  # the first terminal frame ends the CLI's input (§3.2)

    async def pump(self) -> None:
        await anyio.to_thread.run_sync(self.proc.pump, self.on_output, limiter=THREADS, abandon_on_cancel=True)
        self.pumped.set()

    async def wait(self) -> None:
        try:
            code = await anyio.to_thread.run_sync(self.proc.wait, limiter=THREADS, abandon_on_cancel=True)
            self.codes.append(code)
            by = EXITED_BY_BUDGET if self.over_budget else EXITED_BY_DEADLINE if self.deadline_hit else EXITED_BY_ITSELF
            self.mark(TimelineEvent.CLI_EXITED, exitCode=code, by=by)
        except EngineError as err:
            self.failures.append(err)  # nobody can say how the CLI ended; teardown removes the container
        self.exited.set()

    async def budget(self, limits: ResourceLimits) -> None:
        """Until the CLI exits: is what it wrote over its budget? Then SIGKILL, at once. Looked at more often once
        past half of it; not at all once out of sight."""
        every = limits.disk_poll_seconds
        while not await self.exited_within(every):
            look = await anyio.to_thread.run_sync(self.proc.disk_look, limiter=THREADS, abandon_on_cancel=True)
            if look is None:
                return
            if look.over is not None and not self.exited.is_set():
                self.over_budget = look.over
                await self.send("SIGKILL", f"{look.over}: the CLI is stopped")
                return
            every = limits.disk_poll_near_seconds if look.share >= 0.5 else limits.disk_poll_seconds

    async def exited_within(self, seconds: float) -> bool:
        with anyio.move_on_after(seconds):
            await self.exited.wait()
        return self.exited.is_set()

    async def send(self, signal: Signal, reason: str) -> None:
        self.mark(TimelineEvent.DEADLINE_SIGNAL, signal=signal, reason=reason)
        try:
            await anyio.to_thread.run_sync(self.proc.signal, signal, limiter=THREADS)
        except EngineError as err:
            self.failures.append(err)
