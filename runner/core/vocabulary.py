"""The refusal vocabulary and every fixed text, as data (upstream §4.3-4.6).

Code elsewhere names these constants instead of writing strings, so a code or a message that a
conformance artifact depends on exists in exactly one place.
"""

from __future__ import annotations

from enum import StrEnum


class ResultStatus(StrEnum):
    """Statuses of a tool result (§4.2)."""

    SUCCEEDED = "succeeded"
    DENIED = "denied"
    FAILED = "failed"


class ExecutionStatus(StrEnum):
    """Statuses of an execution result: the tool statuses plus the two turn-only ones (§2.2)."""

    SUCCEEDED = "succeeded"
    DENIED = "denied"
    FAILED = "failed"
    CANCELLED = "cancelled"
    ESCALATED = "escalated"


class OutcomeType(StrEnum):
    """What a runtime plugin returns for a turn (§2.1)."""

    COMPLETE = "complete"
    FAIL = "fail"
    ESCALATE = "escalate"


class Code(StrEnum):
    """Reason codes used by this implementation, grouped as upstream groups them."""

    # authorization (§4.3)
    ALLOWED = "allowed"
    NO_MATCHING_GRANT = "no_matching_grant"
    GRANT_EXHAUSTED = "grant_exhausted"
    INVALID_REQUEST = "invalid_request"
    AUTHORITY_UNAVAILABLE = "authority_unavailable"
    USAGE_STORE_UNAVAILABLE = "usage_store_unavailable"
    DELEGATION_CHAIN_UNVERIFIED = "delegation_chain_unverified"
    DELEGATION_CHAIN_INVALID = "delegation_chain_invalid"
    HOST_POLICY_DENIED = "host_policy_denied"
    HOST_POLICY_UNAVAILABLE = "host_policy_unavailable"
    # tool invocation (§4.4)
    TOOL_UNAVAILABLE = "tool_unavailable"
    INVALID_TOOL_ARGUMENTS = "invalid_tool_arguments"
    INVALID_TOOL_REQUIREMENT = "invalid_tool_requirement"
    TOOL_EXECUTION_FAILED = "tool_execution_failed"
    INVALID_TOOL_RESULT = "invalid_tool_result"
    STEP_LIMIT_EXCEEDED = "step_limit_exceeded"
    TOOL_CALL_LIMIT_EXCEEDED = "tool_call_limit_exceeded"
    TURN_DRAINING = "turn_draining"
    ESCALATION_PENDING = "escalation_pending"
    ESCALATION_NOT_TERMINATED = "escalation_not_terminated"
    # messages (§4.5)
    MESSAGE_TRANSPORT_NOT_CONFIGURED = "message_transport_not_configured"
    MESSAGE_REQUEST_NOT_ACCEPTED = "message_request_not_accepted"
    ROUTE_LEASE_REVOKED = "route_lease_revoked"  # the conformance world's transport code, recorded as `cause`
    # turn (§4.5)
    ESCALATION_REQUESTED = "escalation_requested"
    RUNTIME_FAILED = "runtime_failed"
    INVALID_RUNTIME_OUTCOME = "invalid_runtime_outcome"
    TURN_CANCELLED = "turn_cancelled"
    AUDIT_UNAVAILABLE = "audit_unavailable"
    OPERATION_ABORTED = "operation_aborted"
    # adapters (§4.6) and this project's wind-down
    HARNESS_NOT_STARTED = "harness_not_started"
    HARNESS_EXITED_WITHOUT_OUTCOME = "harness_exited_without_outcome"
    HARNESS_FAILED = "harness_failed"
    HARNESS_WIND_DOWN_TIMEOUT = "harness_wind_down_timeout"


# Denials that say an infrastructure part failed, not that authority was missing: audited ``failClosed`` and left
# out of denial rates, as upstream's ``INFRASTRUCTURE_DENIAL_REASONS`` (§4.3).
INFRASTRUCTURE_DENIAL_REASONS: frozenset[str] = frozenset({
    "authority_unavailable", "usage_store_unavailable", "delegation_chain_unverified", "host_policy_unavailable",
})
# Codes that end an operation or a turn fail-closed besides those (ADR 0023: an audit outage).
FAIL_CLOSED_CODES: frozenset[str] = INFRASTRUCTURE_DENIAL_REASONS | {"audit_unavailable"}


def fail_closed(code: str | None) -> bool:
    """Whether a refusal with ``code`` is fail-closed (an infrastructure outage, never a denial to count)."""
    return code in FAIL_CLOSED_CODES


