"""Replay mode's pure parts: normalising volatile fields per dialect, naming the first divergence,
loading a recording (order, preconnects, what cannot be replayed), and rebuilding the answers.

The crafted requests copy the shapes (and the volatile values) of real recordings: the scripted
escalation cell run twice with each vendor CLI (see the evidence in ``runner.model.compare``)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from runner.core.scrub import Scrubber
from runner.model import ModelEndpointConfig, ModelEndpointError, ModelMode, first_divergence
from runner.model.compare import find_difference, normalise_body
from runner.model.exchange_log import Capture
from runner.model.replay import RecordingError, Replayer, answer_for, load_recording
from runner.model.sse import SseEvent, SseParser

ARGS = {"path": ["Workspace", "policy.md"]}
RESULT = '{"path":["Workspace","policy.md"],"content":"Only the owner changes policy.\\n"}'


def req(body: Any, path: str = "/v1/messages", query: str = "", method: str = "POST") -> dict[str, Any]:
    return {"method": method, "path": path, "query": query, "body": body,
            "headers": {"x-claude-code-session-id": "differs-and-is-ignored"}}


# --- per-dialect requests, two runs apart ---------------------------------------------------------


def anthropic(run: int) -> dict[str, Any]:
    session, device, day = (("2decd772-493f-4d30-b6fe-6fcf6a3c4075", "6df1" * 16, "2026-12-01") if run == 1 else
                            ("96d1f119-28ea-4832-b143-e1dbe5dce7c2", "4605" * 16, "2026-12-02"))
    user_id = json.dumps({"device_id": device, "account_uuid": "", "session_id": session})
    return {
        "model": "claude-opus-5-5", "max_tokens": 128000, "stream": True, "metadata": {"user_id": user_id},
        "system": [{"type": "text", "text": "You are Claude Code."}],
        "tools": [{"name": "mcp__sharedos__files_read", "input_schema": {"type": "object"}}],
        "messages": [
            {"role": "user", "content": "Do the task."},
            {"role": "system", "content": [{"type": "text", "text": f"# Environment\n\nToday's date is {day}."}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_runner_0",
                                               "name": "mcp__sharedos__files_read", "input": copy.deepcopy(ARGS)}]},
            {"role": "user", "content": [{"tool_use_id": "toolu_runner_0", "type": "tool_result",
                                          "content": [{"type": "text", "text": RESULT}]}]},
        ],
    }


def responses(run: int) -> dict[str, Any]:
    session, turn, item, out, day, wall, ms = (
        ("01a23098-8050-7611-8d5d-d7c3abd77621", "01a23098-8077-78e0-9bda-525344eff02e",
         "msg_01a23098-8093-7af0-922c-40c455825c05", "fco_01a23098-80df-7d33-ae9b-d2807dc028cf", "2026-12-01",
         "0.0103", 1796111630460) if run == 1 else
        ("01a23098-8927-7460-a5a1-78a4656c4426", "01a23098-894a-72a1-9e3d-bd0991d35a6e",
         "msg_01a23098-8963-7150-a187-3212164d95aa", "fco_01a23098-8999-76a1-afc8-8ccc0f065f79", "2026-12-02",
         "0.0067", 1796111632590))
    meta = json.dumps({"session_id": session, "turn_id": turn, "turn_started_at_unix_ms": ms})
    client_metadata = {"x-codex-turn-metadata": meta, "thread_id": session, "session_id": session,
                       "turn_id": turn, "x-codex-window-id": f"{session}:0"}
    if run == 2:  # Codex's client_metadata is a hash map: its key order changes from run to run
        client_metadata = dict(reversed(list(client_metadata.items())))
    return {
        "model": "gpt-test", "stream": True,
        "input": [
            {"type": "message", "id": item, "role": "user", "content": [
                {"type": "input_text", "text": f"<environment_context>\n  <current_date>{day}</current_date>"}]},
            {"type": "function_call", "id": "fc_runner_0", "name": "files_read", "namespace": "mcp__sharedos",
             "arguments": json.dumps(ARGS, separators=(",", ":")), "call_id": "call_runner_0"},
            {"type": "function_call_output", "id": out, "call_id": "call_runner_0", "output": [
                {"type": "input_text", "text": f"Wall time: {wall} seconds\nOutput:"},
                {"type": "input_text", "text": RESULT}]},
        ],
        "prompt_cache_key": session, "client_metadata": client_metadata,
    }


def gemini(run: int) -> dict[str, Any]:
    ms, day = ((1796111637279, "Tuesday, December 1, 2026") if run == 1 else
               (1796111643596, "Wednesday, December 2, 2026"))
    call_id = f"mcp_sharedos_files.read_{ms}_0"
    return {
        "contents": [
            {"role": "user", "parts": [{"text": f"Today's date is {day} (formatted according to the user's locale)."}]},
            {"role": "model", "parts": [{"functionCall": {"id": call_id, "name": "mcp_sharedos_files_read",
                                                          "args": copy.deepcopy(ARGS)}}]},
            {"role": "user", "parts": [{"functionResponse": {"id": call_id, "name": "mcp_sharedos_files_read",
                                                             "response": {"output": RESULT}}}]},
        ],
        "tools": [{"functionDeclarations": [{"name": "mcp_sharedos_files_read"}]}],
        "generationConfig": {"temperature": 0},
    }


def chat(run: int) -> dict[str, Any]:
    qwen, opencode, pi = (("Tuesday, December 1, 2026", "Tue Dec 01 2026", "2026-12-01") if run == 1 else
                          ("Wednesday, December 2, 2026", "Wed Dec 02 2026", "2026-12-02"))
    return {
        "model": "fake-model", "stream": True,
        "messages": [
            {"role": "system", "content": f"Today's date is {qwen}.\n  Today's date: {opencode}\nCurrent date: {pi}"},
            {"role": "user", "content": "Do the task."},
            {"role": "assistant", "content": None, "tool_calls": [
                {"id": "call_runner_0", "type": "function",
                 "function": {"name": "sharedos_files_read", "arguments": json.dumps(ARGS, separators=(",", ":"))}}]},
            {"role": "tool", "tool_call_id": "call_runner_0", "content": RESULT},
        ],
    }


DIALECTS = {
    "anthropic-messages": (anthropic, "/v1/messages", "beta=true"),
    "openai-responses": (responses, "/v1/responses", ""),
    "gemini": (gemini, "/v1beta/models/fake-model:streamGenerateContent", "alt=sse"),
    "openai-chat": (chat, "/v1/chat/completions", ""),
}
# where each dialect's body carries the echoed argument path[1] of the first tool call
ARGUMENT_PATHS = {
    "anthropic-messages": "body.messages[2].content[0].input.path[1]",
    "openai-responses": "body.input[1].arguments<json>.path[1]",
    "gemini": "body.contents[1].parts[0].functionCall.args.path[1]",
    "openai-chat": "body.messages[2].tool_calls[0].function.arguments<json>.path[1]",
}


def pair(dialect: str) -> tuple[dict[str, Any], dict[str, Any]]:
    make, path, query = DIALECTS[dialect]
    return req(make(1), path, query), req(make(2), path, query)


def change_argument(dialect: str, body: dict[str, Any], value: str = "secret.md") -> None:
    if dialect == "anthropic-messages":
        body["messages"][2]["content"][0]["input"]["path"][1] = value
    elif dialect == "openai-responses":
        body["input"][1]["arguments"] = json.dumps({"path": ["Workspace", value]}, separators=(",", ":"))
    elif dialect == "gemini":
        body["contents"][1]["parts"][0]["functionCall"]["args"]["path"][1] = value
    else:
        body["messages"][2]["tool_calls"][0]["function"]["arguments"] = json.dumps({"path": ["Workspace", value]})


def add_message(dialect: str, body: dict[str, Any]) -> str:
    if dialect == "openai-responses":
        body["input"].append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": "more"}]})
        return "body.input[3]"
    if dialect == "gemini":
        body["contents"].append({"role": "user", "parts": [{"text": "more"}]})
        return "body.contents[3]"
    body["messages"].append({"role": "user", "content": "more"})
    return "body.messages[4]"


@pytest.mark.parametrize("dialect", DIALECTS)
def test_two_runs_of_the_same_cell_do_not_diverge(dialect: str) -> None:
    recorded, received = pair(dialect)
    assert recorded != received  # the volatile values really differ
    assert first_divergence(recorded, received, dialect) is None


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_changed_tool_argument_is_named(dialect: str) -> None:
    recorded, received = pair(dialect)
    change_argument(dialect, recorded["body"])
    what = first_divergence(recorded, received, dialect)
    assert what == f'{ARGUMENT_PATHS[dialect]} differs: recorded "secret.md", received "policy.md"'


@pytest.mark.parametrize("dialect", DIALECTS)
def test_a_changed_model_is_named(dialect: str) -> None:
    recorded, received = pair(dialect)
    if dialect == "gemini":  # Gemini names the model in the path
        received["path"] = "/v1beta/models/other-model:streamGenerateContent"
        assert first_divergence(recorded, received, dialect) == (
            'the request path differs: recorded "/v1beta/models/fake-model:streamGenerateContent", '
            'received "/v1beta/models/other-model:streamGenerateContent"')
        return
    received["body"]["model"] = "other-model"
    what = first_divergence(recorded, received, dialect)
    assert what is not None and what.startswith("body.model differs: recorded ") and '"other-model"' in what


@pytest.mark.parametrize("dialect", DIALECTS)
def test_an_extra_message_is_named(dialect: str) -> None:
    recorded, received = pair(dialect)
    where = add_message(dialect, received["body"])
    what = first_divergence(recorded, received, dialect)
    assert what is not None and what.startswith(f"{where} is not in the recorded request; received {{")
    # and the other way round: the CLI sent one message fewer than it did when recorded
    what = first_divergence(received, recorded, dialect)
    assert what is not None and what.startswith(f"{where} is missing from the received request; recorded {{")


def test_model_minted_ids_are_not_volatile() -> None:
    """Ids the model minted come back from the recorded answers unchanged: a difference is real."""
    recorded, received = pair("anthropic-messages")
    received["body"]["messages"][2]["content"][0]["id"] = "toolu_other"
    assert first_divergence(recorded, received, "anthropic-messages") == (
        'body.messages[2].content[0].id differs: recorded "toolu_runner_0", received "toolu_other"')
    recorded, received = pair("openai-chat")
    received["body"]["messages"][3]["tool_call_id"] = "call_other"
    assert first_divergence(recorded, received, "openai-chat") == (
        'body.messages[3].tool_call_id differs: recorded "call_runner_0", received "call_other"')
    recorded, received = pair("openai-responses")
    received["body"]["input"][1]["id"] = "fc_other"
    assert "body.input[1].id differs" in str(first_divergence(recorded, received, "openai-responses"))


def test_volatile_ids_keep_their_pairing() -> None:
    """A CLI-minted id is not compared by value, but which values are equal still is."""
    recorded, received = pair("gemini")
    received["body"]["contents"][2]["parts"][0]["functionResponse"]["id"] = "mcp_sharedos_files.read_1_9"
    assert first_divergence(recorded, received, "gemini") == (
        "body.contents[2].parts[0].functionResponse.id differs: recorded <cli-call-id#1>, received <cli-call-id#2>")


def test_normalised_tokens() -> None:
    body = normalise_body(responses(1), "openai-responses")
    assert body["prompt_cache_key"] == "<session#1>" and body["client_metadata"]["session_id"] == "<session#1>"
    assert body["input"][0]["id"] == "<cli-item-id#1>" and body["input"][1]["id"] == "fc_runner_0"
    assert body["input"][0]["content"][0]["text"].endswith("<current_date><date#1></current_date>")
    assert body["input"][2]["output"][0]["text"] == "Wall time: <duration#1> seconds\nOutput:"
    assert normalise_body(anthropic(1), "anthropic-messages")["metadata"]["user_id"] == "<user#1>"
    text = normalise_body({"t": "at 2026-12-01T07:57:27.106+00:00, not 12026-12-011 nor 2026-12"}, None)["t"]
    assert text == "at <date#1>, not 12026-12-011 nor 2026-12"
    assert normalise_body(anthropic(1), "openai-chat")["metadata"]["user_id"] != "<user#1>"  # per dialect


def test_method_path_query_and_dialects() -> None:
    recorded, received = pair("anthropic-messages")
    assert first_divergence(recorded, {**received, "method": "PUT"}, "anthropic-messages") == (
        'the request method differs: recorded "POST", received "PUT"')
    assert first_divergence(recorded, {**received, "query": ""}, "anthropic-messages") == (
        'the request query differs: recorded "beta=true", received ""')
    # Google's query-string key is not compared (the CLI holds a placeholder; it may not send one at all)
    assert first_divergence(req({}, query="alt=sse&key=a"), req({}, query="alt=sse"), "gemini") is None
    assert first_divergence(req(None, method="GET"), req(None, method="GET"), None) is None
    with pytest.raises(ValueError, match="unknown dialect"):
        first_divergence(recorded, received, "anthropic")


def test_long_values_are_truncated_and_keys_quoted() -> None:
    what = first_divergence(req({"a b": "x" * 500}), req({"a b": "y" * 500}), "openai-chat")
    assert what is not None and what.startswith('body["a b"] differs: recorded "xxx') and len(what) < 220
    assert "…" in what
    found = find_difference(req({"n": 1}), req({"n": 1.0}), "openai-chat")
    assert found is not None and found.field == "body.n"


# --- the log keeps what a replay sends ------------------------------------------------------------


def test_events_are_rebuilt_character_for_character() -> None:
    """An upstream's own JSON spacing, escapes and SSE fields survive the log."""
    sent = [SseEvent('{"candidates": [{"text": "caf\\u00e9"}]}'), SseEvent('{"a":1}', "message_start", "7"),
            SseEvent("[DONE]"), SseEvent('"just a string"'), SseEvent("1e5", retry=3000)]
    capture = Capture(sse=True)
    stream = b": keep-alive\n\n" + b"".join(e.encode() for e in sent)
    for i in range(0, len(stream), 5):
        capture.add(stream[i:i + 5])
    logged = capture.to_json()["events"]
    assert logged[0] == {"data": {"candidates": [{"text": "café"}]}, "raw": '{"candidates": [{"text": "caf\\u00e9"}]}'}
    assert logged[1] == {"data": {"a": 1}, "event": "message_start", "id": "7"}  # compact: no raw copy
    assert logged[3] == {"data": '"just a string"'}  # not a container: kept as text
    rebuilt = [SseEvent.from_log(json.loads(json.dumps(e))) for e in logged]
    assert rebuilt == sent
    assert SseParser().feed(b"".join(e.encode() for e in rebuilt).decode()) == sent


