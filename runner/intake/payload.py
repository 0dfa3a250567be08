"""Bytes a CLI sends (stdout frames, model requests, compressed session logs) turned into values, bounded. Pure.

Everything here is hostile input read on the host, so each reader has a bound it checks *while* it reads, and a
failure it can name instead of an exception from deep inside a library:

- **JSON** (:func:`loads`): the nesting depth is measured on the text, without recursion, before the parser
  (which recurses once per level) sees it, so a line of a hundred thousand ``[`` is refused as
  :class:`TooDeep` instead of raising ``RecursionError`` in runner; and nothing deeper than :data:`MAX_DEPTH`
  reaches code that walks a value recursively afterwards (the exchange log's scrubber, the encoders that write
  the artifacts). ``NaN``, ``Infinity`` and numbers out of a float's range (which Python's own encoder writes)
  are read as null: written back as they are, they would make the artifacts unreadable to any strict JSON
  reader. A bound on the number of values (:func:`measure`) keeps what a body costs once parsed in
  proportion: CPython spends some 60 bytes on an empty ``[]`` that took three.
- **Text** (:func:`decode_text`, :func:`clean_text`): invalid UTF-8 becomes U+FFFD, and so does a lone
  surrogate that a ``\\ud83d`` escape put in a parsed string, so every string runner holds can be written as
  UTF-8 (a lone surrogate raised ``UnicodeEncodeError`` when the artifacts were written).
- **Compressed bodies** (:func:`inflate`, :func:`zstd_pieces`, :func:`readable_zstd`): gzip, deflate and zstd are
  inflated by streaming decompressors that stop as soon as the output passes the bound, so a small bomb costs
  the bound, not what it would expand to; a zstd frame may not ask for a window over :data:`MAX_ZSTD_WINDOW`.

A failure is a :class:`Malformed` (a ``ValueError``) whose message is the cause, for the record of the CLI's
malformed output.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import re
import zlib
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import accumulate
from typing import TypeAlias

import zstandard

# what json.loads returns (the same alias as runner.core.outcomes.JsonValue: this floor imports nothing above it)
JsonValue: TypeAlias = "bool | int | float | str | list[JsonValue] | dict[str, JsonValue] | None"

# Deeper than any request or frame a CLI sends (tool schemas nest a few tens of levels), and shallow enough that
# code walking a parsed value one call per level stays far from Python's recursion limit.
MAX_DEPTH = 128
# zstd's window is memory the decoder allocates for a frame as the frame asks; levels up to 19 of zstd's own CLI
# stay within 8 MiB (a frame asking for more is unreadable here)
MAX_ZSTD_WINDOW = 1 << 23
_PIECE = 64 * 1024  # what the zstd writer writes at a time
_FEED = 64  # compressed bytes given to the zstd writer at a time
CAUSE_LIMIT = 300  # characters of a decoder's own message kept in a cause

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_STEP = bytes.maketrans(b"[{]},", b"\x01\x01\xff\xff\x00")  # read as signed bytes: +1, +1, -1, -1, 0
_NOT_STRUCTURE = bytes(sorted(set(range(256)) - set(b"[{]},")))
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


class Malformed(ValueError):
    """Bytes the intake does not read; the message is the cause."""


class NotJson(Malformed):
    pass


class TooDeep(Malformed):
    pass


class TooMany(Malformed):
    pass


class TooLarge(Malformed):
    def __init__(self, what: str, limit: int) -> None:
        super().__init__(f"{what} over the bound of {limit} bytes")
        self.limit = limit


class Undecodable(Malformed):
    pass


# --- text -----------------------------------------------------------------------------------------------------


def decode_text(data: bytes) -> str:
    """UTF-8, every invalid sequence (an encoded surrogate included) as U+FFFD."""
    return data.decode("utf-8", errors="replace")


def clean_text(text: str) -> str:
    """``text`` with every lone surrogate as U+FFFD (a pair that JSON escaped is already one character)."""
    return _LONE_SURROGATE.sub("\ufffd", text)


# --- JSON -----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Shape:
    """What a JSON text holds, read without parsing it: how deep its arrays and objects nest, and about how many
    values it has (every value but an object's keys)."""

    depth: int
    values: int


def measure(data: bytes | str) -> Shape:
    """The :class:`Shape` of ``data``, brackets and commas inside strings not counted; a pass over the bytes in C,
    no recursion. For valid JSON the depth is exact and ``values`` counts each container and each member (an
    empty container one too many); for invalid JSON neither is less than the parser would reach before failing. The
    structure is read on the UTF-8 bytes: brackets, commas, quotes and backslashes are ASCII, never part of a
    multi-byte sequence, so an invalid sequence that decoding replaces moves none of them."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    steps = array("b", _STRING.sub(b"", raw).translate(_STEP, _NOT_STRUCTURE))  # +1 opening, -1 closing, 0 comma
    opened = steps.count(1)
    return Shape(depth=max(0, max(accumulate(steps), default=0)), values=1 + opened + steps.count(0))


def _finite(text: str) -> float | None:
    value = float(text)
    return value if math.isfinite(value) else None


def _no_constant(name: str) -> None:
    return None


def loads(data: bytes | str, max_depth: int = MAX_DEPTH, max_values: int | None = None) -> JsonValue:
    """One JSON value from ``data``: UTF-8 with replacement, at most ``max_depth`` levels deep (and ``max_values``
    values, when given), every string (keys too) free of lone surrogates. Raises :class:`TooDeep`,
    :class:`TooMany` or :class:`NotJson`, nothing else."""
    shape = measure(data)
    if shape.depth > max_depth:
        raise TooDeep(f"JSON nested deeper than {max_depth} levels")
    if max_values is not None and shape.values > max_values:
        raise TooMany(f"JSON of more than {max_values} values")
    text = decode_text(data) if isinstance(data, bytes) else data
    try:
        value: JsonValue = json.loads(text, parse_float=_finite, parse_constant=_no_constant)
    except (ValueError, RecursionError) as err:  # RecursionError: never, the depth is checked above
        raise NotJson(f"not JSON: {str(err)[:CAUSE_LIMIT]}") from None
    if _SURROGATE_ESCAPE.search(text):
        value = _cleaned(value)
    return value


def _cleaned(value: JsonValue) -> JsonValue:
    """``value`` with :func:`clean_text` applied to every string and key, in place, without recursion."""
    if isinstance(value, str):
        return clean_text(value)
    pending: list[JsonValue] = [value]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            items = [(clean_text(k), v) for k, v in node.items()]
            node.clear()
            for key, item in items:
                node[key] = clean_text(item) if isinstance(item, str) else item
                if isinstance(item, dict | list):
                    pending.append(item)
        elif isinstance(node, list):
            for index, item in enumerate(node):
                if isinstance(item, str):
                    node[index] = clean_text(item)
                elif isinstance(item, dict | list):
                    pending.append(item)
    return value


# --- compressed bodies ----------------------------------------------------------------------------------------


def inflate(data: bytes, encoding: str, limit: int) -> bytes:
    """``data`` with its HTTP ``content-encoding`` undone (none, ``identity``, ``gzip``, ``x-gzip``, ``deflate``,
    ``zstd``), at most ``limit`` bytes: :class:`TooLarge` as soon as the output passes the bound,
    :class:`Undecodable` for data that is not in that encoding, or an encoding not read here."""
    encoding = encoding.strip().lower()
    if encoding in ("", "identity"):
        if len(data) > limit:
            raise TooLarge("the body is", limit)
        return data
    if encoding in ("gzip", "x-gzip"):
        return _inflate_zlib(data, 16 + zlib.MAX_WBITS, limit, members=True)
    if encoding == "deflate":
        return _inflate_zlib(data, zlib.MAX_WBITS, limit, members=False)
    if encoding == "zstd":
        return b"".join(zstd_pieces(data, limit))
    raise Undecodable(f"content-encoding {encoding[:40]!r} is not read here")


def _inflate_zlib(data: bytes, wbits: int, limit: int, *, members: bool) -> bytes:
    out = bytearray()
    what = "gzip" if members else "deflate"
    while True:
        inflater = zlib.decompressobj(wbits)
        pending = data
        try:
            while not inflater.eof:
                # max_length bounds what this call may produce: the bomb stops here, one byte past the bound
                piece = inflater.decompress(pending, limit - len(out) + 1)
                out += piece
                if len(out) > limit:
                    raise TooLarge(f"the {what} body inflates", limit)
                pending = inflater.unconsumed_tail
                if not piece and not pending:
                    raise Undecodable(f"the {what} body ends before its stream does")
        except zlib.error as err:
            raise Undecodable(f"the {what} body cannot be inflated: {err}") from None
        data = inflater.unused_data
        if not members or not data:
            return bytes(out)


def zstd_pieces(data: bytes, limit: int) -> Iterator[bytes]:
    """zstd ``data`` inflated, frame after frame, piece by piece as it inflates, ``limit`` bytes at most.

    Raises :class:`TooLarge` once the output passes the bound (after the pieces up to it) and
    :class:`Undecodable` where the data stops being readable zstd (after the pieces before it). A frame cut
    short ends the pieces after what it holds. The input is fed :data:`_FEED` bytes at a time: a zstd block
    inflates to at most 128 KiB from no fewer than four bytes, so one feed inflates to about 2 MiB at most
    before the bound is checked again."""
    sink = io.BytesIO()
    writer = zstandard.ZstdDecompressor(max_window_size=MAX_ZSTD_WINDOW).stream_writer(
        sink, write_size=_PIECE, closefd=False
    )
    total = 0
    for at in range(0, len(data), _FEED):
        error: Malformed | None = None
        try:
            writer.write(data[at : at + _FEED])
        except zstandard.ZstdError as err:
            error = Undecodable(f"the zstd data cannot be inflated: {str(err)[:CAUSE_LIMIT]}")
        piece = sink.getvalue()
        sink.seek(0)
        sink.truncate()
        if total + len(piece) > limit:
            yield piece[: limit - total]
            raise TooLarge("the zstd data inflates", limit)
        total += len(piece)
        if piece:
            yield piece
        if error is not None:
            raise error


def readable_zstd(data: bytes, limit: int) -> bytes:
    """A zstd file read as far as it goes, at most ``limit`` bytes (:func:`zstd_pieces`): a frame cut short (its
    writer was killed) keeps its whole blocks, anything unreadable after the last good frame is dropped, and the
    inflating stops at the bound, not after the frame that passed it."""
    out = bytearray()
    with contextlib.suppress(Malformed):
        for piece in zstd_pieces(data, limit):
            out += piece
    return bytes(out)
