"""The audit sink a turn writes to (ADR 0023), and what an outage of it does.

Writes are of two kinds. A write made **before** an effect (the authority the turn resolved, the catalogue it
listed, a decision before its handler runs) must land, or the effect does not happen: the write raises
:class:`AuditUnavailable` and the operation is rejected ``audit_unavailable`` -- the envelope then stops
taking calls and ends the turn ``failed``/``audit_unavailable``, ended by the envelope, fail-closed. A write
made **after** an effect (``tool.invoked``, ``turn.ended``) never changes an answer: its failure is noted in
:attr:`AuditLog.errors` (upstream ``onAuditError``) and the turn goes on.

``fails_after_operations=N`` arms the outage as upstream's conformance sink does
(``auditFailsAfterOperations``): once the kept events hold N ``tool.invoked`` events, every write throws and
is not kept. The count is in operations, not writes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runner.core.outcomes import JsonValue


class AuditUnavailable(RuntimeError):
    """The audit sink refused a write."""


@dataclass
class AuditLog:
    fails_after_operations: int | None = None
    events: list[dict[str, JsonValue]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)

    @property
    def operations(self) -> int:
        return sum(1 for e in self.events if e.get("type") == "tool.invoked")

    def write(self, type_: str, body: dict[str, JsonValue]) -> None:
        """Keep one event, or raise :class:`AuditUnavailable` (the event is then not kept)."""
        if self.fails_after_operations is not None and self.operations >= self.fails_after_operations:
            raise AuditUnavailable(f"the audit sink refused {type_} after {self.operations} operations")
        self.events.append({"type": type_, **body})

    def after_effect(self, type_: str, body: dict[str, JsonValue]) -> None:
        """A write whose failure must not change the answer (``onAuditError``)."""
        try:
            self.write(type_, body)
        except AuditUnavailable as err:
            self.errors.append(str(err))
