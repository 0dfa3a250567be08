"""The envelope: the turn authority every call is mediated by, and the settlement of the turn.

Mirrors upstream ``SharedOSExecutor`` (§2.3, §8 item 18). One :class:`Envelope` is one turn: it
resolves the catalogue once, mediates each call in the upstream order (host open, draining, step
budget, tool-call budget, catalogue check, kernel authorization), records operations and events,
takes annotations, and turns the runtime's outcome into an :class:`ExecutionResult` — re-checking
the catalogue gate on an ``escalate`` outcome.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from runner.core.catalogue import Catalogue, resolve_catalogue
from runner.core.grants import Requirement
from runner.core.outcomes import (
    Complete,
    Escalate,
    Escalation,
    ExecutionResult,
    JsonValue,
    ProtocolError,
    RuntimeOutcome,
    ToolCall,
    ToolResult,
)
from runner.core.protocol import RELEASED_EPOCH
from runner.core.tools import (
    ArgumentError,
    EscalationNotTerminated,
    HandlerError,
    ResultFor,
    ToolContext,
)
from runner.core.vocabulary import (
    ESCALATE_OUTCOME_NOT_OFFERED,
    Code,
    ExecutionStatus,
    RefusalCause,
    ResultStatus,
    Source,
    message,
)
from runner.core.world import World

RESERVED_ANNOTATIONS = frozenset({"", "runtime", "__proto__"})


class HostClosed(RuntimeError):
    """A call arrived after the turn closed ("Runtime host is closed")."""


@dataclass(frozen=True)
class StepLimits:
    max_steps: int = 16
    max_tool_calls: int | None = None  # defaults to max_steps, as upstream

    @property
    def tool_calls(self) -> int:
        return self.max_tool_calls if self.max_tool_calls is not None else self.max_steps


@dataclass(frozen=True)
class RuntimeInfo:
    id: str
    version: str
    protocol_version: str = RELEASED_EPOCH.value  # the SharedOS protocol epoch (runner.core.protocol)

    def to_json(self) -> dict[str, JsonValue]:
        return {"id": self.id, "version": self.version, "protocolVersion": self.protocol_version}


class Envelope:
    """One turn's authority. ``invoke_tool`` is the host method the latch wraps."""

    def __init__(
        self,
        world: World,
        execution_id: str,
        runtime: RuntimeInfo,
        limits: StepLimits | None = None,
        clock: Callable[[], str] | None = None,
    ) -> None:
        self.world = world
        self.execution_id = execution_id
        self.runtime = runtime
        self.limits = limits or StepLimits(
            max_steps=world.condition.max_steps or 16, max_tool_calls=world.condition.max_tool_calls
        )
        self.clock: Callable[[], str] = clock or (lambda: world.now)
        self.catalogue: Catalogue = resolve_catalogue(world, execution_id)
        self.events: list[dict[str, JsonValue]] = []
        self.operations: list[dict[str, JsonValue]] = []
        self.annotations: dict[str, JsonValue] = {}
        self.draining = False
        self.closed = False
        self._tool_calls = 0
        self._steps: set[int] = set()
        self._emit(
            "turn.started",
            {"agent": list(world.agent), "visibleTools": [*sorted(self.catalogue.names)], "runtime": runtime.to_json()},
        )

    # --- the host surface ------------------------------------------------------------------

    def annotate(self, key: str, value: JsonValue) -> None:
        """State something for the record (ADR 0027). A write after the turn closed is dropped."""
        if key in RESERVED_ANNOTATIONS:
            raise TypeError(f"annotation key {key!r} is reserved")
        if not self.closed:
            self.annotations[key] = value

    async def invoke_tool(self, call: ToolCall, step: int | None = None) -> ToolResult:
        return self.mediate(call, step)

    def mediate(self, call: ToolCall, step: int | None = None) -> ToolResult:
        """The upstream mediation order; every refusal is a result, never an exception."""
        if self.closed:
            raise HostClosed("Runtime host is closed")
        if step is not None and (not isinstance(step, int) or step < 0):
            raise TypeError("a step is a non-negative integer")
        self._emit("tool.requested", _compact({"callId": call.call_id, "tool": call.tool, "step": step}))
        refusal = self._budget_refusal(step)
        if refusal is None and call.tool not in self.catalogue.names:
            refusal = (Code.TOOL_UNAVAILABLE, message(Code.TOOL_UNAVAILABLE, tool=call.tool))
        if refusal is not None:
            code, text = refusal
            cause = RefusalCause.NOT_OFFERED if code is Code.TOOL_UNAVAILABLE else None
            result = ToolResult.refused(call, ResultStatus.DENIED, ProtocolError.of(code, text))
            self._record(call, result, Source.ENVELOPE, cause=cause)
        else:
            result = self._kernel_invoke(call)
        self._emit(
            "tool.completed",
            _compact(
                {
                    "callId": call.call_id,
                    "status": result.status.value,
                    "tool": call.tool,
                    "step": step,
                    "code": result.error.code if result.error else None,
                }
            ),
        )
        return result

    def _budget_refusal(self, step: int | None) -> tuple[Code, str] | None:
        if self.draining:
            return Code.TURN_DRAINING, message(Code.TURN_DRAINING)
        if step is not None:
            ok = step < self.limits.max_steps and (step in self._steps or len(self._steps) < self.limits.max_steps)
            if not ok:
                return Code.STEP_LIMIT_EXCEEDED, message(Code.STEP_LIMIT_EXCEEDED, limit=self.limits.max_steps)
            self._steps.add(step)
        if self._tool_calls >= self.limits.tool_calls:
            return Code.TOOL_CALL_LIMIT_EXCEEDED, message(Code.TOOL_CALL_LIMIT_EXCEEDED, limit=self.limits.tool_calls)
        self._tool_calls += 1
        return None

    # --- the kernel: discovery, arguments, requirement, authorization, handler --------------

    def _kernel_invoke(self, call: ToolCall) -> ToolResult:
        tool = self.world.tools.get(call.tool)
        cause = None
        if tool is None:
            cause = RefusalCause.NOT_REGISTERED
        elif tool.namespace not in self.world.enabled_tool_namespaces:
            cause = RefusalCause.NAMESPACE_DISABLED
        elif not self.world.book.discoverable(tool.resource_namespace, tool.action):
            cause = RefusalCause.NOT_DISCOVERABLE
        if tool is None or cause is not None:
            error = ProtocolError.of(Code.TOOL_UNAVAILABLE, message(Code.TOOL_UNAVAILABLE, tool=call.tool))
            return self._finish(call, ToolResult.refused(call, ResultStatus.DENIED, error), cause=cause)
        try:
            args = tool.parse_arguments(call.arguments)
            req = tool.requirement(args, self.world.owner)
        except (ArgumentError, KeyError, TypeError, ValueError) as err:
            text = message(Code.INVALID_TOOL_ARGUMENTS, tool=call.tool, detail=str(err) or type(err).__name__)
            return self._finish(call, _failed(call, Code.INVALID_TOOL_ARGUMENTS, text))
        # owner crossing (invalid_request) is decided before the tool ceiling (ADR 0012)
        if req.owner == self.world.owner and req.path[: len(tool.ceiling)] != tool.ceiling:
            text = message(Code.INVALID_TOOL_REQUIREMENT, tool=call.tool)
            return self._finish(call, _failed(call, Code.INVALID_TOOL_REQUIREMENT, text), req)
        decision = self.world.book.authorize(req)
        if not decision.allowed:
            text = message(decision.code, action=req.action, resource=req.describe(), grant=decision.grant_id)
            refused = ToolResult.refused(call, ResultStatus.DENIED, ProtocolError.of(decision.code, text))
            return self._finish(call, refused, req, decision.grant_id)
        ctx = ToolContext(call_id=call.call_id, owner=self.world.owner, state=self.world.state)
        try:
            output = tool.handler(args, ctx)
        except EscalationNotTerminated:
            text = message(Code.ESCALATION_NOT_TERMINATED)
            return self._finish(call, _failed(call, Code.ESCALATION_NOT_TERMINATED, text), req, decision.grant_id)
        except HandlerError as err:
            text = f"{message(Code.TOOL_EXECUTION_FAILED, tool=call.tool)} {err}"
            return self._finish(call, _failed(call, Code.TOOL_EXECUTION_FAILED, text), req, decision.grant_id)
        if isinstance(output, ResultFor):
            if output.call_id != call.call_id:
                text = message(Code.INVALID_TOOL_RESULT, tool=call.tool)
                return self._finish(call, _failed(call, Code.INVALID_TOOL_RESULT, text), req, decision.grant_id)
            output = output.output
        return self._finish(call, ToolResult.ok(call, output), req, decision.grant_id)

    def _finish(
        self,
        call: ToolCall,
        result: ToolResult,
        req: Requirement | None = None,
        grant_id: str | None = None,
        cause: RefusalCause | None = None,
    ) -> ToolResult:
        self._record(call, result, Source.KERNEL, req, grant_id, cause)
        return result

    def _record(
        self,
        call: ToolCall,
        result: ToolResult,
        source: Source,
        req: Requirement | None = None,
        grant_id: str | None = None,
        cause: RefusalCause | None = None,
    ) -> None:
        self.operations.append(
            _compact(
                {
                    "operationId": call.call_id,
                    "kind": "tool",
                    "source": source.value,
                    "outcome": result.status.value,
                    "tool": call.tool,
                    "resource": {"namespace": req.namespace, "path": list(req.path)} if req else None,
                    "action": req.action if req else None,
                    "grantId": grant_id,
                    "reasonCode": result.error.code if result.error else None,
                    "cause": cause.value if cause else None,
                    "alias": call.alias,
                }
            )
        )

    # --- settlement --------------------------------------------------------------------------

    def settle(self, outcome: RuntimeOutcome) -> ExecutionResult:
        """Turn the runtime's outcome into the turn's result (§2.3)."""
        metadata = self._metadata(outcome.metadata)
        self.closed = True
        if isinstance(outcome, Complete):
            self._emit("turn.completed", {})
            return self._result(ExecutionStatus.SUCCEEDED, metadata, output=outcome.output)
        if isinstance(outcome, Escalate):
            if not any(t.name == "sharedos.escalate" for t in self.catalogue.tools):
                error = ProtocolError.of(Code.TOOL_UNAVAILABLE, ESCALATE_OUTCOME_NOT_OFFERED)
                self._emit("turn.failed", {"code": error.code, "source": Source.ENVELOPE.value})
                return self._result(ExecutionStatus.FAILED, metadata, error=error)
            escalation = Escalation(outcome.reason, reviewer=_address(self.world.owner), requested_at=self.clock())
            self._emit("turn.escalated", {"reason": outcome.reason, "reviewer": {**escalation.reviewer}})
            return self._result(ExecutionStatus.ESCALATED, metadata, escalation=escalation)
        error = outcome.error
        if error.retryable and not self._safe_to_retry():
            error = ProtocolError(error.code, error.message, False, error.details)
        self._emit("turn.failed", {"code": error.code, "source": Source.RUNTIME.value})
        return self._result(ExecutionStatus.FAILED, metadata, error=error)

    def cancel(self, why: str, metadata: dict[str, JsonValue] | None = None) -> ExecutionResult:
        """The deadline or the host stopped the turn before it settled: ``cancelled``/``turn_cancelled``."""
        merged = self._metadata(metadata or {})
        self.closed = True
        self._emit("turn.cancelled", {})
        error = ProtocolError.of(Code.TURN_CANCELLED, message(Code.TURN_CANCELLED, why=why))
        return self._result(ExecutionStatus.CANCELLED, merged, error=error)

    def _safe_to_retry(self) -> bool:
        writes = {n for n, t in self.world.tools.items() if t.read_write == "write"}
        return not any(op["outcome"] == "succeeded" and op["tool"] in writes for op in self.operations)

    def _metadata(self, outcome_metadata: dict[str, JsonValue]) -> dict[str, JsonValue]:
        return {**outcome_metadata, **self.annotations, "runtime": self.runtime.to_json()}

    def _result(
        self,
        status: ExecutionStatus,
        metadata: dict[str, JsonValue],
        *,
        output: JsonValue = None,
        error: ProtocolError | None = None,
        escalation: Escalation | None = None,
    ) -> ExecutionResult:
        return ExecutionResult(self.execution_id, status, list(self.events), metadata, output, error, escalation,
                               version=self.runtime.protocol_version)

    def _emit(self, type_: str, data: dict[str, JsonValue]) -> None:
        n = len(self.events) + 1
        self.events.append(
            {
                "sequence": n,
                "eventId": f"{self.execution_id}.event-{n}",
                "occurredAt": self.clock(),
                "type": type_,
                "data": data,
            }
        )

    # --- the record --------------------------------------------------------------------------

    def record(self, result: ExecutionResult) -> dict[str, JsonValue]:
        """The execution record of the turn: what the judge and a human read afterwards."""
        meta = result.metadata
        execution: dict[str, JsonValue] = {
            "executionId": self.execution_id,
            "status": result.status.value,
            "terminalReasonCode": result.reason_code,
            "escalation": result.escalation.to_json() if result.escalation else None,
            "exposedTools": [*sorted(self.catalogue.names)],
            "requestedTools": [*self.world.requested_tools],
            "catalogHash": f"sha256:{self.catalogue.catalog_hash}",
            "operations": [*self.operations],
            "events": [*result.events],
            "callsAfterEscalation": meta.get("callsAfterEscalation"),
            "escalationAsked": meta.get("escalationAsked"),
        }
        return {
            "version": self.runtime.protocol_version,  # the epoch the turn spoke (ADR 0027: never relabelled)
            "experiment": {"executionId": self.execution_id},
            "authority": {"grants": [g.id for g in self.world.grants if g.subject == self.world.agent]},
            "execution": _compact(execution),
            "result": result.to_json(),
        }


def _failed(call: ToolCall, code: Code, text: str) -> ToolResult:
    return ToolResult.refused(call, ResultStatus.FAILED, ProtocolError.of(code, text))


def _address(addr: tuple[str, str]) -> dict[str, str]:
    kind, ident = addr
    return {"kind": kind, ("userId" if kind == "human" else "agentId"): ident}


def _compact(body: dict[str, JsonValue]) -> dict[str, JsonValue]:
    return {k: v for k, v in body.items() if v is not None}


__all__ = ["Envelope", "HostClosed", "RuntimeInfo", "StepLimits"]
