"""Session files a CLI writes compressed: read as far as they can be read (dsh's ``session.jsonl.zstd``; the
turn's scrubber decompresses any zstd file it copies, :mod:`runner.turn.collect`), bounded while they inflate
(:func:`runner.intake.payload.readable_zstd`)."""

from __future__ import annotations

from runner.intake.payload import readable_zstd


def decompress_bytes(data: bytes, limit: int) -> bytes:
    """Frame after frame, at most ``limit`` bytes: a frame cut short (the process was killed mid-write) keeps
    its decoded blocks, anything unreadable after the last good frame is dropped, and a frame that inflates past
    the bound is stopped there, not after it has inflated."""
    return readable_zstd(data, limit)
