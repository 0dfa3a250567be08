"""Scripted-model faults: the endpoint errs, stalls or cuts a stream short, on purpose.

A turn's outcome must stay truthful when the model API misbehaves, so the scripted model can be told
to misbehave at a chosen request (``runner exec --model-fault KIND[@STEP]``):

- ``error``: HTTP 500 with the dialect's own error body (``api_error`` for Anthropic Messages,
  ``server_error`` for the OpenAI dialects, ``INTERNAL`` for Gemini). 500 rather than 429: every CLI
  treats both as retryable, but a 429 invites rate-limit back-off (``retry-after``) that would make
  the turn's length depend on the CLI's pacing rather than on its error handling.
- ``stall``: the request is accepted and never answered until the client goes away or the turn
  ends (the endpoint then answers 503 to nobody).
- ``early-close``: the answer starts (status 200, the stream's headers and its first half of events;
  a one-event stream is cut inside that event's bytes) and then the connection is dropped without
  the stream's terminal event and without the chunked body's end.

**Which request.** ``STEP`` counts *conversation* requests, 1-based, in arrival order: the requests
the scripted model plays the turn for. Side requests (titles, memory agents), preconnects and
auxiliary endpoints (token counts, model lists) are not counted, so ``@1`` is the request that
would make the turn's first call on every CLI. ``@after-ask`` is the first conversation request
whose conversation already holds the answer to the ask (its step is past the ask's playable call);
with no ask the CLI could make (the escalate tool not offered, a behaviour that never asks) it never
fires.

**From then on.** A fault models an outage, not a blip: once it fires, every later conversation
request fails the same way. A CLI's own retries therefore meet the same fault, and what the turn
reports is how the CLI ends when its model is gone -- not whether one retry happened to land. Every
faulted exchange is logged with a ``fault`` entry naming the fault.

**Side requests are never faulted.** Whether a request is faulted is decided by what it is (a
conversation request, and where it stands in the conversation), never by when it arrived relative to
a request of another kind. A side request carries no place in the conversation, and a CLI sends it
alongside a conversation request (dsh sends its title request about 1 ms after its first
conversation request), so "before or after the fault fired" would be a race between two concurrent
requests: a fault that took side requests down once it had fired failed dsh's title request or
served it depending on which reached the endpoint first. A side request is answered as scripted
whatever the fault, so the same turn faults the same requests in every run.
"""

from __future__ import annotations

from runner.core.outcomes import JsonValue
from runner.model.script import Plan
from runner.model.settings import AFTER_ASK, FaultKind, FaultSpecError, ModelFault

__all__ = ["AFTER_ASK", "ASK_TOOL", "ERROR_STATUS", "FaultKind", "FaultSpecError", "FaultTrigger", "ModelFault"]

ASK_TOOL = "sharedos.escalate"
ERROR_STATUS = 500
# the fault itself (its kinds, its ``KIND[@STEP]`` text) is a setting, parsed at the command's edge
# (runner.model.settings); what it does to a turn is here


def ask_index(plan: Plan) -> int | None:
    """The position of the ask among the plan's playable calls, or None when the CLI cannot ask."""
    return next((i for i, call in enumerate(plan.calls) if call.target.canonical == ASK_TOOL), None)


class FaultTrigger:
    """Decides, request by request, whether the fault applies. Fires once, then stays on."""

    def __init__(self, fault: ModelFault) -> None:
        self.fault = fault
        self.conversation_requests = 0
        self.fired_at: int | None = None  # the conversation request it first fired on
        self.injected = 0

    def check(self, step: int, plan: Plan) -> dict[str, JsonValue] | None:
        """Call once per generation request with its step and plan; the log entry when it faults. A side
        request is neither counted nor faulted, whenever it comes (see the module's docstring)."""
        if plan.side:
            return None
        self.conversation_requests += 1
        if self.fired_at is None and self._due(step, plan):
            self.fired_at = self.conversation_requests
        if self.fired_at is None:
            return None
        self.injected += 1
        return {**self.fault.to_json(), "injected": True, "fired_at_request": self.fired_at,
                "injection": self.injected, "request": self.conversation_requests}

    def _due(self, step: int, plan: Plan) -> bool:
        if self.fault.after_ask:
            index = ask_index(plan)
            return index is not None and step > index
        return self.conversation_requests >= (self.fault.step or 1)
