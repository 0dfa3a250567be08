"""Session files a CLI writes compressed: read as far as they can be read (dsh's ``session.jsonl.zstd``; the
turn's scrubber decompresses any zstd file it copies, :mod:`runner.turn.collect`)."""

from __future__ import annotations

import zstandard

_CHUNK = 4096


def decompress_bytes(data: bytes, limit: int) -> bytes:
    """Frame after frame, at most ``limit`` bytes: a frame cut short (the process was killed mid-write) keeps
    its decoded blocks, and anything unreadable after the last good frame is dropped."""
    out = bytearray()
    while data and len(out) < limit:
        frame = zstandard.ZstdDecompressor().decompressobj()
        rest = b""
        try:
            for at in range(0, len(data), _CHUNK):
                out += frame.decompress(data[at : at + _CHUNK])
                if frame.eof:
                    rest = frame.unused_data + data[at + _CHUNK :]
                    break
        except zstandard.ZstdError:
            break
        data = rest
    return bytes(out[:limit])
