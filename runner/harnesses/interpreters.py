"""Stream interpreters by name: a profile picks one with ``interpreter: <name>``.

- ``jsonl``: runner's own frame vocabulary, spoken by the reference harness and usable by any CLI
  wrapper nobody has written an interpreter for (documented in the README):
  ``session.started`` (with ``mcp_servers[].status``), ``message``, ``turn.completed``,
  ``turn.failed``; ``tool.call``/``tool.result`` frames are read for the transcript only, because on
  the MCP path calls travel over MCP, never over stdout (§8 item 9).
- ``exit-code``: reads no frames; the exit code alone decides (0 completes with no prose).

Vendor CLIs add their interpreter next to their profile's package and register it here.
"""

from __future__ import annotations

from runner.core.outcomes import Json, ProtocolError
from runner.core.vocabulary import Code
from runner.harnesses import (
    claude_code,
    cline,
    codex,
    copilot,
    deepseek,
    droid,
    gemini,
    kilo,
    kimi,
    opencode,
    pi,
    qwen,
    vibe,
)
from runner.harnesses.stream import Completed, Failed, Interpreter, McpStartup, Message, SessionReader, Step


class UnknownInterpreter(LookupError):
    def __init__(self, name: str) -> None:
        super().__init__(f"no such stream interpreter: {name!r} (known: {', '.join(sorted(INTERPRETERS))})")


def jsonl(frame: dict[str, Json]) -> list[Step]:
    kind = frame.get("type")
    if kind == "session.started":
        servers = frame.get("mcp_servers")
        return (
            [
                McpStartup(str(s.get("name")), s.get("status") == "connected", str(s.get("error") or s.get("status")))
                for s in servers
                if isinstance(s, dict)
            ]
            if isinstance(servers, list)
            else []
        )
    if kind == "message" and isinstance(frame.get("text"), str):
        return [Message(frame["text"])]
    if kind == "turn.completed":
        text = frame.get("text")
        return [Completed({"text": text} if isinstance(text, str) else None)]
    if kind == "turn.failed":
        error = frame.get("error") if isinstance(frame.get("error"), dict) else {}
        assert isinstance(error, dict)
        code = str(error.get("code") or Code.HARNESS_FAILED)
        text = str(error.get("message") or "The harness reported a failure.")
        return [Failed(ProtocolError.of(code, text, retryable=True))]
    return []


def exit_code_only(frame: dict[str, Json]) -> list[Step]:
    return []


INTERPRETERS: dict[str, Interpreter] = {
    "jsonl": jsonl,
    "exit-code": exit_code_only,
    "codex": codex.interpret,
    "claude-code": claude_code.interpret,
    "pi": pi.interpret,
    "gemini": gemini.interpret,
    "qwen": qwen.interpret,
    "opencode": opencode.interpret,
    "deepseek": deepseek.interpret,
    "copilot": copilot.interpret,
    "cline": cline.interpret,
    "droid": droid.interpret,
    "kilo": kilo.interpret,
    "kimi": kimi.interpret,
    "vibe": vibe.interpret,
}


# interpreters whose CLI keeps its turn's events in a session log read after it exits (stream.SessionReader)
SESSION_READERS: dict[str, SessionReader] = {
    "deepseek": deepseek.read_session,
}


def get_session_reader(name: str) -> SessionReader | None:
    return SESSION_READERS.get(name)


def get_interpreter(name: str) -> Interpreter:
    try:
        return INTERPRETERS[name]
    except KeyError:
        raise UnknownInterpreter(name) from None
