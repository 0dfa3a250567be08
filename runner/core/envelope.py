"""The envelope: the turn authority every call is mediated by, and the settlement of the turn.

Mirrors upstream ``SharedOSExecutor`` (§2.3, §8 item 18). One :class:`Envelope` is one turn: it
takes the turn's admission (a turn the world refused -- its authority unavailable, or no grant admitting
it -- never starts: :attr:`Envelope.refusal` is its ``denied`` result, and no runtime may run), lists the
registry once and resolves the catalogue from that listing (ADR 0026), mediates each call in the upstream
order (host open, draining, step budget, tool-call budget, catalogue check, kernel discovery and
authorization against the held listing), records operations and events, writes the audit (ADR 0023),
takes annotations, and turns the runtime's outcome into an :class:`ExecutionResult` — re-checking the
catalogue gate on an ``escalate`` outcome.

Two things end a turn whatever the runtime says afterwards:

- an **audit outage** on a write made before an effect: that operation is ``interrupted``
  (``audit_unavailable``, nothing ran), the envelope drains, and the turn ends ``failed``/``audit_unavailable``,
  ended by the envelope, fail-closed;
- the **drain point** (:meth:`runner.core.world.World.draining`): new calls are refused ``turn_draining``
  and the turn ends ``cancelled``/``turn_cancelled``. [inferred] Upstream ends a draining turn ``cancelled``
  when its deadline aborts the plugin and lets "a decision already in flight" complete it; an MCP CLI told
  ``turn_draining`` winds down by itself before any deadline, so here the drain itself settles the turn
  ``cancelled`` (the CLI's own ending is kept in the metadata as ``harnessOutcome``). To let a wind-down
  complete a drained turn instead, change :meth:`Envelope.settle`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from runner.core.audit import AuditUnavailable
from runner.core.catalogue import Catalogue, catalog_hash, resolve_catalogue
from runner.core.grants import Decision, Requirement
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
    ToolDefinition,
    ToolFailure,
)
from runner.core.vocabulary import (
    ESCALATE_OUTCOME_NOT_OFFERED,
    Code,
    ExecutionStatus,
    OperationOutcome,
    RefusalCause,
    ResultStatus,
    Source,
    fail_closed,
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
class ServerIdentity:
    """Who serves the turn's tools: runner's MCP server for one harness (``runner.<harness>.mcp``), its version and
    the SharedOS protocol epoch it speaks; the record writes it as upstream's ``runtime``."""

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
        server: ServerIdentity,
        limits: StepLimits | None = None,
        clock: Callable[[], str] | None = None,
    ) -> None:
        self.world = world
        self.execution_id = execution_id
        self.server = server  # who serves the turn (upstream's record calls it its "runtime")
        self.limits = limits or StepLimits(
            max_steps=world.condition.max_steps or 16, max_tool_calls=world.condition.max_tool_calls
        )
        self.clock: Callable[[], str] = clock or (lambda: world.now)
        self.events: list[dict[str, JsonValue]] = []
        self.operations: list[dict[str, JsonValue]] = []
        self.annotations: dict[str, JsonValue] = {}
        self.draining = False
        self.audit_failed = False  # a write before an effect failed: the turn ends failed/audit_unavailable
        self.closed = False
        self.ended_by: Source | None = None
        self._tool_calls = 0
        self._steps: set[int] = set()
        self.refusal: ExecutionResult | None = None  # the turn's result when it was refused before starting
        admission = world.admission
        self.registry: dict[str, ToolDefinition] = world.registry() if admission.admitted else {}
        self.catalogue: Catalogue = (
            resolve_catalogue(world, execution_id, registry=self.registry) if admission.admitted
            else Catalogue(execution_id, (), catalog_hash([]))
        )
        if not admission.admitted:
            self._audit_after("authority.resolved", {"outcome": "denied", "reasonCode": admission.code.value,
                                                     "failClosed": admission.fail_closed})
            self.refusal = self._refuse(ExecutionStatus.DENIED, admission.code, admission.detail or admission.code)
            return
        try:
            self._audit_before("authority.resolved", {
                "outcome": "allowed", "grants": [g.id for g in world.book.grants if g.subject == world.agent],
                "hostCeiling": "installed" if world.ceiling is not None else "absent",
            })
            self._audit_before("tool.catalog.listed", {"catalogHash": self.catalogue.catalog_hash,
                                                       "enabledNamespaces": list(world.enabled_tool_namespaces)})
        except AuditUnavailable as err:
            self.refusal = self._refuse(ExecutionStatus.FAILED, Code.AUDIT_UNAVAILABLE, str(err))
            return
        self._emit(
            "turn.started",
            {"agent": list(world.agent), "visibleTools": [*sorted(self.catalogue.names)], "runtime": server.to_json()},
        )

    @property
    def refused(self) -> bool:
        """The turn was refused before its runtime could start: nothing may run it (no CLI, no container)."""
        return self.refusal is not None

    def _refuse(self, status: ExecutionStatus, code: Code, detail: str) -> ExecutionResult:
        """End the turn before it started: ``denied`` at admission (``turn.denied``), or ``failed`` when the
        audit of its authority failed (``turn.failed`` by the envelope)."""
        self.closed = True
        self.ended_by = Source.ENVELOPE
        error = ProtocolError.of(code, message(code, detail=detail) if code is Code.AUTHORITY_UNAVAILABLE else detail)
        if status is ExecutionStatus.DENIED:
            self._emit("turn.denied", {"code": code.value})
        else:
            self._emit("turn.failed", {"code": code.value, "source": Source.ENVELOPE.value})
        self._audit_after("turn.ended", {"status": status.value, "reasonCode": code.value, "endedBy": "envelope"})
        return self._result(status, self._metadata({}), error=error)

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
        if not self.draining and self.world.draining():
            self.draining = True
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
        # the definition held for the turn (ADR 0026); discovery and authorization still run per call, now
        tool = self.registry.get(call.tool)
        cause: str | None = None
        if tool is None:
            cause = RefusalCause.NOT_REGISTERED
        elif tool.namespace not in self.world.enabled_tool_namespaces:
            cause = RefusalCause.NAMESPACE_DISABLED
        else:
            found = self.world.book.discover(tool.resource_namespace, tool.ceiling, tool.action)
            if not found.allowed:
                cause = RefusalCause.NOT_DISCOVERABLE if found.code is Code.NO_MATCHING_GRANT else found.code.value
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
        try:
            self._audit_before("authorization.checked", _decision_audit(call, req, decision))
        except AuditUnavailable:
            return self._interrupted(call, req, decision.grant_id)
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
        except ToolFailure as err:
            failed = _failed(call, err.code, err.text)
            return self._finish(call, failed, req, decision.grant_id, cause=err.cause)
        except HandlerError as err:
            text = f"{message(Code.TOOL_EXECUTION_FAILED, tool=call.tool)} {err}"
            return self._finish(call, _failed(call, Code.TOOL_EXECUTION_FAILED, text), req, decision.grant_id)
        if isinstance(output, ResultFor):
            if output.call_id != call.call_id:
                text = message(Code.INVALID_TOOL_RESULT, tool=call.tool)
                return self._finish(call, _failed(call, Code.INVALID_TOOL_RESULT, text), req, decision.grant_id)
            output = output.output
        return self._finish(call, ToolResult.ok(call, output), req, decision.grant_id)

    def _interrupted(self, call: ToolCall, req: Requirement, grant_id: str | None) -> ToolResult:
        """The decision could not be audited before its effect: nothing runs, the operation is ``interrupted``
        (``audit_unavailable``; the runtime is answered ``failed``), and the turn drains (ADR 0023)."""
        self.audit_failed = True
        self.draining = True
        failed = _failed(call, Code.AUDIT_UNAVAILABLE, message(Code.AUDIT_UNAVAILABLE))
        return self._finish(call, failed, req, grant_id, outcome=OperationOutcome.INTERRUPTED)

    def _finish(
        self,
        call: ToolCall,
        result: ToolResult,
        req: Requirement | None = None,
        grant_id: str | None = None,
        cause: str | None = None,
        outcome: OperationOutcome | None = None,
    ) -> ToolResult:
        self._record(call, result, Source.KERNEL, req, grant_id, cause, outcome)
        return result

    def _record(
        self,
        call: ToolCall,
        result: ToolResult,
        source: Source,
        req: Requirement | None = None,
        grant_id: str | None = None,
        cause: str | None = None,
        outcome: OperationOutcome | None = None,
    ) -> None:
        code = result.error.code if result.error else None
        operation = _compact(
            {
                "operationId": call.call_id,
                "kind": "tool",
                "source": source.value,
                "outcome": (outcome or OperationOutcome(result.status.value)).value,
                "tool": call.tool,
                "resource": {"namespace": req.namespace, "path": list(req.path)} if req else None,
                "action": req.action if req else None,
                "grantId": grant_id,
                "reasonCode": code,
                "cause": str(cause) if cause else None,
                "failClosed": True if fail_closed(code) else None,
                "alias": call.alias,
            }
        )
        self.operations.append(operation)
        self._audit_after("tool.invoked", {k: v for k, v in operation.items() if k != "alias"})

    # --- the audit (ADR 0023) ------------------------------------------------------------------

    def _audit_before(self, type_: str, body: dict[str, JsonValue]) -> None:
        """A write that must land before its effect: raises :class:`AuditUnavailable`."""
        self.world.audit.write(type_, {"executionId": self.execution_id, "at": self.clock(), **body})

    def _audit_after(self, type_: str, body: dict[str, JsonValue]) -> None:
        """A write after the effect: a failure is noted, never changes the answer (``onAuditError``)."""
        self.world.audit.after_effect(type_, {"executionId": self.execution_id, "at": self.clock(), **body})

    # --- settlement --------------------------------------------------------------------------

    def settle(self, outcome: RuntimeOutcome) -> ExecutionResult:
        """Turn the runtime's outcome into the turn's result (§2.3)."""
        if self.refusal is not None:
            return self.refusal
        result = self._settled(outcome)
        self._audit_after("turn.ended", _compact({
            "status": result.status.value, "reasonCode": result.reason_code,
            "endedBy": self.ended_by.value if self.ended_by else None,
        }))
        return result

    def _settled(self, outcome: RuntimeOutcome) -> ExecutionResult:
        metadata = self._metadata(outcome.metadata)
        self.closed = True
        if self.audit_failed:
            # ADR 0023: a plugin can neither continue past an audit outage nor get credit for it
            error = ProtocolError.of(Code.AUDIT_UNAVAILABLE, message(Code.AUDIT_UNAVAILABLE),
                                     retryable=self._safe_to_retry())
            self.ended_by = Source.ENVELOPE
            self._emit("turn.failed", {"code": error.code, "source": Source.ENVELOPE.value})
            return self._result(ExecutionStatus.FAILED, metadata, error=error)
        if self.draining:
            return self._cancelled("the turn reached its drain point and took no new calls", metadata)
        if isinstance(outcome, Complete):
            self.ended_by = Source.RUNTIME
            self._emit("turn.completed", {})
            return self._result(ExecutionStatus.SUCCEEDED, metadata, output=outcome.output)
        if isinstance(outcome, Escalate):
            if not any(t.name == "sharedos.escalate" for t in self.catalogue.tools):
                error = ProtocolError.of(Code.TOOL_UNAVAILABLE, ESCALATE_OUTCOME_NOT_OFFERED)
                self.ended_by = Source.ENVELOPE
                self._emit("turn.failed", {"code": error.code, "source": Source.ENVELOPE.value})
                return self._result(ExecutionStatus.FAILED, metadata, error=error)
            escalation = Escalation(outcome.reason, reviewer=_address(self.world.owner), requested_at=self.clock())
            self.ended_by = Source.RUNTIME
            self._emit("turn.escalated", {"reason": outcome.reason, "reviewer": {**escalation.reviewer}})
            return self._result(ExecutionStatus.ESCALATED, metadata, escalation=escalation)
        error = outcome.error
        if error.retryable and not self._safe_to_retry():
            error = ProtocolError(error.code, error.message, False, error.details)
        self.ended_by = Source.RUNTIME
        self._emit("turn.failed", {"code": error.code, "source": Source.RUNTIME.value})
        return self._result(ExecutionStatus.FAILED, metadata, error=error)

    def cancel(self, why: str, metadata: dict[str, JsonValue] | None = None) -> ExecutionResult:
        """The deadline or the host stopped the turn before it settled: ``cancelled``/``turn_cancelled``."""
        if self.refusal is not None:
            return self.refusal
        result = self._cancelled(why, self._metadata(metadata or {}))
        self._audit_after("turn.ended", {"status": result.status.value, "reasonCode": Code.TURN_CANCELLED.value,
                                         "endedBy": Source.ENVELOPE.value})
        return result

    def _cancelled(self, why: str, metadata: dict[str, JsonValue]) -> ExecutionResult:
        self.closed = True
        self.ended_by = Source.ENVELOPE
        self._emit("turn.cancelled", {})
        error = ProtocolError.of(Code.TURN_CANCELLED, message(Code.TURN_CANCELLED, why=why),
                                 retryable=False if not self._safe_to_retry() else None)
        return self._result(ExecutionStatus.CANCELLED, metadata, error=error)

    def _safe_to_retry(self) -> bool:
        writes = {n for n, t in {**self.world.tools, **self.registry}.items() if t.read_write == "write"}
        return not any(op["outcome"] == "succeeded" and op["tool"] in writes for op in self.operations)

    def _metadata(self, outcome_metadata: dict[str, JsonValue]) -> dict[str, JsonValue]:
        return {**outcome_metadata, **self.annotations, "runtime": self.server.to_json()}

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
                               version=self.server.protocol_version)

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
            "endedBy": self.ended_by.value if self.ended_by else None,  # judge 6
        }
        return {
            "version": self.server.protocol_version,  # the epoch the turn spoke (ADR 0027: never relabelled)
            "experiment": {"executionId": self.execution_id},
            "authority": {"grants": [g.id for g in self.world.book.grants if g.subject == self.world.agent]},
            "execution": _compact(execution),
            "audit": [e for e in self.world.audit.events if e.get("executionId") == self.execution_id],
            "result": result.to_json(),
        }


