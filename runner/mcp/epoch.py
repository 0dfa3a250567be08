"""The protocol epoch on the MCP surface (ADR 0027; reference epoch2 §2.2-2.3): one SDK middleware per session
that refuses a client's pin of another epoch before anything runs, and stamps the epoch on what the server
answers.

Under an epoch that stamps (2), and only then:

- ``initialize``, ``tools/list`` and every ``tools/call`` result (successes included; a refusal keeps its
  ``sharedos/status`` and ``sharedos/code`` beside it) carry ``_meta["sharedos/protocolVersion"]``. MCP's own
  date ``protocolVersion`` is untouched and negotiated as before.
- A request in :data:`PINNED_METHODS` whose params pin ``_meta["sharedos/protocolVersion"]`` to anything but the
  server's epoch is answered with a JSON-RPC error -32602 whose ``data.code`` is ``unsupported_protocol_version``;
  the middleware raises before the handler, so neither the catalogue nor the latch nor the envelope sees it, and a
  refused ``initialize`` leaves the session uninitialized. No pin is fine: ordinary MCP clients (every vendor CLI)
  pin nothing.

The middleware reads and writes the wire dicts the SDK's chain carries (it sits outside the handlers), so every
answer of the three methods passes through the one stamp, whatever produced it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import mcp_types as types
from mcp.server import ServerRequestContext
from mcp.server.context import CallNext, HandlerResult
from mcp.shared.exceptions import MCPError

from runner.core.outcomes import JsonValue
from runner.core.protocol import PROTOCOL_VERSION_META, ProtocolEpoch, unsupported_pin

STAMPED_METHODS = frozenset({"initialize", "tools/list", "tools/call"})
# Where a client's pin is checked. ADR 0027 and upstream's compatibility.test.ts@e35860cb name initialize and
# tools/call; a pin on tools/list is mentioned nowhere ([inferred]: upstream does not check it), so it is not
# checked here either. Add "tools/list" to check it too.
PINNED_METHODS = frozenset({"initialize", "tools/call"})

RefusalSink = Callable[[str, JsonValue], None]  # (method, the pin received): told of each refused pin


def pinned(params: Mapping[str, object] | None) -> tuple[bool, JsonValue]:
    """Whether ``params`` pin an epoch, and the value pinned (any JSON value: the check says what is wrong)."""
    meta = params.get("_meta") if params is not None else None
    if isinstance(meta, Mapping) and PROTOCOL_VERSION_META in meta:
        value: JsonValue = meta[PROTOCOL_VERSION_META]  # parsed JSON: a JSON value
        return True, value
    return False, None


def pin_error(method: str, params: Mapping[str, object] | None, epoch: ProtocolEpoch) -> MCPError | None:
    """The JSON-RPC error a request gets for its pin (None: it goes on): -32602 with ``unsupported_protocol_version``
    for a pin of another epoch on a checked method, under an epoch that stamps."""
    if method not in PINNED_METHODS:
        return None
    present, value = pinned(params)
    refusal = unsupported_pin(value, epoch) if present else None
    if refusal is None:
        return None
    return MCPError(code=types.INVALID_PARAMS, message=str(refusal["message"]), data=refusal["data"])


def stamp(method: str, result: HandlerResult, epoch: ProtocolEpoch) -> HandlerResult:
    """``result`` (a wire dict of ``method``) with the epoch in its ``_meta``, keys already there kept."""
    if not epoch.stamps or method not in STAMPED_METHODS or not isinstance(result, dict):
        return result
    meta = result.get("_meta")
    return {**result, "_meta": {**(meta if isinstance(meta, dict) else {}), PROTOCOL_VERSION_META: epoch.value}}


class EpochGate:
    """The session's middleware for ``epoch``: a pin refused before the handler, the answer stamped after it."""

    def __init__(self, epoch: ProtocolEpoch, on_refused: RefusalSink | None = None) -> None:
        self.epoch = epoch
        self.on_refused = on_refused

    async def __call__(self, ctx: ServerRequestContext[object, object], call_next: CallNext) -> HandlerResult:
        if ctx.request_id is None:  # a notification: nothing to answer, nothing to stamp
            return await call_next(ctx)
        error = pin_error(ctx.method, ctx.params, self.epoch)
        if error is not None:
            if self.on_refused is not None:
                self.on_refused(ctx.method, pinned(ctx.params)[1])
            raise error
        return stamp(ctx.method, await call_next(ctx), self.epoch)


__all__ = ["PINNED_METHODS", "STAMPED_METHODS", "EpochGate", "pin_error", "pinned", "stamp"]
