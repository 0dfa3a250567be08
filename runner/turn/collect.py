"""After the turn: copy the CLI's own session transcript out of the turn dir, scrubbed and bounded."""

from __future__ import annotations

from pathlib import Path

from runner.turn.scrub import Scrubber

MAX_SESSION_BYTES = 64 * 1024 * 1024


def copy_session_transcript(source: Path, dest: Path, scrubber: Scrubber) -> list[str]:
    """Copy a file or a folder; every byte passes the scrubber (same length, so binary stores stay
    readable). Returns the copied files relative to ``dest``; stops at :data:`MAX_SESSION_BYTES`."""
    if not source.exists():
        return []
    files = [source] if source.is_file() else sorted(p for p in source.rglob("*") if p.is_file() and not p.is_symlink())
    copied, total = [], 0
    for path in files:
        size = path.stat().st_size
        if total + size > MAX_SESSION_BYTES:
            break
        relative = path.name if source.is_file() else str(path.relative_to(source))
        target = dest / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(scrubber.mask(path.read_bytes()))
        copied.append(relative)
        total += size
    return copied