def test_non_stream_bodies_keep_their_text() -> None:
    capture = Capture(sse=False)
    capture.add(b'{\n  "id": "resp_1"\n}')
    assert capture.to_json() == {"bytes": 20, "body": {"id": "resp_1"}, "raw": '{\n  "id": "resp_1"\n}'}


def test_compressed_upstream_answers_are_logged_decoded() -> None:
    import gzip

    capture = Capture(sse=False, encoding="gzip")
    packed = gzip.compress(b'{"a":1}')
    capture.add(packed[:5])
    capture.add(packed[5:])
    assert capture.to_json() == {"bytes": len(packed), "content_encoding": "gzip", "body": {"a": 1}}
    bounded = Capture(sse=False, encoding="gzip", limit=10)
    bounded.add(gzip.compress(b"x" * 10_000))  # the bound is on the decoded bytes
    assert bounded.kept == 10 and "truncated" in bounded.to_json()
    other = Capture(sse=True, encoding="br")
    other.add(b"\x00\x01")
    assert "not decoded" in other.to_json()["not_captured"]


# --- recordings -------------------------------------------------------------------------------------


def record(seq: int, request_seq: int | None, path: str = "/v1/messages", response: Any = None,
           method: str = "POST", **extra: Any) -> dict[str, Any]:
    rec: dict[str, Any] = {"seq": seq, "dialect": "anthropic-messages" if path == "/v1/messages" else None,
                           "request": {"method": method, "path": path, "query": "", "body": {"n": seq}},
                           "response": response or {"status": 200, "body": {"ok": seq}}, "ended": "complete", **extra}
    if request_seq is not None:
        rec["request_seq"] = request_seq
    return rec


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_recording_order_and_preconnects(tmp_path: Path) -> None:
    hello = record(1, 2, "/api/hello", {"status": 200}, method="HEAD")
    log = write(tmp_path / "x.jsonl", [hello, record(2, 3), record(3, 1)])  # written in completion order
    exchanges = load_recording(log)
    assert [(e.number, e.request["body"]["n"], e.line) for e in exchanges] == [(1, 3, 3), (2, 2, 2)]
    old = write(tmp_path / "old.jsonl", [record(1, None), record(2, None)])  # before request_seq: line order
    assert [e.request["body"]["n"] for e in load_recording(old)] == [1, 2]


