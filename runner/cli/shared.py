"""What every command that starts containers shares (the options they have in common are rows of
:mod:`runner.matrix.options`): the run id, the output directory's check, the engine connection, and the signal
handling: Ctrl-C or SIGTERM cancels the work, and the run's containers are removed however it ends."""

from __future__ import annotations

import secrets
import signal
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from runner.cli.render import err, escape, fail, reported
from runner.errors import Exit, InfrastructureError, RunnerError

if TYPE_CHECKING:
    from runner.engine import EngineClient
    from runner.sandbox.backend import SandboxBackend
    from runner.sandbox.interface import Runtime

T = TypeVar("T")


def new_run_id() -> str:
    return time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) + "-" + secrets.token_hex(3)


def check_out(path: Path, as_json: bool, run_id: str) -> None:
    """Refuse to start when the output directory cannot take the artifacts (nothing half-written) or another live run
    holds it (exit 5); else take it, and the run's lease, for the life of this process (runner.turn.preflight,
    runner.sandbox.lease)."""
    from runner.sandbox.lease import hold_run
    from runner.turn.preflight import check_output_dir, hold_output_dir

    with reported(as_json):
        check_output_dir(path)
        hold_output_dir(path, run_id)
        hold_run(run_id)


def connect_engine(as_json: bool = False) -> EngineClient:
    """The engine, once it answers (an infrastructure error naming the fix): for the image commands, which work on
    the engine's images and start no sandbox."""
    from runner.cli.settings import engine_environ
    from runner.engine import connect

    with reported(as_json):
        return connect(engine_environ())


def connect_sandboxes(as_json: bool = False, runtime: Runtime | None = None) -> SandboxBackend:
    """The sandbox backend, once its engine answers and has ``runtime`` (an infrastructure error naming the fix,
    before any turn): what a command that starts containers hands down."""
    from runner.cli.settings import engine_environ
    from runner.sandbox.backend import connect_backend

    with reported(as_json):
        return connect_backend(engine_environ(), runtime=runtime)


def interruptible(
    job: Callable[[], Awaitable[T]], backend: SandboxBackend | None, run_id: str, keep: bool, as_json: bool
) -> T:
    """Run ``job()`` (a coroutine factory); Ctrl-C or SIGTERM cancels it, and its teardown still
    removes every container of the run (``backend`` None: the job started none)."""
    import anyio

    from runner.cli.settings import reaper_enabled

    # the lease: if this process dies where no finally runs (SIGKILL), the reaper removes the run's containers
    reaper = backend.guard_run(run_id, enabled=reaper_enabled()) if backend is not None and not keep else None
    result: list[T] = []
    interrupted: list[int] = []

    async def main() -> None:
        async with anyio.create_task_group() as tg:

            async def watch_signals() -> None:
                with anyio.open_signal_receiver(signal.SIGINT, signal.SIGTERM) as signals:
                    async for signum in signals:
                        interrupted.append(signum)
                        tg.cancel_scope.cancel()
                        return

            tg.start_soon(watch_signals)
            result.append(await job())
            tg.cancel_scope.cancel()

    try:
        with reported(as_json):
            anyio.run(main)
    finally:
        if not keep and backend is not None:
            try:
                backend.reap(run_id)
                if reaper is not None:
                    reaper.release()
            except InfrastructureError as error:
                if reaper is not None:
                    reaper.abandon()
                err().print(f"[yellow]runner:[/] could not remove the run's containers ({escape(str(error))}); "
                            f"`runner gc` removes them once the engine answers", highlight=False)
    if interrupted or not result:
        fail(Exit.INTERRUPTED, "interrupted; the run's containers and socket directories were removed", as_json)
    return result[0]


async def unraised(work: Awaitable[T]) -> T | RunnerError:
    """``work``'s value, or the error that ended it, returned rather than raised: raised inside
    :func:`interruptible`'s task group, an error would reach the user as a traceback. An error of runner's own keeps
    its exit code; anything else (a cell whose result could not be written at all: the disk is full) is an
    infrastructure error in one line, naming its type. Cancellation goes through."""
    import anyio.lowlevel

    try:
        return await work
    except RunnerError as error:
        return error
    except Exception as error:  # one line and exit 5, never a traceback
        await anyio.lowlevel.checkpoint_if_cancelled()
        return InfrastructureError(f"{type(error).__name__}: {error}")