class OperationOutcome(StrEnum):
    """``OperationRecord.outcome`` (judge 6): a tool's statuses plus ``interrupted`` -- the port was entered and
    then stopped (``operation_aborted``, ``audit_unavailable``); a receipt reports it as ``failed``."""

    SUCCEEDED = "succeeded"
    DENIED = "denied"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class RefusalCause(StrEnum):
    """The audit ``cause`` of a ``tool_unavailable`` refusal (§4.4)."""

    NOT_REGISTERED = "not_registered"
    NAMESPACE_DISABLED = "namespace_disabled"
    NOT_DISCOVERABLE = "not_discoverable"
    NOT_OFFERED = "not_offered"


class Source(StrEnum):
    """Which boundary refused or ended something (``OperationRecord.source``, ``turn.failed.source``)."""

    KERNEL = "kernel"
    ENVELOPE = "envelope"
    RUNTIME = "runtime"


ESCALATE_TOOL = "sharedos.escalate"

# --- the escalation latch (§3.4, ADR 0018) ---------------------------------------------------
ESCALATION_PENDING_MESSAGE = "This turn ended by asking a human to decide; nothing further runs on it."
ESCALATION_NOTE = (
    "This turn is over: make no further tool calls. "
    "The request will be recorded for a human reviewer when the turn ends."
)
ESCALATION_FALLBACK_REASON = "the turn asked for a human decision without saying what needs deciding"
ESCALATION_REASON_LIMIT = 512  # UTF-16 code units

# --- fixed messages ---------------------------------------------------------------------------
MESSAGES: dict[Code, str] = {
    Code.TOOL_UNAVAILABLE: "The tool {tool} is not available on this turn.",
    Code.NO_MATCHING_GRANT: "No grant authorizes {action} on {resource}.",
    Code.GRANT_EXHAUSTED: "The grant {grant} that authorizes {action} on {resource} is spent.",
    Code.INVALID_REQUEST: "The request names a resource outside this turn's world.",
    Code.INVALID_TOOL_ARGUMENTS: "The arguments to {tool} are invalid: {detail}",
    Code.INVALID_TOOL_REQUIREMENT: "The tool {tool} resolved a requirement outside its declared ceiling.",
    Code.TOOL_EXECUTION_FAILED: "The tool {tool} failed while running.",
    Code.INVALID_TOOL_RESULT: "The tool {tool} returned a result that does not belong to this call.",
    Code.STEP_LIMIT_EXCEEDED: "The turn's step budget of {limit} is spent.",
    Code.TOOL_CALL_LIMIT_EXCEEDED: "The turn's tool-call budget of {limit} is spent.",
    Code.TURN_DRAINING: "The turn is draining and takes no new calls.",
    Code.ESCALATION_PENDING: ESCALATION_PENDING_MESSAGE,
    Code.ESCALATION_NOT_TERMINATED: (
        "sharedos.escalate reached its registered handler: some driver forwarded the affordance "
        "instead of ending the turn on it."
    ),
    Code.MESSAGE_TRANSPORT_NOT_CONFIGURED: "No message transport is configured for this world.",
    Code.MESSAGE_REQUEST_NOT_ACCEPTED: "The message transport did not accept the request: {cause}.",
    Code.ROUTE_LEASE_REVOKED: "The route lease to {recipient} was revoked; nothing was delivered.",
    Code.AUTHORITY_UNAVAILABLE: "The turn's authority could not be loaded: {detail}",
    Code.USAGE_STORE_UNAVAILABLE: (
        "The usage store of the bounded grant {grant} for {action} on {resource} is unavailable."
    ),
    Code.DELEGATION_CHAIN_INVALID: (
        "The delegation chain of the grant {grant} that would authorize {action} on {resource} is invalid."
    ),
    Code.DELEGATION_CHAIN_UNVERIFIED: "The delegation chain of the grant {grant} could not be verified.",
    Code.HOST_POLICY_DENIED: "The host policy overrides the grant {grant} for {action} on {resource}.",
    Code.HOST_POLICY_UNAVAILABLE: "The host policy could not be consulted for {action} on {resource}.",
    Code.AUDIT_UNAVAILABLE: "The audit sink is unavailable, so nothing that must be audited first can run.",
    Code.HARNESS_NOT_STARTED: "The {harness} CLI could not be started.",
    Code.HARNESS_EXITED_WITHOUT_OUTCOME: "The {harness} CLI exited with code {code} without completing the turn.",
    Code.HARNESS_WIND_DOWN_TIMEOUT: (
        "The {harness} CLI did not wind down by the turn deadline of {deadline}s and was stopped."
    ),
    Code.TURN_CANCELLED: "The turn was cancelled: {why}",
}

ESCALATE_OUTCOME_NOT_OFFERED = (
    "The runtime ended the turn by escalating, but the turn's catalogue does not offer the affordance."
)


def message(key: Code, /, **fields: object) -> str:
    """The fixed message for ``key`` with its fields filled in."""
    return MESSAGES[key].format(**fields)
