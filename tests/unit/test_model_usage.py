"""Usage, read in every dialect (streamed and not), reported by the scripted model, and metered from the bytes an
answer is sent in.

The vendor-shaped payloads below are the examples of each vendor's API reference (Anthropic "Messages" and
"Streaming Messages", OpenAI "Chat Completions" and "Responses", the Gemini API's ``UsageMetadata``), with their
numbers; the DeepSeek one is the shape of its API's ``usage`` (``prompt_cache_hit_tokens``)."""

from __future__ import annotations

import gzip
import json
from typing import Any

import pytest

from runner.core.usage import Usage, UsageTotals, sum_usage
from runner.model.dialects import ANTHROPIC, DIALECTS, GEMINI, OPENAI_CHAT, OPENAI_RESPONSES, Dialect, RenderContext
from runner.model.dialects.base import RequestInfo, estimate_tokens, text_tokens
from runner.model.dialects.openai_chat import REASONING_TEXT
from runner.model.names import ToolTarget
from runner.model.script import StallReply, TextReply, ToolCallReply
from runner.model.sse import SseEvent
from runner.model.usage_meter import UsageMeter
from tests.simulated_clis import SimulatedCli

USAGE = Usage(input=1234, cached_input=567, output=89, reasoning=12)
REPLY = ToolCallReply(ToolTarget("files.read", "x", "files_read", {"path": ["Workspace", "a.md"]}), 1, "Reading.")


# --- the record -----------------------------------------------------------------------------------


def test_usage_adds_field_by_field_and_reads_back_what_it_writes() -> None:
    a, b = Usage(10, 4, 3, 1), Usage(5, 0, 2, 0)
    assert a + b == Usage(15, 4, 5, 1) and (a + b).total == 20
    assert sum_usage([a, b, b]) == Usage(20, 4, 7, 1) and sum_usage([]) == Usage()
    assert a.to_json() == {"input": 10, "cachedInput": 4, "output": 3, "reasoning": 1}
    assert Usage.from_json(a.to_json()) == a and Usage.from_json({"output": 2}) == Usage(output=2)
    for bad in (-1, True, 1.5, "3"):
        with pytest.raises(ValueError, match="count"):
            Usage(input=bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="count"):
            Usage.from_json({"input": bad})


def test_totals_split_conversation_from_side_and_count_the_answers_that_reported_none() -> None:
    totals = UsageTotals().with_answer(Usage(100, 50, 10), side=False).with_answer(Usage(20, 0, 5), side=True)
    totals = totals.with_answer(None, side=False).with_answer(Usage(1, 0, 1), side=False)
    assert totals.conversation == Usage(101, 50, 11) and totals.side == Usage(20, 0, 5)
    assert totals.total == Usage(121, 50, 16) and (totals.answers, totals.unreported) == (4, 1)
    assert not totals.complete and UsageTotals().complete
    assert UsageTotals.from_json(totals.to_json()) == totals
    assert (totals + totals).answers == 8 and (totals + totals).side == Usage(40, 0, 10)
    assert totals.to_json()["total"] == {"input": 121, "cachedInput": 50, "output": 16, "reasoning": 0}


# --- what vendors send ----------------------------------------------------------------------------


def test_anthropic_body_adds_the_cache_to_the_input() -> None:
    body = {"type": "message", "usage": {"input_tokens": 2095, "cache_creation_input_tokens": 100,
                                         "cache_read_input_tokens": 1500, "output_tokens": 503}}
    assert ANTHROPIC.usage_of([body]) == Usage(input=3695, cached_input=1500, output=503)


