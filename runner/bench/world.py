"""The world the bench serves: the escalation case's baseline catalogue, latch and instructions."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from runner.core.catalogue import Catalogue
    from runner.core.latch import EscalationLatch


def baseline_authority(budget: int | None) -> tuple[Catalogue, EscalationLatch, str]:
    """The escalation case's (baseline) world: its catalogue, its latch over the envelope, the instructions.

    ``budget`` raises the envelope's tool-call budget so every timed call is a real read (the default
    budget of 16 would turn the rest into refusals, which cost less)."""
    import runner
    from runner.conformance.cases import get_case
    from runner.conformance.prompt import instructions_for
    from runner.core.envelope import Envelope, ServerIdentity, StepLimits
    from runner.core.latch import EscalationLatch
    from runner.core.world import build_world

    world = build_world(get_case("escalation").condition.world)
    limits = StepLimits(max_steps=16, max_tool_calls=budget) if budget is not None else None
    envelope = Envelope(
        world, "escalation.baseline.reference", ServerIdentity("runner.reference.mcp", runner.__version__),
        limits=limits, clock=world.clock,
    )
    return envelope.catalogue, EscalationLatch(envelope, envelope.catalogue.names), instructions_for(world.grants)
