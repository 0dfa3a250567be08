"""Hostile but valid JSON, fed to everything that reads a CLI's JSON: every stdout interpreter, dsh's session reader,
every model dialect, the scripted model's tool lookup and replay's comparison. Nothing may raise, and whatever they
make of it can be written as UTF-8 JSON (the artifacts).

The values are random (hypothesis), shaped so they reach the readers' branches: keys and strings are drawn from the
string literals the readers' own source holds (``"type"``, ``"message_end"``, ``"tool_result"`` ...), mixed with
wrong types in every place (a list where a string was expected, a dict as a "stopReason", numbers past any int64,
lone surrogates, escapes of control characters). Frames go through the real path: encoded, then read back by
:class:`~runner.harnesses.stream.StreamReader` as stdout lines.
"""

from __future__ import annotations

import ast
import json
from pathlib import Path
from typing import Any

import pytest
import zstandard
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runner.core.outcomes import JsonValue
from runner.harnesses.deepseek.session import read_session
from runner.harnesses.interpreters import INTERPRETERS
from runner.harnesses.stream import StreamReader, harness_outcome
from runner.model.compare import first_divergence
from runner.model.dialects import DIALECTS, guess_dialect
from runner.model.dialects.base import RenderContext, RequestInfo
from runner.model.exchange_log import read_body
from runner.model.names import ToolTarget
from runner.model.script import TextReply, ToolCallReply, normalise_actions, plan_for

ROOT = Path(__file__).resolve().parents[2] / "runner"
READERS = [*ROOT.glob("harnesses/*/interpreter.py"), ROOT / "harnesses/interpreters.py",
           *ROOT.glob("model/dialects/*.py"), ROOT / "model/names.py", ROOT / "model/compare.py"]


def literals(paths: list[Path]) -> list[str]:
    """Every short string constant in the readers' source: the keys and values they look for."""
    found: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and 0 < len(node.value) <= 40:
                found.add(node.value)
    return sorted(found)


WORDS = literals(READERS)
words = st.sampled_from(WORDS)
# text of any code point, lone surrogates (json.dumps escapes them as \udXXX) and control characters made common
SHARP = ["\ud83d", "\ude00", "\udfff", "\x00", "\x1b", "\x7f", "\u2028", "\ufeff", "\U0001f600"]
# (st.text would drop the surrogates: built from a list of characters instead)
texts = st.lists(st.sampled_from(SHARP) | st.characters(codec=None, categories=None), max_size=12).map("".join)
scalars = (
    st.none() | st.booleans() | st.integers(min_value=-(10**40), max_value=10**40)
    | st.floats(allow_nan=True, allow_infinity=True) | texts | words
)
values: st.SearchStrategy[JsonValue] = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(words | texts, inner, max_size=4),
    max_leaves=12,
)

