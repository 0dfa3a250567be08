"""``claude -p --output-format stream-json --verbose`` stdout frames → steps.

Evidence: ``README.md`` (Claude Code 2.1.328 and 2.1.332, measured against a scripted model and a
stdio MCP server) and ``reference/sharedos-reference.md`` §5.2 (upstream ``claude-code/protocol.ts@75eaa9bb``).

Frames and rules:

- ``{"type": "system", "subtype": "init", "mcp_servers": [{"name": "sharedos", "status":
  "connected", "source": "dynamic"}], ...}``: one :class:`McpStartup` per server, connected only
  when ``status == "connected"``. Measured: when the MCP server could not start (EACCES), Claude
  reported ``"status": "failed"`` and **silently carried on** without tools, exiting 0 -- so the
  profile sets ``mcp_startup_required: true`` and the runtime turns a non-connected server into an
  infrastructure error instead of grading a toolless run. (Upstream reads no ``system`` frame.)
- ``{"type": "assistant", "message": {"content": [...]}}``: each ``text`` block is a message;
  ``tool_use`` blocks are tool calls, never acted on (calls travel over MCP, §8 item 9); other blocks
  are ignored. The ``assistant`` lines carry ``stop_reason: null`` -- the real stop reason is only in
  the result -- so nothing here is read for the outcome.
- ``{"type": "result", ...}`` (always the last line of a finished turn) decides the outcome, with the
  **measured correction** to upstream: upstream fails when ``is_error`` is true or ``subtype ==
  "error"`` and uses ``subtype`` as the code; but Claude 2.1.328 reports an API error (dead endpoint,
  ``CLAUDE_CODE_MAX_RETRIES=1``) as ``subtype: "success", is_error: true, terminal_reason:
  "api_error", result: "API Error: Connection refused ..."`` (rc 1), which upstream would code
  ``success``. So: a result with ``is_error: true`` (or ``subtype: "error"``) fails with code =
  ``subtype`` when it is present and not ``"success"`` (``error_during_execution``,
  ``error_max_turns``, ...), else ``terminal_reason`` (``api_error``), else ``harness_failed``;
  message ``result`` or a fixed text; retryable. Otherwise it completes, with ``{"text": result}``
  when ``result`` is a string.
- ``user`` (tool results, ``is_error`` for MCP refusals), ``system/permission_denied``,
  ``system/api_retry`` and every other frame yield nothing.

Ending without a result: SIGTERM exits 143 in ~0.2 s with no ``result`` line (lines already printed
are intact), so the exit status decides (``harness_exited_without_outcome``). SIGINT instead prints a
``result`` with ``subtype: "error_during_execution", is_error: true, terminal_reason:
"aborted_streaming"`` and exits **0**: that result is read as a failure ``error_during_execution``,
never as a completion.

Qwen Code's ``-o stream-json`` uses the same envelope (:mod:`runner.harnesses.qwen.interpreter` calls
:func:`stream_json_steps` with its own failure text); dsh's session log carries the same assistant content
blocks (:mod:`runner.harnesses.deepseek.interpreter` reuses :func:`assistant_steps`).
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue, ProtocolError
from runner.core.vocabulary import Code
from runner.harnesses.codex.interpreter import cli_code
from runner.harnesses.stream import Completed, Failed, McpStartup, Message, Step

FAILURE_TEXT = "The Claude Code harness reported a failure."


def startup_steps(frame: dict[str, JsonValue]) -> list[Step]:
    """``system``/``init`` → one :class:`McpStartup` per entry of ``mcp_servers``."""
    servers = frame.get("mcp_servers")
    if not isinstance(servers, list):
        return []
    steps: list[Step] = []
    for server in servers:
        if not isinstance(server, dict) or not isinstance(name := server.get("name"), str):
            continue
        status = server.get("status")
        detail = server.get("error") or status or "no status reported"
        steps.append(McpStartup(name, status == "connected", str(detail)))
    return steps


def assistant_steps(frame: dict[str, JsonValue]) -> list[Step]:
    """``assistant`` → one message per ``text`` block; tool_use blocks are never calls here."""
    message = frame.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if not isinstance(content, list):
        return []
    return [
        Message(text)
        for block in content
        if isinstance(block, dict) and block.get("type") == "text" and isinstance(text := block.get("text"), str)
    ]


def result_steps(frame: dict[str, JsonValue], failure_text: str = FAILURE_TEXT) -> list[Step]:
    """``result`` → ``failed`` (is_error, with the measured code rule) or ``complete``."""
    subtype, result = frame.get("subtype"), frame.get("result")
    if frame.get("is_error") is True or subtype == "error":
        if isinstance(subtype, str) and subtype and subtype != "success":
            code = cli_code(subtype, Code.HARNESS_FAILED)
        else:
            code = cli_code(frame.get("terminal_reason"), Code.HARNESS_FAILED)
        text = result if isinstance(result, str) and result else failure_text
        return [Failed(ProtocolError.of(code, text, retryable=True))]
    return [Completed({"text": result} if isinstance(result, str) else None)]


def stream_json_steps(frame: dict[str, JsonValue], failure_text: str = FAILURE_TEXT) -> list[Step]:
    """One ``stream-json`` frame → steps; shared by the CLIs whose stream is Claude Code's (Qwen Code's is)."""
    kind = frame.get("type")
    if kind == "system" and frame.get("subtype") == "init":
        return startup_steps(frame)
    if kind == "assistant":
        return assistant_steps(frame)
    if kind == "result":
        return result_steps(frame, failure_text)
    return []


def interpret(frame: dict[str, JsonValue]) -> list[Step]:
    return stream_json_steps(frame)
