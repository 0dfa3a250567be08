"""SharedOS's wire-protocol epoch (ADR 0027 "wire-protocol compatibility epochs"): which one a turn speaks, and
what a pin of another one gets. Pure: no I/O, no SDK.

One build speaks one epoch, matched exactly: there is no downgrade, no dual writing and no field stripping
(reference epoch2 §2.1). The epoch is chosen per cell (``--protocol 1|2``) and pinned with it; the MCP surface
(:mod:`runner.mcp.epoch`) stamps and checks it, and the record's ``version`` says it.
"""

from __future__ import annotations

from enum import StrEnum

from runner.core.outcomes import JsonValue

PROTOCOL_VERSION_META = "sharedos/protocolVersion"  # the _meta key an epoch-2 message carries and a client pins
UNSUPPORTED_PROTOCOL_VERSION = "unsupported_protocol_version"  # the stable code of a refused pin


class ProtocolEpoch(StrEnum):
    """The epochs this runner can speak. The value is the wire string: ``"2"``, never the number 2."""

    ONE = "1"  # what upstream released: 1.0.0-preview's protocol, unchanged since alpha.0
    TWO = "2"  # ADR 0027, in the CHANGELOG's Unreleased section (e35860cb): every MCP message stamped

    @property
    def stamps(self) -> bool:
        """Whether this epoch's MCP messages carry ``_meta["sharedos/protocolVersion"]`` and check a client's pin.

        Epoch 1 has no such key at all: a server of the released epoch neither stamps nor reads one, so a pin a
        client sends under epoch 1 is ignored, exactly as upstream's released server ignores it."""
        return self is not ProtocolEpoch.ONE


# The default of ``--protocol``: the epoch upstream has released. 1.0.0-preview (``SHAREDOS_VERSION``,
# common.ts@381e995d) is the newest release and its protocol is still "1": the renames of alpha.4 left it at "1",
# and epoch 2 (ADR 0027, PROTOCOL_VERSION "2") is only in the CHANGELOG's ``Unreleased`` section of a 2026-10-04
# PR branch (CHANGELOG.md@e35860cb; reference epoch2 §0, §1). Move this to TWO the day upstream releases it.
RELEASED_EPOCH = ProtocolEpoch.ONE


def unsupported_pin(pinned: JsonValue, epoch: ProtocolEpoch) -> dict[str, JsonValue] | None:
    """What a client's pin ``pinned`` gets from a server of ``epoch``: None when it is accepted, else the error's
    ``{message, data}`` (upstream's ``assertProtocolVersion`` diagnostic and its stable code).

    The match is exact: ``"2"`` only, never the number 2, never ``"99"``. A server of an epoch that does not stamp
    (epoch 1) accepts anything: it does not know the key."""
    if not epoch.stamps or pinned == epoch.value:
        return None
    shown = pinned if isinstance(pinned, str) else repr(pinned)
    return {
        "message": f'Unsupported SharedOS protocol version "{shown}"; supported version is "{epoch.value}".',
        # receivedVersion: [inferred] the MCP test asserts code and supportedVersion only; core's own rejection
        # carries receivedVersion, and a client reading why it was refused is better off with it
        "data": {"code": UNSUPPORTED_PROTOCOL_VERSION, "supportedVersion": epoch.value, "receivedVersion": pinned},
    }


def parse_epoch(text: str) -> ProtocolEpoch:
    """``"1"`` or ``"2"``; a :class:`ValueError` naming the epochs for anything else."""
    try:
        return ProtocolEpoch(text)
    except ValueError:
        known = " or ".join(e.value for e in ProtocolEpoch)
        raise ValueError(f"a SharedOS protocol epoch is {known}, not {text!r}") from None
