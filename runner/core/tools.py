"""Tool definitions, their published form, and portable names (upstream §3.5, §6.6, §6.10).

A :class:`ToolDefinition` is what the world registers: its schema, the capability it is discovered
by, how a call's arguments resolve to the exact resource it needs (``requirement``) and what it
does once authorized (``handler``). A :class:`PublishedTool` is what a turn's catalogue serves.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import TYPE_CHECKING, Literal, Protocol, TypeAlias

if TYPE_CHECKING:
    import jsonschema.protocols

from runner.core.grants import Address, Requirement
from runner.core.outcomes import JsonValue
from runner.core.world_state import WorldState

TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
MAX_ARGUMENT_DEPTH = 32


class ArgumentError(ValueError):
    """``parseArguments`` rejected the call: ``invalid_tool_arguments``."""


class HandlerError(RuntimeError):
    """The handler itself failed: ``tool_execution_failed``."""


class ToolFailure(RuntimeError):
    """The handler failed under a code of its own (``failed``), naming the ``cause`` behind it: e.g.
    ``messages.request`` failing ``message_request_not_accepted`` because the transport said
    ``route_lease_revoked`` (ADR 0025)."""

    def __init__(self, code: str, text: str, cause: str | None = None) -> None:
        super().__init__(text)
        self.code, self.text, self.cause = code, text, cause


@dataclass(frozen=True)
class ToolContext:
    """What a handler may touch: the world's mutable state and the call's identity."""

    call_id: str
    owner: Address
    state: WorldState


Resolver: TypeAlias = Callable[[dict[str, JsonValue], Address], Requirement]
# a handler answers with the call's output, or with a ResultFor naming the call it belongs to
Handler: TypeAlias = Callable[[dict[str, JsonValue], ToolContext], "JsonValue | ResultFor"]


def path_argument(args: dict[str, JsonValue], default: tuple[str, ...] | None = None) -> tuple[str, ...]:
    """A call's ``path`` argument as its segments; ``default`` when the call names none, a KeyError when there is
    no default. The tool's schema has made it a list of strings: anything else is a TypeError."""
    value = args["path"] if default is None else args.get("path", list(default))
    segments = tuple(s for s in value if isinstance(s, str)) if isinstance(value, list) else ()
    if not isinstance(value, list) or len(segments) != len(value):
        raise TypeError("path must be a list of segments")
    return segments


@dataclass(frozen=True)
class ToolDefinition:
    name: str
    namespace: str  # the tool namespace (the second gate)
    description: str
    input_schema: dict[str, JsonValue]
    resource_namespace: str  # the capability it is discovered by
    action: str
    ceiling: tuple[str, ...]  # resolved requirements must stay beneath this path
    requirement: Resolver
    handler: Handler
    read_write: Literal["read", "write"] = "read"
    source: str = "shipped"
    output_schema: dict[str, JsonValue] | None = None
    annotations: dict[str, bool] | None = None

    def __post_init__(self) -> None:
        if not TOOL_NAME.match(self.name):
            raise ValueError(f"tool name {self.name!r} does not match {TOOL_NAME.pattern}")

    def parse_arguments(self, arguments: JsonValue) -> dict[str, JsonValue]:
        """Validate a call's arguments against the input schema (``invalid_tool_arguments`` on failure)."""
        if not isinstance(arguments, dict):
            raise ArgumentError("arguments must be a JSON object")
        if _depth(arguments) > MAX_ARGUMENT_DEPTH:
            raise ArgumentError(f"arguments nest deeper than {MAX_ARGUMENT_DEPTH} levels")
        import jsonschema  # here, not at import: the tool definitions are read by commands that validate nothing

        try:
            self._validator.validate(arguments)
        except jsonschema.ValidationError as err:
            where = "/".join(str(p) for p in err.absolute_path) or "(top level)"
            raise ArgumentError(f"{where}: {err.message}") from None
        return arguments

    @cached_property
    def _validator(self) -> jsonschema.protocols.Validator:
        """Built once per tool: checking the schema on every call cost most of a call's time."""
        import jsonschema.validators

        cls = jsonschema.validators.validator_for(self.input_schema)
        cls.check_schema(self.input_schema)
        return cls(self.input_schema)

    def published(self) -> PublishedTool:
        annotations: dict[str, bool] = {
            "readOnlyHint": (self.annotations or {}).get("readOnly", self.read_write == "read")
        }
        for key in ("destructive", "idempotent"):
            if self.annotations and key in self.annotations:
                annotations[f"{key}Hint"] = self.annotations[key]
        return PublishedTool(
            name=self.name,
            description=self.description,
            input_schema=self.input_schema,
            output_schema=self.output_schema,
            annotations=annotations,
            namespace=self.namespace,
            source=self.source,
        )


@dataclass(frozen=True)
class PublishedTool:
    """``PublishedToolDefinition``: the catalogue entry, and the only form the hash is taken over."""

    name: str
    description: str
    input_schema: dict[str, JsonValue]
    output_schema: dict[str, JsonValue] | None
    annotations: dict[str, bool]
    namespace: str
    source: str

    def hashed_fields(self) -> dict[str, JsonValue]:
        """Exactly ``CATALOG_HASH_FIELDS``, absent keys dropped (§6.6)."""
        body: dict[str, JsonValue] = {
            "annotations": {**self.annotations},
            "description": self.description,
            "inputSchema": self.input_schema,
            "metadata": {"namespace": self.namespace, "source": self.source},
            "name": self.name,
        }
        if self.output_schema is not None:
            body["outputSchema"] = self.output_schema
        return body


def portable_name(name: str) -> str:
    """``portableToolName``: dots to underscores, the only rename at the MCP boundary."""
    return name.replace(".", "_")


def _depth(value: JsonValue, level: int = 1) -> int:
    if level > MAX_ARGUMENT_DEPTH + 1:
        return level
    if isinstance(value, dict):
        return max((_depth(v, level + 1) for v in value.values()), default=level)
    if isinstance(value, list):
        return max((_depth(v, level + 1) for v in value), default=level)
    return level


class ToolProvider(Protocol):
    """A per-context tool provider (upstream ``ContextToolProvider``): what it lists can change between
    listings, so a turn lists it once and answers from that listing for the whole turn (ADR 0026)."""

    @property
    def id(self) -> str: ...

    def list_tools(self) -> tuple[ToolDefinition, ...]:
        """The provider's tools now (a listing: it may move afterwards)."""
        ...

    def declared(self) -> tuple[ToolDefinition, ...]:
        """The tools as the provider is registered with (what the world description hashes); lists nothing."""
        ...


@dataclass(frozen=True)
class ResultFor:
    """A handler's answer naming the call it belongs to; a mismatch is ``invalid_tool_result``."""

    call_id: str
    output: JsonValue


class EscalationNotTerminated(RuntimeError):
    """The registered handler of ``sharedos.escalate`` was reached (§4.4)."""