# One frame of each shape the interpreters read (the docstrings' frames, reduced to the keys they look at): a
# hostile frame is one of these with any part of it replaced by anything, so every branch is reached with the
# wrong type in every place.
FRAMES: list[JsonValue] = [
    {"type": "session.started", "mcp_servers": [{"name": "sharedos", "status": "connected", "error": "e"}]},
    {"type": "message", "text": "t", "role": "assistant", "content": [{"type": "output_text", "text": "t"}]},
    {"type": "turn.completed", "text": "t"},
    {"type": "turn.failed", "error": {"code": "c", "message": "m"}},
    {"type": "system", "subtype": "init", "mcp_servers": [{"name": "sharedos", "status": "failed", "error": "e"}]},
    {"type": "assistant", "message": {"content": [{"type": "text", "text": "t"}, {"type": "tool_use"}]}},
    {"type": "result", "subtype": "error_max_turns", "is_error": True, "result": "r", "terminal_reason": "api_error",
     "status": "success", "error": {"message": "m"}, "exitCode": 0},
    {"type": "agent_event", "event": {"type": "content_end", "contentType": "text", "text": "t"}},
    {"type": "run_result", "finishReason": "completed", "text": "t"},
    {"type": "error", "message": "m", "error": {"name": "n", "data": {"message": "m"}, "message": "m"}},
    {"type": "function_call", "call_id": "c", "name": "n", "arguments": "{\"a\": [1]}"},
    {"type": "response.failed", "error": {"message": "m", "code": "c"}, "response": {"error": {"message": "m"}}},
    {"type": "response.completed", "response": {"output_text": "t"}},
    {"type": "item.completed", "item": {"type": "agent_message", "text": "t"}},
    {"type": "session.mcp_servers_loaded", "data": {"servers": [{"name": "s", "status": "connected", "error": "e"}]}},
    {"type": "assistant.message", "data": {"content": "t"}},
    {"type": "session.error", "data": {"message": "m"}},
    {"method": "session.event", "params": {"event": {"type": "turn/end", "data": {"reason": {"kind": "error"}}}}},
    {"type": "tool/call", "data": {"callId": "c", "name": "n", "arguments": "[[[]]]"}},
    {"type": "assistant/message", "data": {"message": {"content": [{"type": "text", "text": "t"}]}}},
    {"type": "turn/end", "data": {"reason": {"kind": "max-tokens", "error": {"code": "c", "message": "m"}}}},
    {"type": "completion", "is_error": False, "finalText": "t", "message": "m"},
    {"role": "assistant", "content": "t"},
    {"role": "meta", "type": "turn.step.failed", "error_message": "m"},
    {"type": "text", "part": {"type": "text", "text": "t"}},
    {"type": "step_finish", "part": {"reason": "stop"}},
    {"type": "done", "reason": "idle"},
    {"type": "message_end", "message": {"role": "assistant", "content": [{"type": "text", "text": "t"}],
                                         "stopReason": "error", "errorMessage": "m"}},
    {"type": "response", "success": False, "error": "e", "command": "prompt"},
    {"type": "agent_end", "willRetry": False},
    {"generationStatus": "failed", "type": "message", "role": "assistant", "content": [{"text": "t"}]},
]
BODIES: list[JsonValue] = [
    {"model": "m", "stream": True, "system": [{"type": "text", "text": "s"}],
     "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "is_error": True}]}],
     "tools": [{"name": "mcp__sharedos__files_read", "input_schema": {"type": "object"}, "defer_loading": False}],
     "metadata": {"user_id": "u"}},
    {"model": "m", "stream": True, "stream_options": {"include_usage": True}, "thinking": {"type": "enabled"},
     "messages": [{"role": "tool", "content": "c"}, {"role": "function"}],
     "tools": [{"type": "function", "function": {"name": "sharedos_files_read"}}], "functions": [{"name": "mcp"}]},
    {"model": "m", "stream": True, "prompt_cache_key": "k", "client_metadata": {"a": "b"},
     "input": [{"type": "function_call_output", "id": "fc_0", "output": "o"}],
     "tools": [{"type": "namespace", "name": "mcp__sharedos", "tools": [{"type": "function", "name": "files_read"}]}]},
    {"contents": [{"role": "user", "parts": [{"functionResponse": {"id": "i", "response": {"output": "o"}}},
                                            {"text": "t"}]}],
     "tools": [{"functionDeclarations": [{"name": "mcp_sharedos_files_read"}]}],
     "generationConfig": {"responseMimeType": "application/json",
                          "responseJsonSchema": {"type": "object", "properties": {"a": {"type": "string"}},
                                                 "required": ["a"], "enum": None}}},
]