def test_anthropic_stream_merges_message_start_and_the_cumulative_message_delta() -> None:
    start = {"type": "message_start", "message": {"id": "msg_1", "usage": {
        "input_tokens": 25, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 10, "output_tokens": 1}}}
    delta = {"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 15}}
    others = [{"type": "ping"}, {"type": "content_block_delta", "delta": {"text": "usage"}}, {"type": "message_stop"}]
    assert ANTHROPIC.usage_of([start, *others, delta]) == Usage(input=35, cached_input=10, output=15)
    assert ANTHROPIC.usage_of([start]) == Usage(input=35, cached_input=10, output=1)  # cut before message_delta
    newer = {"type": "message_delta", "usage": {"input_tokens": 30, "cache_read_input_tokens": 10, "output_tokens": 7}}
    assert ANTHROPIC.usage_of([start, newer]) == Usage(input=40, cached_input=10, output=7)
    assert ANTHROPIC.usage_of([{"type": "message_delta", "usage": {"output_tokens": 4}}]) == Usage(output=4)
    assert ANTHROPIC.usage_of([{"type": "message_start", "message": {}}, {"type": "error"}]) is None


def test_openai_chat_usage_with_its_details_and_deepseeks_cache_hits() -> None:
    openai = {"object": "chat.completion", "usage": {
        "prompt_tokens": 2006, "completion_tokens": 300, "total_tokens": 2306,
        "prompt_tokens_details": {"cached_tokens": 1920, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 64, "audio_tokens": 0}}}
    assert OPENAI_CHAT.usage_of([openai]) == Usage(input=2006, cached_input=1920, output=300, reasoning=64)
    deepseek = {"choices": [{"delta": {}, "finish_reason": "stop"}], "usage": {
        "prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150, "prompt_cache_hit_tokens": 64,
        "prompt_cache_miss_tokens": 56, "completion_tokens_details": {"reasoning_tokens": 20}}}
    assert OPENAI_CHAT.usage_of([deepseek]) == Usage(input=120, cached_input=64, output=30, reasoning=20)
    chunks = [{"choices": [{"delta": {"content": "x"}}], "usage": None}, openai]
    assert OPENAI_CHAT.usage_of(chunks) == Usage(2006, 1920, 300, 64)
    assert OPENAI_CHAT.usage_of([{"choices": [], "usage": None}, {"usage": {}}]) is None


def test_openai_responses_usage_on_the_completed_response() -> None:
    usage = {"input_tokens": 328, "input_tokens_details": {"cached_tokens": 128}, "output_tokens": 52,
             "output_tokens_details": {"reasoning_tokens": 32}, "total_tokens": 380}
    created = {"type": "response.created", "response": {"status": "in_progress", "usage": None}}
    completed = {"type": "response.completed", "response": {"status": "completed", "usage": usage}}
    assert OPENAI_RESPONSES.usage_of([created, completed]) == Usage(328, 128, 52, 32)
    assert OPENAI_RESPONSES.usage_of([{"object": "response", "usage": usage}]) == Usage(328, 128, 52, 32)
    incomplete = {"type": "response.incomplete", "response": {"usage": {"input_tokens": 9, "output_tokens": 2}}}
    assert OPENAI_RESPONSES.usage_of([created, incomplete]) == Usage(9, 0, 2, 0)
    assert OPENAI_RESPONSES.usage_of([created]) is None


def test_gemini_usage_metadata_adds_thoughts_to_the_output_and_tool_prompts_to_the_input() -> None:
    metadata = {"promptTokenCount": 1000, "cachedContentTokenCount": 600, "candidatesTokenCount": 50,
                "thoughtsTokenCount": 200, "toolUsePromptTokenCount": 30, "totalTokenCount": 1280}
    early = {"candidates": [], "usageMetadata": {"promptTokenCount": 1000, "totalTokenCount": 1000}}
    assert GEMINI.usage_of([early, {"usageMetadata": metadata}]) == Usage(1030, 600, 250, 200)
    assert GEMINI.usage_of([{"candidates": []}]) is None


def test_generation_requests_are_told_from_model_lists_and_token_counts() -> None:
    assert ANTHROPIC.generates(RequestInfo("POST", "/v1/messages"))
    assert not ANTHROPIC.generates(RequestInfo("POST", "/v1/messages/count_tokens"))
    assert GEMINI.generates(RequestInfo("POST", "/v1beta/models/m:streamGenerateContent"))
    assert not GEMINI.generates(RequestInfo("POST", "/v1beta/models/m:countTokens"))
    assert OPENAI_CHAT.generates(RequestInfo("POST", "/v1/chat/completions"))
    assert not OPENAI_CHAT.generates(RequestInfo("GET", "/v1/models"))


# --- what the scripted model reports --------------------------------------------------------------


def rendered_payloads(dialect: Dialect, ctx: RenderContext, *, stream: bool, query: dict[str, str]) -> list[Any]:
    info = RequestInfo("POST", "/v1beta/models/m:streamGenerateContent" if dialect is GEMINI else "/v1/x", query)
    rendered = dialect.render(REPLY, ctx, stream=stream, info=info)
    if rendered.events is not None:
        return [json.loads(e.data) for e in rendered.events if e.data != "[DONE]"]
    return rendered.body if isinstance(rendered.body, list) else [rendered.body]


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "not-streamed"])
@pytest.mark.parametrize("include_usage", [True, False], ids=["include_usage", "not-asked"])
def test_every_scripted_answer_reports_its_usage_in_the_dialects_own_fields(
    dialect: Dialect, stream: bool, include_usage: bool
) -> None:
    body: dict[str, Any] = {"stream_options": {"include_usage": True}} if include_usage else {}
    ctx = RenderContext(model="m", step=1, usage=USAGE if dialect is not ANTHROPIC else Usage(1234, 567, 89),
                        created=1, body=body)
    for query in ({"alt": "sse"}, {}):
        payloads = rendered_payloads(dialect, ctx, stream=stream, query=query)
        assert dialect.usage_of(payloads) == ctx.usage