@pytest.mark.parametrize(
    ("response", "request_body", "message"),
    [
        ({"status": 200, "stream": True, "bytes": 5_000_000, "events": [],
          "truncated": "response of 5000000 bytes; the copy stops after 4194304 bytes"}, None,
         r"exchange 2 \(POST /v1/messages, line 2\): its response is over the exchange log's bound of 4194304 bytes "
         r"\(response of 5000000 bytes; the copy stops after 4194304 bytes\); the log holds only the start of it, "
         r"so it cannot be replayed"),
        ({"status": 200, "bytes": 2, "not_captured": "the response's content-encoding 'br' is not decoded"}, None,
         "was not copied into the log"),
        ({"status": 200}, {"truncated": "request body of 5000000 bytes; first 4194304 bytes kept", "text": "{"},
         "its request body is over the exchange log's bound"),
        ({"stream": True, "events": []}, None, "the log has no status"),
    ],
)
def test_what_cannot_be_replayed_is_refused(tmp_path: Path, response: Any, request_body: Any, message: str) -> None:
    bad = record(2, 2, response=response)
    if request_body is not None:
        bad["request"]["body"] = request_body
    log = write(tmp_path / "x.jsonl", [record(1, 1), bad])
    with pytest.raises(RecordingError, match="cannot be replayed: " + message if "\\(" in message else message):
        load_recording(log)
    with pytest.raises(ModelEndpointError, match="cannot be replayed"):
        ModelEndpointConfig(mode=ModelMode.REPLAY, recording=log, scrubber=Scrubber({}))


