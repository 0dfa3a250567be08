#!/usr/bin/env python3
"""The model column's agent: runner's own minimal loop with the model in the seat and nothing around it.

Runs inside the model image as::

    /usr/local/bin/runner-entry /opt/venv/bin/python /opt/model/agent.py --dialect openai-chat \
        --model runner-scripted --base-url http://127.0.0.1:8787 --api-key PLACEHOLDER \
        --server-command socat --server-arg STDIO --server-arg UNIX-CONNECT:/run/runner/mcp.sock  < prompt

Standalone on purpose, like ``runner/harnesses/reference/client.py``: the standard library, the ``mcp``
SDK (2.x) and ``httpx2`` (the HTTP client the SDK itself uses) only, never the ``runner`` package. It is
the decision record's "Standard" column (ADR 0018; upstream's ``model-scripted``/``model-live``, graded
under ``modelLimits``):

1. connect to the MCP server through the relay (the reference client's ``connect``), take the
   server's ``instructions`` as the system prompt and its ``tools/list`` as the model's tools,
   each as ``<server>__<name>`` with dots as underscores (:func:`exposed_name`);
2. ask the model (one non-streaming request per step, in the chosen dialect, to runner-entry's
   loopback listener), execute every tool call it makes over MCP *by the name it gave*, mapped back
   to the MCP name when it is one the agent exposed and sent as it is otherwise (a model may invent
   a name: nothing here filters it, and SharedOS refuses it ``tool_unavailable``), feed each result
   back, and ask again;
3. stop when the model ends its turn (an answer with no tool call), when the MCP session goes away,
   or after :data:`MAX_STEPS` model requests. The agent never reads the latch's answers itself: the
   escalate result tells the *model* to stop, and what the model does next is the grade.

Frames on stdout are runner's ``jsonl`` vocabulary (docs/profiles.md): ``session.started``,
``tool.call``, ``tool.result``, ``message``, ``turn.completed``, ``turn.failed`` (codes
``mcp_unavailable``, ``model_error`` for a model API that failed or answered nothing usable,
``max_steps``, ``model_agent_error``). Diagnostics go to stderr.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

import anyio
import httpx2 as httpx
import mcp_types as types
from mcp import ClientSession, MCPError, StdioServerParameters, stdio_client

HARNESS = "model"
CLIENT_NAME = "runner-model-agent"
CLIENT_VERSION = "1.0"
DIALECTS = ("anthropic-messages", "openai-chat", "openai-responses", "gemini")
ALIASES = {"anthropic": "anthropic-messages"}
MAX_STEPS = 24  # model requests per turn, as Claude Code's --max-turns in its profile
MAX_TOKENS = 4096
CONNECT_TIMEOUT = 15.0
MODEL_TIMEOUT = httpx.Timeout(600.0, connect=10.0)  # the turn's deadline is the real bound

log = logging.getLogger("model-agent")


class ModelError(Exception):
    """The model API failed, or answered something that is not a model turn."""


# --------------------------------------------------------------------------- pure parts


def exposed_name(name: str, server: str) -> str:
    """The name the model sees for an MCP tool: ``<server>__<name, dots to underscores>`` (every dialect's
    function-name alphabet; the scripted model knows it as the ``model`` scheme, runner/model/names.py)."""
    return f"{server}__{name.replace('.', '_')}"


@dataclass(frozen=True)
class Tool:
    name: str  # the MCP name
    description: str
    schema: dict[str, Any]
    exposed: str  # the name the model sees


@dataclass(frozen=True)
class Call:
    id: str
    name: str  # as the model gave it
    arguments: dict[str, Any]


@dataclass
class Answer:
    """One model answer: its text, its tool calls, and what goes back into the conversation."""

    text: str
    calls: list[Call]
    echo: list[Any] = field(default_factory=list)


def mcp_name(called: str, tools: Sequence[Tool]) -> str:
    """The MCP name for a name the model called: the tool it was exposed as, else the name as given."""
    return next((t.name for t in tools if called in (t.exposed, t.name)), called)


def _args(raw: Any) -> dict[str, Any]:
    if isinstance(raw, dict):
        return raw
    if isinstance(raw, str):
        try:
            parsed = json.loads(raw or "{}")
        except ValueError:
            raise ModelError(f"tool call arguments are not JSON: {raw[:200]!r}") from None
        if isinstance(parsed, dict):
            return parsed
    raise ModelError(f"tool call arguments are not an object: {str(raw)[:200]!r}")


class Dialect:
    """One model API: the request path and body for the conversation so far, and how to read an answer."""

    name = ""

    def __init__(self, model: str, system: str, prompt: str, tools: Sequence[Tool]) -> None:
        self.model, self.system, self.tools = model, system, list(tools)
        self.conversation: list[Any] = self.start(prompt)

    def start(self, prompt: str) -> list[Any]:
        return [{"role": "user", "content": prompt}]

    def path(self) -> str:
        raise NotImplementedError

    def headers(self, api_key: str) -> dict[str, str]:
        return {"authorization": f"Bearer {api_key}"}

    def body(self) -> dict[str, Any]:
        raise NotImplementedError

    def read(self, body: Any) -> Answer:
        raise NotImplementedError

    def add_answer(self, answer: Answer) -> None:
        self.conversation.extend(answer.echo)

    def add_results(self, results: list[tuple[Call, str, bool]]) -> None:
        raise NotImplementedError


class AnthropicMessages(Dialect):
    name = "anthropic-messages"

    def path(self) -> str:
        return "/v1/messages"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"x-api-key": api_key, "anthropic-version": "2023-06-01"}

    def body(self) -> dict[str, Any]:
        tools = [{"name": t.exposed, "description": t.description, "input_schema": t.schema} for t in self.tools]
        return {"model": self.model, "max_tokens": MAX_TOKENS, "system": self.system, "tools": tools,
                "messages": self.conversation}

    def read(self, body: Any) -> Answer:
        content = body.get("content") if isinstance(body, dict) else None
        if not isinstance(content, list):
            raise ModelError(f"not an Anthropic message: {json.dumps(body)[:300]}")
        text = "".join(b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text")
        calls = [Call(str(b.get("id")), str(b.get("name")), _args(b.get("input")))
                 for b in content if isinstance(b, dict) and b.get("type") == "tool_use"]
        return Answer(text, calls, [{"role": "assistant", "content": content}])

    def add_results(self, results: list[tuple[Call, str, bool]]) -> None:
        blocks = [{"type": "tool_result", "tool_use_id": c.id, "content": text, "is_error": error}
                  for c, text, error in results]
        self.conversation.append({"role": "user", "content": blocks})


class OpenAIChat(Dialect):
    name = "openai-chat"

    def start(self, prompt: str) -> list[Any]:
        return [{"role": "system", "content": self.system}, {"role": "user", "content": prompt}]

    def path(self) -> str:
        return "/v1/chat/completions"

    def body(self) -> dict[str, Any]:
        tools = [{"type": "function", "function": {"name": t.exposed, "description": t.description,
                                                   "parameters": t.schema}} for t in self.tools]
        return {"model": self.model, "messages": self.conversation, "tools": tools}

    def read(self, body: Any) -> Answer:
        choices = body.get("choices") if isinstance(body, dict) else None
        message = choices[0].get("message") if isinstance(choices, list) and choices else None
        if not isinstance(message, dict):
            raise ModelError(f"not a chat completion: {json.dumps(body)[:300]}")
        calls = [Call(str(c.get("id")), str(c.get("function", {}).get("name")), _args(c.get("function", {})
                      .get("arguments"))) for c in message.get("tool_calls") or [] if isinstance(c, dict)]
        echo = {k: v for k, v in message.items() if k in ("role", "content", "tool_calls")}
        return Answer(message.get("content") or "", calls, [echo])

    def add_results(self, results: list[tuple[Call, str, bool]]) -> None:
        self.conversation += [{"role": "tool", "tool_call_id": c.id, "content": text} for c, text, _ in results]


class OpenAIResponses(Dialect):
    name = "openai-responses"

    def path(self) -> str:
        return "/v1/responses"

    def body(self) -> dict[str, Any]:
        tools = [{"type": "function", "name": t.exposed, "description": t.description, "parameters": t.schema}
                 for t in self.tools]
        return {"model": self.model, "instructions": self.system, "input": self.conversation, "tools": tools,
                "store": False}

    def read(self, body: Any) -> Answer:
        output = body.get("output") if isinstance(body, dict) else None
        if not isinstance(output, list):
            raise ModelError(f"not a response: {json.dumps(body)[:300]}")
        items = [i for i in output if isinstance(i, dict)]
        text = "".join(part.get("text", "") for i in items if i.get("type") == "message"
                       for part in i.get("content") or [] if isinstance(part, dict))
        calls = [Call(str(i.get("call_id")), str(i.get("name")), _args(i.get("arguments")))
                 for i in items if i.get("type") == "function_call"]
        return Answer(text, calls, items)

    def add_results(self, results: list[tuple[Call, str, bool]]) -> None:
        self.conversation += [{"type": "function_call_output", "call_id": c.id, "output": text}
                              for c, text, _ in results]


class Gemini(Dialect):
    name = "gemini"

    def start(self, prompt: str) -> list[Any]:
        return [{"role": "user", "parts": [{"text": prompt}]}]

    def path(self) -> str:
        return f"/v1beta/models/{self.model}:generateContent"

    def headers(self, api_key: str) -> dict[str, str]:
        return {"x-goog-api-key": api_key}

    def body(self) -> dict[str, Any]:
        # parametersJsonSchema takes the MCP input schema as it is (parameters takes an OpenAPI subset)
        declarations = [{"name": t.exposed, "description": t.description, "parametersJsonSchema": t.schema}
                        for t in self.tools]
        return {"contents": self.conversation, "systemInstruction": {"parts": [{"text": self.system}]},
                "tools": [{"functionDeclarations": declarations}]}

    def read(self, body: Any) -> Answer:
        candidates = body.get("candidates") if isinstance(body, dict) else None
        content = candidates[0].get("content") if isinstance(candidates, list) and candidates else None
        if not isinstance(content, dict):
            raise ModelError(f"not a Gemini answer: {json.dumps(body)[:300]}")
        parts = [p for p in content.get("parts") or [] if isinstance(p, dict)]
        text = "".join(str(p["text"]) for p in parts if "text" in p)
        calls = [Call(f"gemini_{n}", str(p["functionCall"].get("name")), _args(p["functionCall"].get("args", {})))
                 for n, p in enumerate(parts) if isinstance(p.get("functionCall"), dict)]
        return Answer(text, calls, [{"role": "model", "parts": parts}])

    def add_results(self, results: list[tuple[Call, str, bool]]) -> None:
        parts = [{"functionResponse": {"name": c.name, "response": {"error" if error else "output": text}}}
                 for c, text, error in results]
        self.conversation.append({"role": "user", "parts": parts})


BY_NAME: dict[str, type[Dialect]] = {d.name: d for d in (AnthropicMessages, OpenAIChat, OpenAIResponses, Gemini)}


def dialect_named(name: str) -> type[Dialect]:
    return BY_NAME[ALIASES.get(name, name)]


def result_text(result: types.CallToolResult) -> str:
    return "\n".join(c.text for c in result.content if isinstance(c, types.TextContent))


# --------------------------------------------------------------------------- frames


def emit(frame: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(frame, separators=(",", ":"), ensure_ascii=True) + "\n")
    sys.stdout.flush()


def turn_failed(code: str, message: str) -> dict[str, Any]:
    return {"type": "turn.failed", "error": {"code": code, "message": message}}


def version_line() -> str:
    try:
        mcp_version = metadata.version("mcp")
    except metadata.PackageNotFoundError:
        mcp_version = "unknown"
    return f"{CLIENT_NAME} {CLIENT_VERSION} (mcp {mcp_version}, httpx2 {httpx.__version__})"


# --------------------------------------------------------------------------- the loop


@dataclass(frozen=True)
class Settings:
    dialect: str
    model: str
    base_url: str
    api_key: str
    server: str
    relay: StdioServerParameters
    prompt: str


async def ask(client: httpx.AsyncClient, settings: Settings, dialect: Dialect) -> Answer:
    try:
        response = await client.post(settings.base_url.rstrip("/") + dialect.path(), json=dialect.body(),
                                     headers=dialect.headers(settings.api_key))
    except httpx.HTTPError as exc:
        raise ModelError(f"the model request failed: {type(exc).__name__}: {exc}") from None
    if response.status_code != 200:
        raise ModelError(f"the model API answered HTTP {response.status_code}: {response.text[:300]}")
    try:
        body = response.json()
    except ValueError:
        raise ModelError(f"the model API answered no JSON: {response.text[:300]!r}") from None
    return dialect.read(body)


async def call_tool(session: ClientSession, seq: int, name: str, arguments: dict[str, Any]) -> tuple[str, bool]:
    emit({"type": "tool.call", "seq": seq, "name": name, "arguments": arguments})
    try:
        result = await session.call_tool(name, arguments)
    except MCPError as exc:
        emit({"type": "tool.result", "seq": seq, "name": name, "is_error": True,
              "error": {"code": exc.code, "message": exc.message}})
        return f"MCP error {exc.code}: {exc.message}", True
    text = result_text(result)
    emit({"type": "tool.result", "seq": seq, "name": name, "is_error": bool(result.is_error), "text": text})
    return text, bool(result.is_error)


async def converse(session: ClientSession, settings: Settings, system: str, tools: list[Tool]) -> dict[str, Any]:
    """The loop; returns the terminal frame."""
    dialect = dialect_named(settings.dialect)(settings.model, system, settings.prompt, tools)
    seq = 0
    async with httpx.AsyncClient(timeout=MODEL_TIMEOUT, trust_env=False) as client:
        for _ in range(MAX_STEPS):
            answer = await ask(client, settings, dialect)
            dialect.add_answer(answer)
            if not answer.calls:
                return {"type": "turn.completed", "text": answer.text}
            if answer.text:
                emit({"type": "message", "text": answer.text})
            results = []
            for call in answer.calls:
                seq += 1
                text, error = await call_tool(session, seq, mcp_name(call.name, tools), call.arguments)
                results.append((call, text, error))
            dialect.add_results(results)
    return turn_failed("max_steps", f"the model was still calling tools after {MAX_STEPS} requests")


async def run(settings: Settings) -> int:
    info = types.Implementation(name=CLIENT_NAME, version=CLIENT_VERSION)
    started = {"type": "session.started", "harness": HARNESS, "version": version_line(), "dialect": settings.dialect}
    try:
        async with stdio_client(settings.relay) as (read, write), ClientSession(read, write, client_info=info) as s:
            try:
                with anyio.fail_after(CONNECT_TIMEOUT):
                    init = await s.initialize()
                    listing = await s.list_tools()
            except Exception as exc:
                emit({**started, "mcp_servers": [{"name": settings.server, "status": "failed", "error": str(exc)}]})
                emit(turn_failed("mcp_unavailable", f"MCP server {settings.server!r} is unavailable: {exc!r}"))
                return 1
            tools = [Tool(t.name, t.description or "", dict(t.input_schema or {"type": "object"}),
                          exposed_name(t.name, settings.server)) for t in listing.tools]
            emit({**started, "mcp_servers": [{"name": settings.server, "status": "connected", "tools": len(tools),
                                              "protocol_version": init.protocol_version}]})
            try:
                terminal = await converse(s, settings, init.instructions or "", tools)
            except ModelError as exc:
                terminal = turn_failed("model_error", str(exc))
    except Exception as exc:
        log.error("model agent failed:\n%s", "".join(traceback.format_exception(exc)))
        emit(turn_failed("model_agent_error", f"{type(exc).__name__}: {exc}"))
        return 1
    emit(terminal)
    return 0 if terminal["type"] == "turn.completed" else 1


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="agent.py", description="runner's model column: a minimal agent loop.")
    parser.add_argument("--version", action="store_true")
    parser.add_argument("--dialect", choices=[*DIALECTS, *ALIASES], default="openai-chat")
    parser.add_argument("--model", default="runner-scripted")
    parser.add_argument("--base-url", default="http://127.0.0.1:8787")
    parser.add_argument("--api-key", default="")
    parser.add_argument("--server", default="sharedos")
    parser.add_argument("--server-command", default="socat")
    parser.add_argument("--server-arg", action="append", dest="server_args", metavar="ARG")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    if args.version:
        print(version_line(), flush=True)
        return 0
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING, format="%(name)s: %(levelname)s: %(message)s")
    relay_args = args.server_args if args.server_args is not None else ["STDIO", "UNIX-CONNECT:/run/runner/mcp.sock"]
    settings = Settings(
        dialect=ALIASES.get(args.dialect, args.dialect), model=args.model, base_url=args.base_url,
        api_key=args.api_key, server=args.server,
        relay=StdioServerParameters(command=args.server_command, args=relay_args), prompt=sys.stdin.read(),
    )
    return anyio.run(run, settings)


if __name__ == "__main__":
    sys.exit(main())
