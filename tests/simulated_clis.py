"""Stand-ins for the request side of the measured vendor CLIs: build the requests each one sends
(shapes from ``reference/vendor-clis.md``), read an answer the way it does, and feed tool results
back. Used by the tests and to check an endpoint by hand; no CLI behaviour beyond the wire shapes is
imitated (no retries, no built-in tools actually run).
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any

from runner.model.names import portable_name


@dataclass(frozen=True)
class ParsedCall:
    name: str
    arguments: dict[str, Any]
    call_id: str = ""
    namespace: str | None = None


@dataclass(frozen=True)
class ParsedAnswer:
    calls: list[ParsedCall]
    text: str
    reasoning: str = ""  # DeepSeek's reasoning_content (openai-chat)


def _loads(text: str) -> dict[str, Any]:
    value = json.loads(text) if text else {}
    return value if isinstance(value, dict) else {"_": value}


def parse_answer(dialect: str, *, events: list[Any] | None = None, body: Any = None) -> ParsedAnswer:
    """Calls and text of one answer: ``events`` are the SSE ``data`` payloads (parsed JSON, ``[DONE]``
    dropped) of a stream, ``body`` the JSON of a non-streaming answer."""
    if dialect == "openai-responses":
        if events is None:
            items = body["output"]
        else:
            items = [e["item"] for e in events if e.get("type") == "response.output_item.done"]
        calls = [
            ParsedCall(i["name"], _loads(i["arguments"]), i["call_id"], i.get("namespace"))
            for i in items if i["type"] == "function_call"
        ]
        text = "".join(c["text"] for i in items if i["type"] == "message" for c in i["content"])
        return ParsedAnswer(calls, text)
    if dialect == "openai-chat":
        if events is None:
            message = body["choices"][0]["message"]
            calls = [
                ParsedCall(c["function"]["name"], _loads(c["function"]["arguments"]), c["id"])
                for c in message.get("tool_calls") or []
            ]
            return ParsedAnswer(calls, message.get("content") or "", message.get("reasoning_content") or "")
        text, reasoning, pending = "", "", dict[int, list[str]]()  # index -> [id, name, arguments]
        for event in events:
            for choice in event.get("choices", []):
                delta = choice.get("delta", {})
                text += delta.get("content") or ""
                reasoning += delta.get("reasoning_content") or ""
                for call in delta.get("tool_calls") or []:
                    slot = pending.setdefault(call["index"], ["", "", ""])
                    slot[0] = call.get("id") or slot[0]
                    slot[1] += call.get("function", {}).get("name") or ""
                    slot[2] += call.get("function", {}).get("arguments") or ""
        calls = [ParsedCall(n, _loads(a), i) for i, n, a in (pending[k] for k in sorted(pending))]
        return ParsedAnswer(calls, text, reasoning)
    if dialect == "anthropic-messages":
        if events is None:
            blocks = body["content"]
        else:
            blocks = []
            for event in events:
                if event["type"] == "content_block_start":
                    blocks.append({**event["content_block"], "_json": ""})
                elif event["type"] == "content_block_delta":
                    delta, block = event["delta"], blocks[event["index"]]
                    if delta["type"] == "text_delta":
                        block["text"] += delta["text"]
                    else:
                        block["_json"] += delta["partial_json"]
            for block in blocks:
                if block["type"] == "tool_use":
                    block["input"] = _loads(block["_json"])
        calls = [ParsedCall(b["name"], b["input"], b["id"]) for b in blocks if b["type"] == "tool_use"]
        return ParsedAnswer(calls, "".join(b["text"] for b in blocks if b["type"] == "text"))
    if dialect == "gemini":
        chunks = events if events is not None else (body if isinstance(body, list) else [body])
        parts = [p for c in chunks for cand in c.get("candidates", []) for p in cand["content"]["parts"]]
        calls = [ParsedCall(p["functionCall"]["name"], p["functionCall"].get("args", {})) for p in parts
                 if "functionCall" in p]
        return ParsedAnswer(calls, "".join(p.get("text", "") for p in parts))
    raise ValueError(f"unknown dialect {dialect!r}")


CLIS = ("codex", "claude", "gemini", "qwen", "qwen-proxy", "opencode", "pi", "pi-proxy", "pi-codemode", "dsh")


def dsh_hash(name: str) -> str:
    """dsh 0.1.0-rc.8 suffixes each MCP tool name with 12 hex digits (a stand-in digest here)."""
    return hashlib.sha256(name.encode()).hexdigest()[:12]


@dataclass
class SimulatedCli:
    """One CLI's conversation with the model, as the wire shows it."""

    cli: str
    tools: list[str]  # canonical names of the MCP tools the CLI registered
    server: str = "sharedos"
    prompt: str = "Do the task."
    history: list[Any] = field(default_factory=list)
    seq: int = 0

    @property
    def dialect(self) -> str:
        return {"codex": "openai-responses", "claude": "anthropic-messages", "gemini": "gemini"}.get(
            self.cli, "openai-chat"
        )

    @property
    def path(self) -> str:
        return {
            "openai-responses": "/v1/responses",
            "anthropic-messages": "/v1/messages?beta=true",
            "gemini": "/v1beta/models/fake-model:streamGenerateContent?alt=sse",
        }.get(self.dialect, "/v1/chat/completions")

    def headers(self, key: str) -> dict[str, str]:
        if self.cli == "claude":
            return {"x-api-key": key, "anthropic-version": "2023-06-01", "accept": "application/json"}
        if self.cli == "gemini":
            return {"x-goog-api-key": key}
        return {"authorization": f"Bearer {key}", "accept": "text/event-stream"}

    # --- the tools as each CLI names them ----------------------------------------------------

    def tool_names(self) -> list[str]:
        s, names = self.server, [portable_name(t) for t in self.tools]
        return {
            "claude": [f"mcp__{s}__{n}" for n in names],
            "qwen": [f"mcp__{s}__{n}" for n in names] + ["tool_search", "tool_call"],
            "qwen-proxy": ["tool_search", "tool_call"],
            "opencode": [f"{s}_{n}" for n in names] + ["list_mcp_resources", "read_mcp_resource"],
            "pi": [f"{s}_{n}" for n in names] + ["mcp"],
            "pi-proxy": ["mcpScript", "mcp", f"mcp__{s}"],
            "pi-codemode": ["codemode"],  # Pi 1.6 built-in MCP, default exposure: nothing else is declared
            "gemini": [f"mcp_{s}_{n}" for n in names],
            "dsh": [f"mcp__{s}__{n}_{dsh_hash(n)}" for n in names],
        }.get(self.cli, names)

    def _tools(self) -> list[Any]:
        schema = {"type": "object", "properties": {}}
        if self.dialect == "openai-responses":
            return [
                {"type": "function", "name": "exec_command", "strict": False, "parameters": schema},
                {"type": "namespace", "name": f"mcp__{self.server}", "description": "Tools in the namespace.",
                 "tools": [{"type": "function", "name": n, "strict": False, "parameters": schema}
                           for n in self.tool_names()]},
                {"type": "web_search"},
            ]
        if self.dialect == "anthropic-messages":
            return [{"name": "Bash", "description": "Run a command.", "input_schema": schema}] + [
                {"name": n, "description": n, "input_schema": schema} for n in self.tool_names()
            ]
        if self.dialect == "gemini":
            declared: list[Any] = [{"name": "read_file", "parametersJsonSchema": schema}]
            return [{"functionDeclarations": declared + [
                {"name": n, "description": n, "parametersJsonSchema": schema} for n in self.tool_names()
            ]}]
        builtins = (["read", "bash"] if self.cli.startswith("pi") else
                    ["bash", "read", "write", "subagent", "web_search"] if self.cli == "dsh" else ["read_file"])
        return [{"type": "function", "function": {"name": n, "description": n, "parameters": schema}}
                for n in builtins + self.tool_names()]

    # --- requests ----------------------------------------------------------------------------

    def request(self) -> dict[str, Any]:
        if self.dialect == "openai-responses":
            return {
                "model": "fake-model", "stream": True,
                "input": [{"type": "message", "role": "developer", "content": [{"type": "input_text", "text": "dev"}]},
                          {"type": "message", "role": "user", "content": [{"type": "input_text", "text": self.prompt}]},
                          *self.history],
                "tools": self._tools(), "tool_choice": "auto", "parallel_tool_calls": True,
                "reasoning": {"summary": "auto"}, "store": False, "include": ["reasoning.encrypted_content"],
                "prompt_cache_key": "k", "client_metadata": {},
            }
        if self.dialect == "anthropic-messages":
            return {
                "model": "claude-opus-5-5", "max_tokens": 128000, "stream": True,
                "thinking": {"type": "adaptive", "display": "updates"}, "metadata": {"user_id": "u"},
                "system": [{"type": "text", "text": "You are Claude Code."}], "tools": self._tools(),
                "messages": [{"role": "user", "content": [{"type": "text", "text": self.prompt}]},
                             {"role": "system", "content": "environment: linux"}, *self.history],
            }
        if self.dialect == "gemini":
            return {
                "contents": [{"role": "user", "parts": [{"text": self.prompt}]}, *self.history],
                "tools": self._tools(), "systemInstruction": {"role": "user", "parts": [{"text": "sys"}]},
                "generationConfig": {"temperature": 0},
            }
        body: dict[str, Any] = {
            "model": "fake-model", "stream": True,
            "messages": [{"role": "system", "content": "sys"}, {"role": "user", "content": self.prompt},
                         *self.history],
            "tools": self._tools(),
        }
        if self.cli.startswith("qwen"):
            body |= {"stream_options": {"include_usage": True}, "max_tokens": 32000}
        if self.cli == "dsh":  # measured: always streamed, thinking on, DeepSeek's own fields
            body |= {"model": "deepseek-v4-flash", "stream_options": {"include_usage": True},
                     "thinking": {"type": "enabled"}, "reasoning_effort": "high", "max_tokens": 256000}
        return body

    def side_request(self) -> dict[str, Any]:
        """A request without the MCP tools (opencode's title generator, Gemini's JSON side call)."""
        if self.dialect == "gemini":
            return {"contents": [{"role": "user", "parts": [{"text": "Who speaks next?"}]}],
                    "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": {
                        "type": "object", "properties": {"reasoning": {"type": "string"},
                                                         "next_speaker": {"type": "string", "enum": ["user", "model"]}},
                        "required": ["reasoning", "next_speaker"]}}}
        body = self.request()
        body.pop("tools", None)
        if self.dialect == "openai-chat":
            body["messages"] = [{"role": "system", "content": "You are a title generator."},
                                {"role": "user", "content": self.prompt}]
        if self.cli == "dsh":  # its session-title request: thinking off, 64 tokens, no tools
            body.pop("reasoning_effort", None)
            body |= {"thinking": {"type": "disabled"}, "max_tokens": 64}
        return body

    def absorb(self, answer: ParsedAnswer, results: list[str]) -> None:
        """Append the model's answer and one tool result per call to the conversation."""
        self.seq += 1
        if self.dialect == "openai-responses":
            if answer.text:
                self.history.append({"type": "message", "role": "assistant",
                                     "content": [{"type": "output_text", "text": answer.text}]})
            for call, result in zip(answer.calls, results, strict=True):
                item = {"type": "function_call", "name": call.name, "arguments": json.dumps(call.arguments),
                        "call_id": call.call_id}
                if call.namespace:
                    item["namespace"] = call.namespace
                self.history += [item, {"type": "function_call_output", "call_id": call.call_id, "output": [
                    {"type": "input_text", "text": "Wall time: 0.0092 seconds\nOutput:"},
                    {"type": "input_text", "text": result}]}]
        elif self.dialect == "anthropic-messages":
            blocks: list[Any] = [{"type": "text", "text": answer.text}] if answer.text else []
            blocks += [{"type": "tool_use", "id": c.call_id, "name": c.name, "input": c.arguments}
                       for c in answer.calls]
            self.history.append({"role": "assistant", "content": blocks})
            if answer.calls:
                self.history.append({"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": c.call_id, "content": [{"type": "text", "text": r}]}
                    for c, r in zip(answer.calls, results, strict=True)]})
        elif self.dialect == "gemini":
            parts: list[Any] = [{"text": answer.text}] if answer.text else []
            parts += [{"functionCall": {"name": c.name, "args": c.arguments}} for c in answer.calls]
            self.history.append({"role": "model", "parts": parts})
            if answer.calls:
                self.history.append({"role": "user", "parts": [
                    {"functionResponse": {"id": f"{c.name}-{self.seq}", "name": c.name,
                                          "response": {"output": f"<untrusted_context>\n{r}\n</untrusted_context>"}}}
                    for c, r in zip(answer.calls, results, strict=True)]})
        else:
            message: dict[str, Any] = {"role": "assistant", "content": answer.text or None}
            if answer.reasoning and self.cli == "dsh":  # dsh sends its reasoning block back
                message["reasoning_content"] = answer.reasoning
            if answer.calls:
                message["tool_calls"] = [
                    {"id": c.call_id, "type": "function",
                     "function": {"name": c.name, "arguments": json.dumps(c.arguments)}} for c in answer.calls]
            self.history.append(message)
            self.history += [{"role": "tool", "tool_call_id": c.call_id, "content": r}
                             for c, r in zip(answer.calls, results, strict=True)]

    def mcp_call(self, call: ParsedCall) -> tuple[str, dict[str, Any]]:
        """The MCP tool (portable name) and arguments a model call reaches, as the CLI routes it."""
        s = self.server
        if self.cli == "pi-proxy" or (self.cli == "pi" and call.name == "mcp"):
            return call.arguments["tool"].removeprefix(f"{s}_"), call.arguments["args"]
        if self.cli == "pi-codemode":  # the script's one `tools.mcp__<s>__<tool>({...})` call
            script = re.fullmatch(r"return await tools\.mcp__(\w+?)__(\w+)\((.*)\);", call.arguments["code"], re.S)
            assert script is not None and script[1] == s, call.arguments
            return script[2], json.loads(script[3])
        if call.name == "tool_call":
            return call.arguments["name"].removeprefix(f"mcp__{s}__"), call.arguments["arguments"]
        if call.namespace:
            return call.name, call.arguments
        for prefix in (f"mcp__{s}__", f"mcp_{s}_", f"{s}_"):
            if call.name.startswith(prefix):
                name = call.name.removeprefix(prefix)
                return (re.sub(r"_[0-9a-f]{12}$", "", name) if self.cli == "dsh" else name), call.arguments
        return call.name, call.arguments