def test_unreadable_recordings(tmp_path: Path) -> None:
    with pytest.raises(RecordingError, match="cannot read the recording"):
        load_recording(tmp_path / "missing.jsonl")
    (tmp_path / "x.jsonl").write_text('{"seq": 1}\nnot json\n')
    with pytest.raises(RecordingError, match="line 1: not an exchange record"):
        load_recording(tmp_path / "x.jsonl")
    (tmp_path / "y.jsonl").write_text(json.dumps(record(1, 1)) + "\nnot json\n")
    with pytest.raises(RecordingError, match="line 2: not a JSON exchange record"):
        load_recording(tmp_path / "y.jsonl")


def test_replay_config(tmp_path: Path) -> None:
    log = write(tmp_path / "x.jsonl", [record(1, 1)])
    config = ModelEndpointConfig(mode=ModelMode.REPLAY, recording=log, scrubber=Scrubber({}))
    assert config.mode is ModelMode.REPLAY and len(config.exchanges) == 1
    with pytest.raises(ModelEndpointError, match="needs a recording"):
        ModelEndpointConfig(mode=ModelMode.REPLAY, scrubber=Scrubber({}))
    with pytest.raises(ModelEndpointError, match="only in replay mode"):
        ModelEndpointConfig(mode=ModelMode.SCRIPTED, recording=log, scrubber=Scrubber({}))


