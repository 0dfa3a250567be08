"""Canonical JSON and the hashes built on it (upstream §6.6).

Upstream's ``canonicalJson`` sorts object keys with JavaScript ``localeCompare`` (ICU root
collation), not by code point. We emulate the part of that collation our keys can meet:

- primary order: characters compared case-insensitively, where punctuation and symbols sort before
  digits and digits before letters (ICU's non-ignorable root order);
- tie-break: at the first position that differs only by case, lowercase sorts before uppercase.

Arrays keep their order, there is no whitespace, and scalars are written as ``JSON.stringify``
would (``ensure_ascii=False``; integral floats are not produced by our data). ``None`` values are
kept as ``null``: callers drop keys they mean to be absent before hashing, as upstream does.
"""

from __future__ import annotations

import functools
import hashlib
import json
import unicodedata

__all__ = ["canonical_json", "collation_key", "prefixed", "sha256_hex"]


def _char_rank(ch: str) -> tuple[int, str]:
    if ch.isalpha():
        return (2, ch.casefold())
    if ch.isdigit():
        return (1, ch)
    # punctuation, symbols, whitespace: before digits and letters, in code-point order
    return (0, ch)


@functools.lru_cache(maxsize=1 << 16)  # object keys repeat ("name", "type", ...): each is ranked once per process
def collation_key(key: str) -> tuple[tuple[tuple[int, str], ...], tuple[int, ...]]:
    """A sort key approximating ``a.localeCompare(b)`` for JSON object keys."""
    normalized = unicodedata.normalize("NFC", key)
    primary = tuple(_char_rank(ch) for ch in normalized)
    # lowercase before uppercase at the first case-only difference
    tertiary = tuple(0 if not ch.isupper() else 1 for ch in normalized)
    return primary, tertiary


# json.dumps(value, ensure_ascii=False, allow_nan=False), without building an encoder for every scalar
_ENCODER = json.JSONEncoder(ensure_ascii=False, allow_nan=False)
_STRING = json.encoder.encode_basestring  # what that encoder writes a str with


def canonical_json(value: object) -> str:
    """Serialise ``value`` canonically: sorted keys (see module doc), no whitespace."""
    if isinstance(value, str):
        return _STRING(value)
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: collation_key(str(kv[0])))
        inner = ",".join(f"{_STRING(str(k))}:{canonical_json(v)}" for k, v in items)
        return "{" + inner + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(canonical_json(v) for v in value) + "]"
    return _ENCODER.encode(value)


def sha256_hex(value: object) -> str:
    """Lowercase hex SHA-256 of ``canonical_json(value)``."""
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def prefixed(digest: str) -> str:
    """The artifact form of a hash: ``sha256:<hex>``."""
    return f"sha256:{digest}"
