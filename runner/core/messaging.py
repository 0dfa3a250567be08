"""The message transport behind ``messages.request``, and its route lease (ADR 0025: a route lease is not
authority).

The kernel authorizes the send (``sharedos.messaging``/``send``) and then hands the message to the transport.
The transport may still refuse the dispatch -- here, because the host revoked the route lease after
``revoked_after_deliveries`` accepted deliveries (the conformance world's ``routeRevokedAfterDeliveries``).
Its ``denied`` receipt is kept verbatim (:attr:`RouteLeaseTransport.receipts`); the kernel never overrides
it, and ``messages.request`` fails ``message_request_not_accepted`` with the transport's code as ``cause``.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from runner.core.outcomes import JsonValue
from runner.core.vocabulary import Code, message


@dataclass(frozen=True)
class DispatchReceipt:
    """``MessageDeliveryResult``: ``accepted`` or ``denied`` with the transport's code."""

    message_id: str
    status: str  # accepted | denied
    error_code: str | None = None
    error_message: str | None = None

    @property
    def accepted(self) -> bool:
        return self.status == "accepted"

    def to_json(self) -> dict[str, JsonValue]:
        body: dict[str, JsonValue] = {"messageId": self.message_id, "status": self.status}
        if self.error_code is not None:
            body["error"] = {"code": self.error_code, "message": self.error_message or self.error_code}
        return body


@dataclass
class RouteLeaseTransport:
    """An in-memory transport whose route lease the host can revoke after N accepted deliveries."""

    revoked_after_deliveries: int | None = None
    receipts: list[DispatchReceipt] = field(default_factory=list)
    delivered: list[dict[str, JsonValue]] = field(default_factory=list)

    def deliver(self, message_id: str, recipient: JsonValue, payload: JsonValue) -> DispatchReceipt:
        limit = self.revoked_after_deliveries
        if limit is not None and len(self.delivered) >= limit:
            text = message(Code.ROUTE_LEASE_REVOKED, recipient=_who(recipient))
            receipt = DispatchReceipt(message_id, "denied", Code.ROUTE_LEASE_REVOKED.value, text)
        else:
            self.delivered.append({"messageId": message_id, "recipient": recipient, "payload": payload})
            receipt = DispatchReceipt(message_id, "accepted")
        self.receipts.append(receipt)
        return receipt


def _who(recipient: JsonValue) -> str:
    if isinstance(recipient, dict):
        return str(recipient.get("userId") or recipient.get("agentId") or recipient.get("kind"))
    return "the recipient"