def test_replayer_stops_at_the_first_divergence(tmp_path: Path) -> None:
    exchanges = load_recording(write(tmp_path / "x.jsonl", [record(1, 1), record(2, 2)]))
    replayer = Replayer(exchanges)
    first = {"method": "POST", "path": "/v1/messages", "query": "", "body": {"n": 1}}
    assert replayer.take(first, "anthropic-messages") is exchanges[0]
    wrong = replayer.take({**first, "body": {"n": 3}}, "anthropic-messages")
    expected = {"step": 2, "path": "/v1/messages", "what": "body.n differs: recorded 2, received 3",
                "field": "body.n"}
    assert wrong.to_json() == expected  # type: ignore[union-attr]
    # every later request gets the same answer, even one that matches
    assert replayer.take({**first, "body": {"n": 2}}, "anthropic-messages") is wrong
    assert replayer.served == [1]


def test_replayer_past_the_end_and_dialect(tmp_path: Path) -> None:
    exchanges = load_recording(write(tmp_path / "x.jsonl", [record(1, 1)]))
    replayer = Replayer(exchanges)
    received = {"method": "POST", "path": "/v1/messages", "query": "", "body": {"n": 1}}
    assert replayer.take(received, "anthropic-messages") is exchanges[0]
    extra = replayer.take(received, "anthropic-messages")
    assert extra.to_json() == {  # type: ignore[union-attr]
        "step": 2, "path": "/v1/messages", "what": "the recording has 1 exchanges; the CLI made a request 2"}
    other = Replayer(exchanges).take(received, "openai-chat")
    assert other.to_json()["what"] == (  # type: ignore[union-attr]
        'the request dialect differs: recorded "anthropic-messages", received "openai-chat"')


