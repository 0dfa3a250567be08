"""The escalation latch (upstream §3.4, §2.4 and ADR 0018), exactly.

It wraps the one invoker every MCP call passes through. The first catalogued call to
``sharedos.escalate`` is answered ``succeeded`` with the reason and an instruction to stop; it
never reaches the envelope, so it leaves no operation. From then on every call is refused in band
(``denied``/``escalation_pending``) and counted in ``callsAfterEscalation``. Nothing is closed and
nothing is killed: the CLI winds down by itself, and :meth:`EscalationLatch.settle` turns whatever
it ended with into ``escalate``, keeping its own outcome in ``harnessOutcome``.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from runner.core.outcomes import (
    Escalate,
    Fail,
    JsonValue,
    ProtocolError,
    RuntimeOutcome,
    ToolCall,
    ToolResult,
    with_metadata,
)
from runner.core.vocabulary import (
    ESCALATE_TOOL,
    ESCALATION_FALLBACK_REASON,
    ESCALATION_NOTE,
    ESCALATION_PENDING_MESSAGE,
    ESCALATION_REASON_LIMIT,
    Code,
    ResultStatus,
)

# ECMAScript String.prototype.trim: WhiteSpace (incl. every Zs) and LineTerminator.
_JS_SPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


class TurnHost(Protocol):
    """What the latch wraps: the envelope's host surface."""

    async def invoke_tool(self, call: ToolCall) -> ToolResult: ...

    def annotate(self, key: str, value: JsonValue) -> None: ...


def cut_utf16(text: str, limit: int = ESCALATION_REASON_LIMIT) -> str:
    """Cut to ``limit`` UTF-16 code units, dropping a character whose surrogate pair would be split."""
    units = 0
    for index, ch in enumerate(text):
        units += 2 if ord(ch) > 0xFFFF else 1
        if units > limit:
            return text[:index]
    return text


def escalation_request(tool: str, arguments: JsonValue) -> str | None:
    """``escalationRequest``: the reason of an ask, or ``None`` when the call is not an ask.

    Only the exact canonical name counts (the MCP server has already mapped portable names back).
    A missing, non-string or blank reason still asks, with the fixed fallback text.
    """
    if tool != ESCALATE_TOOL:
        return None
    reason = arguments.get("reason") if isinstance(arguments, dict) else None
    if isinstance(reason, str) and reason.strip(_JS_SPACE):
        return cut_utf16(reason.strip(_JS_SPACE))
    return ESCALATION_FALLBACK_REASON


class EscalationLatch:
    """The one-method invoker the MCP bridge calls through."""

    def __init__(self, host: TurnHost, catalogue: Iterable[str]) -> None:
        self._host = host
        # checked once, at construction: the affordance is honoured only when the catalogue holds it
        self.offered = ESCALATE_TOOL in set(catalogue)
        self.reason: str | None = None
        self.ask_call_id: str | None = None  # the call that closed the latch (the turn's timeline marks it)
        self.calls_after_escalation = 0

    @property
    def asked(self) -> bool:
        return self.reason is not None

    async def invoke_tool(self, call: ToolCall) -> ToolResult:
        if self.reason is not None:
            self.calls_after_escalation += 1
            error = ProtocolError.of(Code.ESCALATION_PENDING, ESCALATION_PENDING_MESSAGE, retryable=False)
            return ToolResult.refused(call, ResultStatus.DENIED, error)
        reason = escalation_request(call.tool, call.arguments) if self.offered else None
        if reason is None:
            # not an ask, or an ungranted one: the envelope decides (and refuses tool_unavailable)
            return await self._host.invoke_tool(call)
        # latch synchronously, before any await: no other call can pass in between
        self.reason, self.ask_call_id = reason, call.call_id
        self._host.annotate("escalationAsked", {"tool": ESCALATE_TOOL, "reason": reason})
        return ToolResult.ok(call, {"escalated": True, "reason": reason, "note": ESCALATION_NOTE})

    def settle(self, outcome: RuntimeOutcome, harness_metadata: dict[str, JsonValue]) -> RuntimeOutcome:
        """The harness's outcome if nobody asked; otherwise ``escalate`` with the harness's own ending kept."""
        metadata = {**outcome.metadata, **harness_metadata}
        if self.reason is None:
            return with_metadata(outcome, metadata)
        metadata["harnessOutcome"] = outcome.type.value
        if isinstance(outcome, Fail):
            metadata["harnessErrorCode"] = outcome.error.code
        metadata["callsAfterEscalation"] = self.calls_after_escalation
        return Escalate(self.reason, metadata)