def _decision_audit(call: ToolCall, req: Requirement, decision: Decision) -> dict[str, JsonValue]:
    """``authorization.checked``: the decision, its grant, its metadata, and ``requiredAuthority`` on a
    ``no_matching_grant`` (ADR 0019)."""
    return _compact({
        "operationId": call.call_id,
        "outcome": "allowed" if decision.allowed else "denied",
        "resource": {"namespace": req.namespace, "path": list(req.path)},
        "action": req.action,
        "reasonCode": decision.code.value,
        "grantId": decision.grant_id,
        "metadata": dict(decision.metadata) if decision.metadata else None,
        "requiredAuthority": dict(decision.required_authority) if decision.required_authority else None,
        "failClosed": True if fail_closed(decision.code.value) else None,
    })


def _failed(call: ToolCall, code: Code | str, text: str) -> ToolResult:
    return ToolResult.refused(call, ResultStatus.FAILED, ProtocolError.of(code, text))


def _address(addr: tuple[str, str]) -> dict[str, str]:
    kind, ident = addr
    return {"kind": kind, ("userId" if kind == "human" else "agentId"): ident}


def _compact(body: dict[str, JsonValue]) -> dict[str, JsonValue]:
    return {k: v for k, v in body.items() if v is not None}


__all__ = ["Envelope", "HostClosed", "ServerIdentity", "StepLimits"]