def test_the_scripted_usage_rule() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hello " * 50}]}
    given = estimate_tokens(body)
    first = OPENAI_CHAT.scripted_usage(body, REPLY, 0)
    target = REPLY.target
    produced = estimate_tokens({"name": target.name, "namespace": None, "preamble": "Reading.",
                                "arguments": target.arguments})
    assert first == Usage(input=given, cached_input=0, output=produced, reasoning=0)
    assert OPENAI_CHAT.scripted_usage(body, REPLY, 2).cached_input == given // 2
    final = text_tokens("FINAL: done")
    assert GEMINI.scripted_usage(body, TextReply("FINAL: done"), 3) == Usage(given, given // 2, final)
    thinking = {**body, "thinking": {"type": "enabled"}}
    reasoning = text_tokens(REASONING_TEXT)
    usage = OPENAI_CHAT.scripted_usage(thinking, TextReply("T"), 0)
    assert (usage.output, usage.reasoning) == (1 + reasoning, reasoning)
    assert ANTHROPIC.scripted_usage(thinking, TextReply("T"), 0).reasoning == 0  # thinking is chat's
    assert OPENAI_CHAT.scripted_usage(body, StallReply(), 0).output == 0


# --- the meter ------------------------------------------------------------------------------------


def sse_bytes(dialect: Dialect, ctx: RenderContext) -> bytes:
    rendered = dialect.render(REPLY, ctx, stream=True, info=RequestInfo("POST", "/x", {"alt": "sse"}))
    assert rendered.events is not None
    return b"".join(e.encode() for e in rendered.events)


@pytest.mark.parametrize("dialect", DIALECTS, ids=lambda d: d.name)
def test_the_meter_reads_a_stream_however_it_is_cut(dialect: Dialect) -> None:
    usage = USAGE if dialect is not ANTHROPIC else Usage(1234, 567, 89)
    data = sse_bytes(dialect, RenderContext(model="m", step=1, usage=usage, body={}))
    for size in (1, 2, 7, 64, len(data)):
        meter = UsageMeter(dialect, sse=True)
        for start in range(0, len(data), size):
            meter.add(data[start:start + size])
        assert meter.finish() == usage, size
    crlf = UsageMeter(dialect, sse=True)
    crlf.add(data.replace(b"\n", b"\r\n"))
    assert crlf.finish() == usage


def test_the_meter_reads_a_last_event_that_never_got_its_blank_line_and_skips_what_is_not_json() -> None:
    meter = UsageMeter(OPENAI_RESPONSES, sse=True)
    meter.add(b"data: {not json, usage}\n\n: a comment with usage\n\nevent: response.completed\n")
    meter.add(b'data: {"type":"response.completed","response":{"usage":{"input_tokens":5,"output_tokens":2}}}')
    assert meter.usage is None
    assert meter.finish() == Usage(5, 0, 2)
    assert meter.finish() == Usage(5, 0, 2)  # finishing twice reads nothing twice


def test_the_meter_reads_a_json_answer_and_geminis_array_of_chunks() -> None:
    meter = UsageMeter(OPENAI_CHAT, sse=False)
    body = json.dumps({"usage": {"prompt_tokens": 7, "completion_tokens": 3}}).encode()
    meter.add(body[:5])
    meter.add(body[5:])
    assert meter.finish() == Usage(7, 0, 3)
    chunks = [{"usageMetadata": {"promptTokenCount": 7}}, {"usageMetadata": {"promptTokenCount": 7,
                                                                             "candidatesTokenCount": 4}}]
    gemini = UsageMeter(GEMINI, sse=False)
    gemini.add(json.dumps(chunks).encode())
    assert gemini.finish() == Usage(7, 0, 4)
    broken = UsageMeter(OPENAI_CHAT, sse=False)
    broken.add(b"<html>502 Bad Gateway</html>")
    assert broken.finish() is None and broken.unread is None


def test_the_meter_inflates_gzip_and_deflate_and_names_an_encoding_it_does_not_read() -> None:
    data = sse_bytes(OPENAI_CHAT, RenderContext(model="m", step=1, usage=USAGE, body={}))
    packed = gzip.compress(data)
    meter = UsageMeter(OPENAI_CHAT, sse=True, encoding="gzip")
    for start in range(0, len(packed), 9):
        meter.add(packed[start:start + 9])
    assert meter.finish() == USAGE
    import zlib

    deflate = UsageMeter(OPENAI_CHAT, sse=True, encoding="deflate")
    deflate.add(zlib.compress(data))
    assert deflate.finish() == USAGE
    brotli = UsageMeter(OPENAI_CHAT, sse=True, encoding="br")
    brotli.add(data)
    assert brotli.finish() is None and brotli.unread is not None and "'br'" in brotli.unread
    bad = UsageMeter(OPENAI_CHAT, sse=True, encoding="gzip")
    bad.add(b"not gzip at all")
    assert bad.finish() is None and bad.unread is not None and "inflated" in bad.unread


def test_the_meter_holds_no_event_and_no_body_past_its_bound() -> None:
    usage_event = SseEvent.json({"usage": {"prompt_tokens": 1, "completion_tokens": 1}}).encode()
    huge = SseEvent.json({"usage": {"prompt_tokens": 9, "completion_tokens": 9}, "pad": "x" * 5000}).encode()
    meter = UsageMeter(OPENAI_CHAT, sse=True, limit=1000)
    meter.add(usage_event)
    for start in range(0, len(huge), 100):  # one data line past the bound, fed in pieces
        meter.add(huge[start:start + 100])
        assert len(meter._line) <= 1000 and len(meter._data) <= 1000
    assert meter.finish() == Usage(1, 0, 1, 0)  # the oversized one is not read: the earlier report stands
    assert meter.unread == "an event over 1000 bytes was not read for usage"
    lines = UsageMeter(OPENAI_CHAT, sse=True, limit=1000)
    lines.add(b"".join(f"data: {'y' * 400}\n".encode() for _ in range(5)) + b"\n" + usage_event)
    assert lines.finish() == Usage(1, 0, 1) and lines.unread is not None
    body = UsageMeter(OPENAI_CHAT, sse=False, limit=1000)
    body.add(b"{" + b" " * 2000)
    body.add(b'"usage": {"prompt_tokens": 1, "completion_tokens": 1}}')
    assert body.finish() is None and body.unread == "the answer is over 1000 bytes: not read for usage"


def test_a_simulated_cli_reads_the_usage_runner_counts() -> None:
    """What the CLI parses from the scripted answer is the usage the meter counted (the scripted request of each
    simulated CLI, its own dialect)."""
    for cli in ("codex", "claude", "gemini", "qwen", "dsh", "opencode"):
        sim = SimulatedCli(cli, ["files.read", "sharedos.escalate"])
        dialect = {d.name: d for d in DIALECTS}[sim.dialect]
        body = sim.request()
        usage = dialect.scripted_usage(body, REPLY, 0)
        ctx = RenderContext(model="m", step=0, usage=usage, body=body)
        rendered = dialect.render(REPLY, ctx, stream=True, info=RequestInfo("POST", sim.path, {"alt": "sse"}))
        assert rendered.events is not None
        meter = UsageMeter(dialect, sse=True)
        for event in rendered.events:
            meter.add(event.encode())
        assert meter.finish() == usage == dialect.usage_of(
            [json.loads(e.data) for e in rendered.events if e.data != "[DONE]"]), cli
