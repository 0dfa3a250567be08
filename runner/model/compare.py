"""Is the CLI's request the one the recording holds? Normalisation and first difference. Pure.

Replay mode (:mod:`runner.model.replay`) answers the CLI's N-th request with the recording's N-th
response only if the two requests are the same: the same method, path and query (``key``, Google's
query-string API key, aside), the same dialect, and the same JSON body once the values that
legitimately change from one run of the same cell to the next are normalised. Headers are not
compared (they carry session ids, request ids, ``content-length`` and the CLI's build).

**Normalising.** A volatile value is replaced by a token naming its kind and its order of first
appearance in that request (``<session#1>``, ``<cli-call-id#2>``): the values themselves are not
compared, but *which* of them are equal still is, so a tool result that answers a different call
than the recorded one, or two ids that were one, still differ. Tokens are numbered per request (objects
walked in sorted-key order, lists in order), so the same structure gives the same tokens in both
requests whatever the values and whatever the order of an object's keys.

Everywhere (every dialect, every string in the body, evidence from the scripted escalation cell
recorded twice with each CLI on 2026-12-01; the dates differ from one day to the next):

=============  ==========================================================  ==============================
kind           text                                                        seen from
=============  ==========================================================  ==============================
``date``       ISO ``2026-12-01`` and ``2026-12-01T07:57:27.106+00:00``    Claude Code ("Today's date is
                                                                           2026-12-01."), Codex
                                                                           (``<current_date>``), Pi
                                                                           ("Current date: 2026-12-01")
``date``       ``Tuesday, December 1, 2026``                                Gemini CLI, Qwen Code
``date``       ``Tue Dec 01 2026``                                         opencode ("Today's date:")
``duration``   ``Wall time: 0.0103 seconds``                               Codex, in every
                                                                           ``function_call_output``
                                                                           (the MCP call's duration)
=============  ==========================================================  ==============================

Per dialect (JSON paths in the request body; ``[]`` is any list index, ``*`` any key):

- ``anthropic-messages`` (Claude Code 2.1.328): ``metadata.user_id`` (kind ``user``): a JSON text
  holding ``device_id`` (random per installation), ``account_uuid`` and ``session_id`` (a new UUID
  per run); it is the only body field that differed between two runs.
- ``openai-responses`` (Codex 0.169.0): ``prompt_cache_key`` and every ``client_metadata.*``
  (kind ``session``): the session/thread/turn/window UUIDs, the installation id and
  ``x-codex-turn-metadata`` (a JSON text with those ids and ``turn_started_at_unix_ms``);
  ``input[].id`` when it is ``<prefix>_<UUID>`` (kind ``cli-item-id``): Codex mints
  ``msg_<uuid>`` for the messages it writes and ``fco_<uuid>`` for each ``function_call_output``.
- ``gemini`` (Gemini CLI 0.61.0): ``contents[].parts[].functionCall.id`` and
  ``...functionResponse.id`` (and their snake_case forms; kind ``cli-call-id``): the model sent
  no call id, so the CLI minted ``<tool>_<epoch ms>_<n>`` and echoes it in the call and its result.
- ``openai-chat`` (Qwen Code 0.24.4, opencode 1.18.33, Pi 0.73.1): nothing beyond the dates (the
  session ids opencode sends are headers).

Not volatile, on purpose: ids the *model* minted (``toolu_…``, ``call_…``, ``fc_…``, response and
message ids): the CLI echoes them from the recorded answers, which replay sends unchanged, so a
difference there is a real one. The MCP server's per-call ids (``uuid4`` in
:mod:`runner.mcp.server`) do not reach tool results: the escalation, invalid-tool-result,
bounded-grant and rollback-unavailable cells recorded twice with Claude Code had identical tool
results (the world's clock is fixed per cell).

**Naming the difference.** The first difference in document order (object keys in the recorded
request's order, then keys only the received one has) is named by a path: ``body.messages[2].
content[0].input.path[1]``; where both values are JSON texts (tool arguments in the OpenAI
dialects), the comparison goes inside them and the path says so: ``body.input[2].arguments<json>.
path[1]``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import parse_qsl

from runner.core.outcomes import JsonValue
from runner.intake.payload import MAX_DEPTH, Malformed, loads
from runner.model.types import DIALECT_NAMES

VALUE_LIMIT = 80  # characters of a value shown in a divergence sentence
DROPPED_QUERY = frozenset({"key"})

_MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
_DAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"
TEXT_RULES: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("date", re.compile(
        r"\b\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?(?![\d])")),
    ("date", re.compile(rf"\b(?:{_DAYS}), (?:{_MONTHS}) \d{{1,2}}, \d{{4}}\b")),
    ("date", re.compile(r"\b(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun) (?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) "
                        r"\d{2} \d{4}\b")),
    ("duration", re.compile(r"(?<=Wall time: )\d+(?:\.\d+)?(?= seconds)")),
)

_UUID = r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"


@dataclass(frozen=True)
class FieldRule:
    """A volatile field: ``pattern`` is a dotted path (``[]`` any index, ``*`` any key); ``value``
    (optional) restricts it to string values that fully match."""

    pattern: str
    kind: str
    value: re.Pattern[str] | None = None

    def parts(self) -> tuple[str, ...]:
        return tuple(p for p in re.split(r"\.|(?=\[\])", self.pattern) if p)


FIELD_RULES: dict[str, tuple[FieldRule, ...]] = {
    "anthropic-messages": (FieldRule("metadata.user_id", "user"),),
    "openai-responses": (
        FieldRule("prompt_cache_key", "session"),
        FieldRule("client_metadata.*", "session"),
        FieldRule("input[].id", "cli-item-id", re.compile(rf"[a-z]+_{_UUID}")),
    ),
    "gemini": tuple(
        FieldRule(f"contents[].parts[].{part}.id", "cli-call-id")
        for part in ("functionCall", "functionResponse", "function_call", "function_response")
    ),
    "openai-chat": (),
}


def volatile_rules(dialect: str | None) -> tuple[FieldRule, ...]:
    """The field rules of ``dialect`` (None: a request of no known dialect, text rules only)."""
    if dialect is None:
        return ()
    if dialect not in FIELD_RULES:
        raise ValueError(f"unknown dialect {dialect!r} (expected one of {', '.join(DIALECT_NAMES)})")
    return FIELD_RULES[dialect]


class _Tokens:
    def __init__(self) -> None:
        self.seen: dict[tuple[str, str], str] = {}
        self.counts: dict[str, int] = {}

    def __call__(self, kind: str, value: JsonValue) -> str:
        key = (kind, json.dumps(value, sort_keys=True, ensure_ascii=False))
        if key not in self.seen:
            self.counts[kind] = self.counts.get(kind, 0) + 1
            self.seen[key] = f"<{kind}#{self.counts[kind]}>"
        return self.seen[key]


def _matches(parts: tuple[str, ...], path: tuple[str | int, ...]) -> bool:
    if len(parts) != len(path):
        return False
    for part, step in zip(parts, path, strict=True):
        if part == "[]":
            if not isinstance(step, int):
                return False
        elif isinstance(step, int) or (part != "*" and part != step):
            return False
    return True


def normalise_body(body: JsonValue, dialect: str | None) -> JsonValue:
    """``body`` with its volatile values replaced by numbered tokens (the rules in the module docstring)."""
    rules = [(rule, rule.parts()) for rule in volatile_rules(dialect)]
    token = _Tokens()

    def text(value: str) -> str:
        for kind, pattern in TEXT_RULES:

            def replace(match: re.Match[str], kind: str = kind) -> str:
                return token(kind, match.group(0))

            value = pattern.sub(replace, value)
        return value

    def walk(value: JsonValue, path: tuple[str | int, ...]) -> JsonValue:
        for rule, parts in rules:
            if _matches(parts, path) and (
                rule.value is None or (isinstance(value, str) and rule.value.fullmatch(value))
            ):
                return token(rule.kind, value)
        if isinstance(value, dict):
            # tokens are numbered in sorted-key order (Codex's client_metadata is a hash map: its key
            # order changes from run to run); the object keeps its own order
            done = {k: walk(value[k], (*path, k)) for k in sorted(value)}
            return {k: done[k] for k in value}
        if isinstance(value, list):
            return [walk(v, (*path, i)) for i, v in enumerate(value)]
        if isinstance(value, str):
            return text(value)
        return value

    return walk(body, ())


@dataclass(frozen=True)
class Difference:
    """The first difference between a recorded and a received request."""

    field: str  # "method", "path", "query", "dialect", or a body path ("body.messages[2]...")
    recorded: JsonValue
    received: JsonValue
    absent: str | None = None  # "recorded" or "received": the side that lacks the field

    @property
    def what(self) -> str:
        if self.field in ("method", "path", "query", "dialect"):
            return (f"the request {self.field} differs: recorded {_show(self.recorded)}, "
                    f"received {_show(self.received)}")
        if self.absent == "recorded":
            return f"{self.field} is not in the recorded request; received {_show(self.received)}"
        if self.absent == "received":
            return f"{self.field} is missing from the received request; recorded {_show(self.recorded)}"
        return f"{self.field} differs: recorded {_show(self.recorded)}, received {_show(self.received)}"


TOKEN = re.compile(r"<[a-z-]+#\d+>")


def _show(value: JsonValue) -> str:
    text = value if isinstance(value, str) and TOKEN.fullmatch(value) else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= VALUE_LIMIT else text[: VALUE_LIMIT - 1] + "…"


def _key(name: str) -> str:
    return f".{name}" if re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", name) else f"[{json.dumps(name)}]"


def _json_text(value: JsonValue) -> JsonValue:
    if isinstance(value, str) and value.lstrip()[:1] in ("{", "["):
        try:
            return loads(value)
        except Malformed:
            return None
    return None


def _first(recorded: JsonValue, received: JsonValue, path: str, depth: int = 0) -> Difference | None:
    """The first difference under ``path``; ``depth``: the levels above, JSON texts inside strings counted, so
    a string of JSON holding a string of JSON (and so on) is still compared within a bounded recursion."""
    if depth > MAX_DEPTH:
        return None if recorded == received else Difference(path, recorded, received)
    if isinstance(recorded, dict) and isinstance(received, dict):
        for key, value in recorded.items():
            if key not in received:
                return Difference(path + _key(key), value, None, absent="received")
            found = _first(value, received[key], path + _key(key), depth + 1)
            if found:
                return found
        extra = next((k for k in received if k not in recorded), None)
        return Difference(path + _key(extra), None, received[extra], absent="recorded") if extra is not None else None
    if isinstance(recorded, list) and isinstance(received, list):
        for index, (a, b) in enumerate(zip(recorded, received, strict=False)):
            found = _first(a, b, f"{path}[{index}]", depth + 1)
            if found:
                return found
        if len(recorded) > len(received):
            index = len(received)
            return Difference(f"{path}[{index}]", recorded[index], None, absent="received")
        if len(received) > len(recorded):
            index = len(recorded)
            return Difference(f"{path}[{index}]", None, received[index], absent="recorded")
        return None
    if recorded == received and type(recorded) is type(received):
        return None
    inner_a, inner_b = _json_text(recorded), _json_text(received)
    if inner_a is not None and inner_b is not None:
        found = _first(inner_a, inner_b, path + "<json>", depth + 1)
        if found:
            return found
    return Difference(path, recorded, received)


def _query(value: JsonValue) -> list[tuple[str, str]]:
    text = value if isinstance(value, str) else ""
    return [(k, v) for k, v in parse_qsl(text, keep_blank_values=True) if k not in DROPPED_QUERY]


def find_difference(
    recorded_request: Mapping[str, JsonValue], received_request: Mapping[str, JsonValue], dialect: str | None
) -> Difference | None:
    """The first difference (method, path, query, then the normalised body), or None."""
    for name in ("method", "path"):
        if recorded_request.get(name) != received_request.get(name):
            return Difference(name, recorded_request.get(name), received_request.get(name))
    recorded_query, received_query = _query(recorded_request.get("query")), _query(received_request.get("query"))
    if recorded_query != received_query:
        return Difference("query", recorded_request.get("query") or "", received_request.get("query") or "")
    recorded_body = normalise_body(recorded_request.get("body"), dialect)
    received_body = normalise_body(received_request.get("body"), dialect)
    return _first(recorded_body, received_body, "body")


def first_divergence(
    recorded_request: dict[str, JsonValue], received_request: dict[str, JsonValue], dialect: str | None
) -> str | None:
    """None when ``received_request`` is the recorded one (method, path, query, body normalised for
    ``dialect``); else a short sentence naming the first differing field and both values (truncated).

    Both are request objects as the exchange log holds them: ``{"method", "path", "query", "body"}``
    (other keys, such as ``headers``, are ignored). ``dialect`` is a dialect name, or None for a
    request of no known dialect."""
    found = find_difference(recorded_request, received_request, dialect)
    return found.what if found else None