def places(value: JsonValue, at: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every path into ``value`` (the root included)."""
    found = [at]
    if isinstance(value, dict):
        for key, item in value.items():
            found += places(item, (*at, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            found += places(item, (*at, index))
    return found


def replaced(value: JsonValue, edits: list[tuple[tuple[str | int, ...], JsonValue]]) -> JsonValue:
    value = json.loads(json.dumps(value))
    for path, new in edits:
        if not path:
            value = new
            continue
        holder: Any = value
        try:
            for step in path[:-1]:
                holder = holder[step]
            holder[path[-1]] = new
        except (KeyError, IndexError, TypeError):
            continue  # an earlier edit removed that place
    return json.loads(json.dumps(value))  # as a parser gives it back: every key a string


def hostile(bases: list[JsonValue]) -> st.SearchStrategy[JsonValue]:
    """One of ``bases`` with some of its strings replaced by hostile text, then up to three of its places (any
    of them) by anything."""

    def mutated(base: JsonValue) -> st.SearchStrategy[JsonValue]:
        paths = places(base)
        strings = [p for p in paths if p and isinstance(_at(base, p), str)]
        kept_or_text = st.lists(st.none() | texts, min_size=len(strings), max_size=len(strings))
        edits = st.lists(st.tuples(st.sampled_from(paths), values), max_size=3)
        return st.tuples(kept_or_text, edits).map(
            lambda drawn: replaced(base, [*((p, t) for p, t in zip(strings, drawn[0], strict=True) if t is not None),
                                          *drawn[1]])
        )

    return st.sampled_from(bases).flatmap(mutated)


def _at(value: Any, path: tuple[str | int, ...]) -> Any:
    for step in path:
        value = value[step]
    return value


frames = hostile(FRAMES)


def hostile_settings(examples: int) -> settings:
    """The same examples on every run (derandomized, no example database): a failure here reproduces as it is,
    and a run never passes by the luck of its draw."""
    return settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow])


def encoded(value: JsonValue) -> bytes:
    """What a CLI prints: the value as one JSON line (NaN and infinities as Python's encoder writes them)."""
    return json.dumps(value).encode()


def writable(value: Any) -> None:
    """The artifacts are UTF-8 JSON: this raises what writing them would."""
    json.dumps(value, ensure_ascii=False, allow_nan=False).encode("utf-8")


@hostile_settings(250)
@given(lines=st.lists(frames, min_size=1, max_size=4), exit_code=st.none() | st.integers(-1, 255))
def test_no_interpreter_raises_on_hostile_frames_and_its_outcome_can_be_written(
    lines: list[JsonValue], exit_code: int | None
) -> None:
    for name, interpret in sorted(INTERPRETERS.items()):
        reader = StreamReader(interpret)
        for line in lines:
            reader.line(encoded(line))
        writable(harness_outcome(reader, exit_code, name).to_json())
        writable(reader.messages)
        writable([(s.server, s.connected, s.detail) for s in reader.startup])


@hostile_settings(100)
@given(events=st.lists(frames, min_size=1, max_size=6), exit_code=st.none() | st.integers(-1, 255))
def test_dsh_session_reader_does_not_raise_on_a_hostile_log(
    tmp_path_factory: pytest.TempPathFactory, events: list[JsonValue], exit_code: int | None
) -> None:
    home = tmp_path_factory.mktemp("dsh")
    log = home / "sessions" / "slug" / "session-1" / "session.jsonl.zstd"
    log.parent.mkdir(parents=True)
    log.write_bytes(zstandard.ZstdCompressor().compress(b"".join(encoded(e) + b"\n" for e in events)))
    reader = StreamReader(INTERPRETERS["deepseek"])
    reader.steps(read_session(home, exit_code))
    writable(harness_outcome(reader, exit_code, "deepseek").to_json())


bodies = hostile(BODIES)


@hostile_settings(200)
@given(body=bodies, path=words)
def test_no_dialect_raises_on_a_hostile_request_body(body: JsonValue, path: str) -> None:
    body = read_body(encoded(body), "").json  # as the endpoint reads it
    guess_dialect(body)
    for dialect in DIALECTS:
        info = RequestInfo("POST", f"/v1/{path}")
        dialect.looks_like(body)
        dialect.count_tool_results(body)
        exposed = dialect.exposed_tools(body)
        dialect.wants_stream(info, body)
        model = dialect.model_name(info, body, "runner-scripted")
        dialect.auxiliary(info, body, model)
        plan = plan_for(normalise_actions([{"do": "call", "tool": "files.read", "arguments": {"path": "a"}},
                                           {"do": "finish", "text": "done"}]), exposed)
        plan.reply(dialect.count_tool_results(body))
        ctx = RenderContext(model=model, step=0, body=body if isinstance(body, dict) else {})
        target = ToolTarget("files.read", "claude", "mcp__sharedos__files_read", {"path": "a"})
        for stream in (False, True):
            for reply in (ToolCallReply(target, 0, "a preamble"), TextReply("done", side=True)):
                rendered = dialect.render(reply, ctx, stream=stream, info=info)
                writable(rendered.body)
                for event in rendered.events or []:
                    event.encode()


@hostile_settings(100)
@given(recorded=bodies, received=bodies)
def test_replay_comparison_does_not_raise_on_hostile_bodies(recorded: JsonValue, received: JsonValue) -> None:
    recorded, received = read_body(encoded(recorded), "").json, read_body(encoded(received), "").json
    for dialect in (None, *(d.name for d in DIALECTS)):
        first_divergence({"method": "POST", "path": "/v1/x", "body": recorded},
                         {"method": "POST", "path": "/v1/x", "body": received}, dialect)
