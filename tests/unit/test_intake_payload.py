"""The intake's readers of CLI bytes (runner/intake/payload.py) against known hostile inputs: JSON nested a hundred
thousand deep, lone surrogates and invalid UTF-8, numbers JSON has no room for, gzip, deflate and zstd bombs, and
streams cut short. A bomb is checked by what reading it allocates (tracemalloc counts every bytes object Python
makes), not by the time it takes."""

from __future__ import annotations

import gzip
import json
import tracemalloc
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import pytest
import zstandard
from hypothesis import given, settings
from hypothesis import strategies as st

from runner.intake.payload import (
    MAX_DEPTH,
    MAX_ZSTD_WINDOW,
    NotJson,
    TooDeep,
    TooLarge,
    TooMany,
    Undecodable,
    clean_text,
    decode_text,
    inflate,
    loads,
    measure,
    readable_zstd,
    zstd_pieces,
)

MiB = 1024 * 1024


def peak_bytes(work: Callable[[], Any]) -> int:
    """The most memory Python held for objects while ``work`` ran, above what it held before."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        work()
        return tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def gzip_bomb(members: int) -> bytes:
    """``members`` gzip members of 64 MiB of zeros each (about 64 KB each), read as one body as gzip reads it."""
    return gzip.compress(bytes(64 * MiB), 9) * members


def zstd_bomb(frames: int) -> bytes:
    return zstandard.ZstdCompressor(level=3).compress(bytes(256 * MiB)) * frames  # 256 MiB of zeros a frame


# --- JSON -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("opener", ["[", '{"a":'])
def test_a_hundred_thousand_levels_are_refused_before_the_parser_recurses(opener: str) -> None:
    closer = "]" if opener == "[" else "}"
    line = (opener * 100_000 + "1" + closer * 100_000).encode()
    with pytest.raises(TooDeep, match=f"deeper than {MAX_DEPTH} levels"):
        loads(line)
    with pytest.raises(TooDeep):
        loads(opener * 100_000)  # cut short too: still too deep, never a RecursionError
    deepest = opener * MAX_DEPTH + "1" + closer * MAX_DEPTH
    assert loads(deepest) is not None


def test_brackets_inside_strings_are_not_nesting() -> None:
    text = json.dumps({"a": "[" * 100_000, "b": ['\\"[[[', "{{{"]})
    assert measure(text).depth == 2 and loads(text) == json.loads(text)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(alphabet=st.sampled_from('[]{},:"\\ab\u00e9\n')),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=3), inner, max_size=4),
    max_leaves=30,
)


def depth(value: Any) -> int:
    if isinstance(value, dict | list):
        return 1 + max(map(depth, value.values() if isinstance(value, dict) else value), default=0)
    return 0


@settings(max_examples=300, deadline=None, derandomize=True, database=None)
@given(value=json_values, indent=st.none() | st.integers(0, 2))
def test_the_shape_read_without_parsing_is_the_parsed_values_shape(value: Any, indent: int | None) -> None:
    text = json.dumps(value, indent=indent)
    shape = measure(text)
    assert shape.depth == depth(value)
    assert shape.values >= count_values(value)  # an empty container counts one more: never fewer


def count_values(value: Any) -> int:
    if isinstance(value, dict):
        return 1 + sum(count_values(v) for v in value.values())
    if isinstance(value, list):
        return 1 + sum(count_values(v) for v in value)
    return 1


def test_too_many_values_are_refused_before_parsing() -> None:
    body = json.dumps([[]] * 10_000)
    with pytest.raises(TooMany, match="more than 1000 values"):
        loads(body, max_values=1000)
    assert len(loads(body, max_values=20_002)) == 10_000  # type: ignore[arg-type]


def test_lone_surrogates_and_invalid_utf8_are_read_as_replacement_characters_keys_included() -> None:
    line = b'{"\\ud83d": ["\\ud83d\\ude00", "x\\udc00", "\xff\xfe", "\xed\xa0\xbd"], "ok": "\\u00e9"}'
    value = loads(line)
    assert value == {"\ufffd": ["\U0001f600", "x\ufffd", "\ufffd\ufffd", "\ufffd\ufffd\ufffd"], "ok": "\u00e9"}
    json.dumps(value, ensure_ascii=False).encode("utf-8")  # what writing the artifacts does: no UnicodeEncodeError
    assert clean_text("a\ud800b\udfff") == "a\ufffdb\ufffd"
    assert decode_text(b"\xc3(") == "\ufffd("


def test_numbers_json_has_no_room_for_are_null_or_malformed_never_an_exception() -> None:
    assert loads(b'[NaN, Infinity, -Infinity, 1e999, -1e999, 1.5]') == [None, None, None, None, None, 1.5]
    with pytest.raises(NotJson, match="digits"):
        loads(b"1" + b"0" * 5000)  # past CPython's integer conversion limit
    assert loads(b"1" + b"0" * 4000) == 10**4000


@pytest.mark.parametrize("text", [b"", b"{", b'{"a":}', b"[1,]", b'"\\x"', b'{"a":"\x00"}', b"\xff"])
def test_anything_else_that_is_not_json_is_malformed(text: bytes) -> None:
    with pytest.raises(NotJson, match=r"^not JSON: "):
        loads(text)


# --- compressed bodies ----------------------------------------------------------------------------------------


def test_a_gzip_bomb_stops_at_the_bound_while_inflating() -> None:
    bomb = gzip_bomb(16)  # about 1 MB that would be 1 GiB

    def read() -> None:
        with pytest.raises(TooLarge, match=f"gzip body inflates over the bound of {4 * MiB} bytes"):
            inflate(bomb, "gzip", 4 * MiB)

    assert peak_bytes(read) < 12 * MiB


def test_a_deflate_bomb_stops_at_the_bound_while_inflating() -> None:
    bomb = zlib.compress(bytes(64 * MiB), 9)

    def read() -> None:
        with pytest.raises(TooLarge, match="deflate body inflates over"):
            inflate(bomb, "deflate", MiB)

    assert peak_bytes(read) < 4 * MiB


def test_a_zstd_bomb_stops_at_the_bound_while_inflating() -> None:
    bomb = zstd_bomb(4)  # 1 GiB in a few tens of KB

    def read() -> None:
        with pytest.raises(TooLarge, match="zstd data inflates over"):
            inflate(bomb, "zstd", MiB)
        assert len(readable_zstd(bomb, 8 * MiB)) == 8 * MiB

    assert peak_bytes(read) < 40 * MiB


def test_zstd_inflated_piece_by_piece_never_holds_more_than_a_few_pieces() -> None:
    bomb = zstd_bomb(8)  # 2 GiB

    def read() -> None:
        total = 0
        pieces: Iterator[bytes] = zstd_pieces(bomb, 1024 * MiB)
        with pytest.raises(TooLarge):
            for piece in pieces:
                total += len(piece)
        assert total == 1024 * MiB

    assert peak_bytes(read) < 20 * MiB


def test_a_zstd_frame_asking_for_a_window_over_the_bound_is_unreadable() -> None:
    params = zstandard.ZstdCompressionParameters.from_level(19, window_log=(MAX_ZSTD_WINDOW.bit_length()))
    frame = zstandard.ZstdCompressor(compression_params=params).compress(bytes(range(256)) * 200_000)
    with pytest.raises(Undecodable, match="zstd"):
        inflate(frame, "zstd", 1024 * MiB)


def test_streams_cut_short_or_followed_by_garbage() -> None:
    text = json.dumps({"messages": ["x" * 1000] * 50}).encode()
    whole = gzip.compress(text)
    with pytest.raises(Undecodable, match="ends before its stream does"):
        inflate(whole[: len(whole) // 2], "gzip", MiB)
    with pytest.raises(Undecodable, match="cannot be inflated"):
        inflate(b"not gzip at all", "gzip", MiB)
    assert inflate(gzip.compress(b"ab") + gzip.compress(b"cd"), "x-gzip", 10) == b"abcd"  # members, as gzip reads
    assert inflate(zlib.compress(text), "deflate", MiB) == text
    assert inflate(text, "identity", MiB) == inflate(text, "", MiB) == text
    with pytest.raises(TooLarge):
        inflate(text, "", 10)
    with pytest.raises(Undecodable, match="'br' is not read here"):
        inflate(text, "br", MiB)
    frames = [zstandard.ZstdCompressor().compress(b"%d\n" % n * 1000) for n in range(3)]
    assert readable_zstd(b"".join(frames), MiB) == b"".join(b"%d\n" % n * 1000 for n in range(3))
    assert readable_zstd(frames[0] + b"garbage" + frames[1], MiB) == b"0\n" * 1000  # the good frame stands
    assert readable_zstd(frames[0] + frames[1][:-6], MiB).startswith(b"0\n" * 1000)  # cut short
    assert readable_zstd(b"", MiB) == b"" and readable_zstd(b"\x28\xb5\x2f\xfd", MiB) == b""