def test_answers(tmp_path: Path) -> None:
    events = [{"event": "message_start", "data": {"type": "message_start"}}, {"data": "[DONE]"}]
    scripted_stream = record(1, 1, response={"status": 200, "stream": True, "bytes": 10, "events": events})
    live_json = record(2, 2, response={
        "status": 429, "content_type": "application/json", "stream": False, "bytes": 12,
        "headers": {"content-type": "application/json", "retry-after": "1", "set-cookie": "[redacted]",
                    "content-length": "12", "x-api-key": "[redacted]", "request-id": "req_1"},
        "body": {"error": 1}, "raw": '{"error": 1}'})
    broken = record(3, 3, response={"status": 200, "stream": True, "content_type": "text/event-stream",
                                    "headers": {"content-type": "text/event-stream"}, "events": events[:1]},
                    ended="upstream_error")
    text = record(4, 4, response={"status": 404, "bytes": 9, "chunks": ["not ", "found"]})
    a, b, c, d = load_recording(write(tmp_path / "x.jsonl", [scripted_stream, live_json, broken, text]))
    first = answer_for(a)
    assert first.events == [SseEvent('{"type":"message_start"}', "message_start"), SseEvent("[DONE]")]
    assert first.content_type == "text/event-stream; charset=utf-8" and ("cache-control", "no-cache") in first.headers
    second = answer_for(b)
    assert (second.status, second.content_type, second.body) == (429, "application/json", b'{"error": 1}')
    assert second.headers == [("retry-after", "1"), ("request-id", "req_1")]
    assert answer_for(c).broken and not first.broken
    assert (answer_for(d).body, answer_for(d).content_type) == (b"not found", None)
