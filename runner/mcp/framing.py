"""The answers to a line on the MCP socket that the SDK cannot take as a JSON-RPC message: pure, no I/O.

A line that is not JSON is answered -32700 with a null id; a JSON value that is not a JSON-RPC 2.0 message is
answered -32600 with its id when it has a usable one. A message nested deeper than Python's parser goes is
still answered by its id when the id can be read without descending into anything nested
(:func:`leading_id`), so its caller is not left waiting.
"""

from __future__ import annotations

import json
from typing import TypeGuard

import mcp_types as types

from runner.core.outcomes import JsonValue

NOT_JSONRPC_MESSAGE = "Message is not a JSON-RPC 2.0 request or notification."
INVALID_JSON_MESSAGE = "Invalid JSON."
TOO_DEEP_MESSAGE = "Message nests too deeply to be processed."


def answer_to_unparsable(line: bytes) -> tuple[str, types.JSONRPCError]:
    """Why the line is rejected (``too_deep``, ``invalid_json``, ``not_jsonrpc``) and the error to answer."""
    try:
        raw = json.loads(line)
    except RecursionError:
        # Deeper than Python's parser goes (the SDK's own parser stops at a few hundred levels):
        # the request is answered by its id when one can be read flat, so its caller is not left waiting.
        ident = leading_id(line)
        if _usable(ident):
            return "too_deep", _error(ident, types.INVALID_REQUEST, TOO_DEEP_MESSAGE)
        return "too_deep", _error(None, types.PARSE_ERROR, TOO_DEEP_MESSAGE)
    except ValueError:
        return "invalid_json", _error(None, types.PARSE_ERROR, INVALID_JSON_MESSAGE)
    ident = raw.get("id") if isinstance(raw, dict) else None
    if _usable(ident):
        return "not_jsonrpc", _error(ident, types.INVALID_REQUEST, NOT_JSONRPC_MESSAGE)
    return "not_jsonrpc", _error(None, types.PARSE_ERROR, NOT_JSONRPC_MESSAGE)


def _usable(ident: object) -> TypeGuard[str | int]:
    return isinstance(ident, str) or (isinstance(ident, int) and not isinstance(ident, bool))


_FLAT = json.JSONDecoder()
_JSON_SPACE = " \t\n\r"


def leading_id(line: bytes) -> JsonValue:
    """The top-level ``id`` of a JSON object, read without descending into anything nested.

    Members are read in order while their values are flat (strings, numbers, literals); the first
    nested value ends the search, so a line of any depth costs no recursion and little work. SDKs
    write ``id`` before ``params``. ``None`` when it cannot be read this way.
    """

    def skip_space(i: int) -> int:
        while text[i] in _JSON_SPACE:
            i += 1
        return i

    try:
        text = line.decode()
        i = skip_space(0)
        if text[i] != "{":
            return None
        i += 1
        while True:
            i = skip_space(i)
            if text[i] != '"':
                return None
            key, i = _FLAT.raw_decode(text, i)
            i = skip_space(i)
            if text[i] != ":":
                return None
            i = skip_space(i + 1)
            if text[i] in "[{":
                return None
            value, i = _FLAT.raw_decode(text, i)
            if key == "id":
                flat: JsonValue = value  # a string, number or literal: a nested value ended the search above
                return flat
            i = skip_space(i)
            if text[i] != ",":
                return None
            i += 1
    except (ValueError, IndexError):  # UnicodeDecodeError is a ValueError
        return None


def _error(ident: str | int | None, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=ident, error=types.ErrorData(code=code, message=message))
