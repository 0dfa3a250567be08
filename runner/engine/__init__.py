"""The engine connection, a floor of its own: connecting to a Docker Engine (or one that speaks its API), its typed
errors, and the bounded retry every engine call goes through. The image builder and the sandbox both stand on it."""

from runner.engine.connection import (
    ATTEMPTS,
    DEFAULT_SOCKET,
    EngineCallFailed,
    EngineClient,
    EngineError,
    EngineUnavailable,
    call_with_retry,
    connect,
    engine_address,
    is_transient,
)

__all__ = [
    "ATTEMPTS",
    "DEFAULT_SOCKET",
    "EngineCallFailed",
    "EngineClient",
    "EngineError",
    "EngineUnavailable",
    "call_with_retry",
    "connect",
    "engine_address",
    "is_transient",
]
