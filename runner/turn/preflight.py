"""Before any CLI starts: the output directory must be writable and have room for a turn's files.

A turn writes its record, transcripts (each capped at 64 MiB) and the CLI's session transcript; a
disk that fills half-way would leave a half-written artifact, so a run refuses to start instead.
"""

from __future__ import annotations

import shutil
import uuid
from pathlib import Path

from runner.errors import InfrastructureError

MIN_FREE_BYTES = 256 * 1024 * 1024


class OutputDirError(InfrastructureError, OSError):
    """The output directory cannot take this run's artifacts; the message says why and where."""


def check_output_dir(path: Path, min_free: int = MIN_FREE_BYTES) -> None:
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".runner-probe-{uuid.uuid4().hex}"
        probe.write_bytes(b"probe")
        probe.unlink()
    except OSError as err:
        raise OutputDirError(f"{path}: cannot write the run's files there ({err.strerror or err})") from None
    free = shutil.disk_usage(path).free
    if free < min_free:
        raise OutputDirError(
            f"{path}: only {free // (1024 * 1024)} MiB free; a turn may write up to "
            f"{min_free // (1024 * 1024)} MiB (transcripts, record, session files). Free some space or use --out."
        )
