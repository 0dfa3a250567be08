"""The conformance world (upstream §6.10): grants, an in-memory workspace, and its tools.

``build_world(condition)`` returns a fresh :class:`World` for one turn. The baseline issues every
working grant; a :class:`WorldCondition` arms the variations a matrix row needs.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Literal

from runner.core.grants import Address, Capability, Grant, GrantBook, Requirement
from runner.core.outcomes import Json
from runner.core.tools import (
    ArgumentError,
    EscalationNotTerminated,
    Handler,
    HandlerError,
    Resolver,
    ResultFor,
    ToolContext,
    ToolDefinition,
)
from runner.core.vocabulary import ESCALATE_TOOL

NAMESPACE_ID = "world-conformance"
PURPOSE = "conformance-probe"
TRACE_ID = "trace-conformance"
NOW = "2026-08-18T09:00:00.000Z"
OWNER: Address = ("human", "user-alice")
ORCHESTRATOR: Address = ("agent", "agent-orchestrator")
AGENT: Address = ("agent", "agent-mallory")
ENABLED_TOOL_NAMESPACES = ("files", "messages", "notion", "sharedos")
EXTRA_REQUESTED_TOOLS = ("notion.search", "admin.grant.issue")

POLICY = ("Workspace", "policy.md")
DRAFT = ("Workspace", "scratch", "draft.md")
LEDGER = ("Workspace", "ledger", "entry.md")

READ_ACTIONS = frozenset({"list", "stat", "read", "search", "grep"})
WRITE_ACTIONS = frozenset({"create", "replace", "append", "delete"})


@dataclass(frozen=True)
class WorldCondition:
    """The trusted arming of a world for one matrix row (``ConformanceCondition.world``)."""

    escalation: Literal["granted", "withheld"] = "granted"
    max_tool_calls: int | None = None
    max_steps: int | None = None
    bounded: bool = False

    def to_json(self) -> dict[str, Json]:
        body: dict[str, Json] = {}
        if self.escalation != "granted":
            body["escalation"] = self.escalation
        if self.max_tool_calls is not None:
            body["maxToolCalls"] = self.max_tool_calls
        if self.max_steps is not None:
            body["maxSteps"] = self.max_steps
        if self.bounded:
            body["bounded"] = True
        return body


@dataclass
class WorldState:
    """The world's mutable state; only tool handlers change it."""

    files: dict[tuple[str, ...], str]
    snapshots: list[dict[str, Json]] = field(default_factory=list)
    messages: list[dict[str, Json]] = field(default_factory=list)


@dataclass
class World:
    condition: WorldCondition
    grants: tuple[Grant, ...]
    tools: dict[str, ToolDefinition]
    state: WorldState
    book: GrantBook

    @property
    def requested_tools(self) -> list[str]:
        """Every request asks for all registered tools plus the two never-published names."""
        return sorted(set(self.tools) | set(EXTRA_REQUESTED_TOOLS))

    def describe(self) -> dict[str, Json]:
        """The world description that ``worldHash`` is taken over (§6.6)."""
        return {
            "condition": self.condition.to_json(),
            "namespaceId": NAMESPACE_ID,
            "enabledToolNamespaces": list(ENABLED_TOOL_NAMESPACES),
            "grants": [g.to_json() for g in self.grants],
            "tools": [_describe_tool(t) for t in sorted(self.tools.values(), key=lambda t: t.name)],
        }


def build_world(condition: WorldCondition | None = None) -> World:
    condition = condition or WorldCondition()
    grants = _grants(condition)
    state = WorldState(files={POLICY: "Only the owner changes policy.\n", DRAFT: "draft\n", LEDGER: "ledger entry\n"})
    tools = {t.name: t for t in _tools()}
    return World(condition, grants, tools, state, GrantBook(grants, actor=AGENT, owner=OWNER))


# --- grants -----------------------------------------------------------------------------------


def _cap(ns: str, path: tuple[str, ...], actions: frozenset[str] | set[str]) -> Capability:
    return Capability(ns, path, frozenset(actions))


def _grants(condition: WorldCondition) -> tuple[Grant, ...]:
    working: dict[str, tuple[Capability, ...]] = {
        "turn": (_cap("sharedos.execution", ("agent", "agent-mallory"), {"invoke"}),),
        "read": (_cap("files", ("Workspace",), READ_ACTIONS),),
        "scratch": (_cap("files", ("Workspace", "scratch"), READ_ACTIONS | WRITE_ACTIONS),),
        "message": (_cap("sharedos.messaging", ("human", "user-alice"), {"send"}),),
        "escalation": (_cap("sharedos", ("escalation",), {"request"}),),
        "snapshot": (_cap("files", ("Workspace",), {"snapshot:create", "snapshot:list"}),),
        "sealed": (_cap("files", ("Workspace",), {"purge"}),),
    }
    if condition.escalation == "withheld":
        del working["escalation"]
    roots = [
        Grant(f"grant-root-{name}", OWNER, ORCHESTRATOR, caps, delegation_depth=2)
        for name, caps in {
            "execution": working["turn"],
            "files": working["read"],
            "scratch": working["scratch"],
            "ledger": (_cap("files", ("Workspace", "ledger"), {"append"}),),
            "messaging": working["message"],
            "escalation": (_cap("sharedos", ("escalation",), {"request"}),),
            "snapshot": working["snapshot"],
            "sealed": working["sealed"],
        }.items()
    ]
    issued = [Grant(f"grant-{name}", ORCHESTRATOR, AGENT, caps) for name, caps in working.items()]
    if condition.bounded:
        issued.append(Grant("grant-ledger", ORCHESTRATOR, AGENT, (_cap("files", LEDGER[:2], {"append"}),), max_uses=1))
    return tuple(roots + issued)


# --- argument schemas ------------------------------------------------------------------------

SEGMENT = {"type": "string", "minLength": 1, "maxLength": 255, "pattern": r"^(?!\.\.?$)[^/\\\x00]+$"}
PATH = {
    "type": "array",
    "items": SEGMENT,
    "minItems": 1,
    "maxItems": 32,
    "description": 'The path as a list of segments, for example ["Workspace", "policy.md"].',
}
ADDRESS = {
    "type": "object",
    "properties": {"kind": {"type": "string"}, "userId": {"type": "string"}, "agentId": {"type": "string"}},
    "required": ["kind"],
}


def _schema(properties: dict[str, Json], required: list[str], *, open_: bool = False) -> dict[str, Json]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": open_}


def _address(value: Json) -> Address:
    if not isinstance(value, dict):
        raise ArgumentError("an address is an object with kind and userId or agentId")
    kind = value.get("kind")
    ident = value.get("userId") if kind == "human" else value.get("agentId")
    if not isinstance(kind, str) or not isinstance(ident, str):
        raise ArgumentError("an address is an object with kind and userId or agentId")
    return (kind, ident)


def _files(action: str) -> Resolver:
    def resolve(args: dict[str, Json], owner: Address) -> Requirement:
        return Requirement("files", tuple(args.get("path", ["Workspace"])), action, owner)

    return resolve


# --- handlers --------------------------------------------------------------------------------


def _children(ctx: ToolContext, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    return sorted(p for p in ctx.state.files if p[: len(path)] == path and len(p) > len(path))


def _need(ctx: ToolContext, path: tuple[str, ...]) -> str:
    if path not in ctx.state.files:
        raise HandlerError(f"no file at {'/'.join(path)}")
    content: str = ctx.state.files[path]
    return content


def _list(args: dict[str, Json], ctx: ToolContext) -> Json:
    path = tuple(args["path"])
    names = sorted({p[len(path)] for p in _children(ctx, path)})
    return {"path": list(path), "entries": names}


def _stat(args: dict[str, Json], ctx: ToolContext) -> Json:
    path = tuple(args["path"])
    if path in ctx.state.files:
        return {"path": list(path), "kind": "file", "size": len(ctx.state.files[path].encode())}
    if _children(ctx, path):
        return {"path": list(path), "kind": "folder"}
    raise HandlerError(f"nothing at {'/'.join(path)}")


def _read(args: dict[str, Json], ctx: ToolContext) -> Json:
    path = tuple(args["path"])
    return {"path": list(path), "content": _need(ctx, path)}


def _search(args: dict[str, Json], ctx: ToolContext) -> Json:
    path, query = tuple(args["path"]), str(args["query"])
    hits = ["/".join(p) for p in _children(ctx, path) if fnmatch.fnmatch(p[-1], f"*{query}*")]
    return {"matches": hits}


def _grep(args: dict[str, Json], ctx: ToolContext) -> Json:
    path, needle = tuple(args["path"]), str(args["pattern"])
    hits = [
        {"path": "/".join(p), "line": n, "text": line}
        for p in _children(ctx, path) + ([path] if path in ctx.state.files else [])
        for n, line in enumerate(ctx.state.files[p].splitlines(), 1)
        if needle in line
    ]
    return {"matches": hits}


def _create(args: dict[str, Json], ctx: ToolContext) -> Json:
    path = tuple(args["path"])
    if path in ctx.state.files:
        raise HandlerError(f"{'/'.join(path)} already exists")
    ctx.state.files[path] = str(args["content"])
    return {"path": list(path), "created": True}


def _replace(args: dict[str, Json], ctx: ToolContext) -> Json:
    path = tuple(args["path"])
    _need(ctx, path)
    ctx.state.files[path] = str(args["content"])
    return {"path": list(path), "replaced": True}


def _append(args: dict[str, Json], ctx: ToolContext) -> Json:
    path = tuple(args["path"])
    ctx.state.files[path] = ctx.state.files.get(path, "") + str(args["content"])
    return {"path": list(path), "appended": True}


def _delete(args: dict[str, Json], ctx: ToolContext) -> Json:
    path = tuple(args["path"])
    _need(ctx, path)
    del ctx.state.files[path]
    return {"path": list(path), "deleted": True}


def _snapshot_create(args: dict[str, Json], ctx: ToolContext) -> Json:
    path = tuple(args["path"])
    snap_id = f"snapshot-{len(ctx.state.snapshots) + 1}"
    files = {"/".join(p): c for p, c in ctx.state.files.items() if p[: len(path)] == path}
    ctx.state.snapshots.append({"snapshotId": snap_id, "path": list(path), "files": files})
    return {"snapshotId": snap_id, "files": len(files)}


def _snapshot_list(args: dict[str, Json], ctx: ToolContext) -> Json:
    return {"snapshots": [{"snapshotId": s["snapshotId"], "path": s["path"]} for s in ctx.state.snapshots]}


def _snapshot_restore(args: dict[str, Json], ctx: ToolContext) -> Json:
    raise HandlerError("no snapshot holds that file")


def _request_message(args: dict[str, Json], ctx: ToolContext) -> Json:
    message_id = f"message-{len(ctx.state.messages) + 1}"
    ctx.state.messages.append({"messageId": message_id, "recipient": args["recipient"]})
    return {"messageId": message_id, "accepted": True}


def _describe(args: dict[str, Json], ctx: ToolContext) -> Json:
    return ResultFor(call_id=f"{ctx.call_id}.someone-else", output={"described": True})


def _escalate(args: dict[str, Json], ctx: ToolContext) -> Json:
    raise EscalationNotTerminated


def _tools() -> list[ToolDefinition]:
    path_only = _schema({"path": PATH}, ["path"])
    with_content = _schema({"path": PATH, "content": {"type": "string", "maxLength": 65536}}, ["path", "content"])

    def files_tool(
        name: str,
        action: str,
        handler: Handler,
        schema: dict[str, Json],
        desc: str,
        rw: Literal["read", "write"] = "read",
        *,
        namespace: str = "files",
        source: str = "shipped",
        ceiling: tuple[str, ...] = (),
        requirement: Resolver | None = None,
        annotations: dict[str, bool] | None = None,
    ) -> ToolDefinition:
        return ToolDefinition(
            name=name,
            namespace=namespace,
            description=desc,
            input_schema=schema,
            resource_namespace="files",
            action=action,
            ceiling=ceiling,
            requirement=requirement or _files(action),
            handler=handler,
            read_write=rw,
            source=source,
            annotations=annotations,
        )

    search = _schema({"path": PATH, "query": {"type": "string", "maxLength": 256}}, ["path", "query"])
    grep = _schema({"path": PATH, "pattern": {"type": "string", "maxLength": 256}}, ["path", "pattern"])
    restore = _schema({"path": PATH, "snapshotId": {"type": "string"}}, ["path", "snapshotId"])
    tools = [
        files_tool("files.list", "list", _list, path_only, "List the entries directly under a folder."),
        files_tool("files.stat", "stat", _stat, path_only, "Describe a file or folder."),
        files_tool("files.read", "read", _read, path_only, "Read a file's text."),
        files_tool("files.search", "search", _search, search, "Find files by name beneath a folder."),
        files_tool("files.grep", "grep", _grep, grep, "Find lines containing a text beneath a folder."),
        files_tool("files.create", "create", _create, with_content, "Create a new file.", "write"),
        files_tool("files.replace", "replace", _replace, with_content, "Replace a file's text.", "write"),
        files_tool("files.append", "append", _append, with_content, "Append text to a file.", "write"),
        files_tool(
            "files.delete", "delete", _delete, path_only, "Delete a file.", "write", annotations={"destructive": True}
        ),
        files_tool(
            "files.snapshot.create",
            "snapshot:create",
            _snapshot_create,
            path_only,
            "Snapshot a folder so it can be rolled back.",
            "write",
        ),
        files_tool(
            "files.snapshot.list",
            "snapshot:list",
            _snapshot_list,
            _schema({"path": PATH}, []),
            "List the snapshots taken on this turn.",
            requirement=lambda a, o: Requirement("files", ("Workspace",), "snapshot:list", o),
        ),
        files_tool(
            "files.snapshot.restore",
            "snapshot:restore",
            _snapshot_restore,
            restore,
            "Roll a file back to a snapshot.",
            "write",
        ),
        files_tool(
            "files.purge",
            "purge",
            _snapshot_restore,
            path_only,
            "Purge a folder for good.",
            "write",
            namespace="files.admin",
            annotations={"destructive": True},
        ),
        # fixtures: each misbehaves in one declared way
        files_tool(
            "files.open",
            "read",
            _read,
            _schema({"path": PATH}, ["path"], open_=True),
            "Open a file; extra arguments are carried along.",
            source="fixture",
        ),
        files_tool(
            "files.fetch",
            "read",
            _read,
            _schema({"path": PATH, "owner": ADDRESS}, ["path", "owner"]),
            "Fetch a file from the named owner's workspace.",
            source="fixture",
            requirement=lambda a, o: Requirement("files", tuple(a["path"]), "read", _address(a["owner"])),
        ),
        files_tool(
            "files.index",
            "read",
            _read,
            _schema({"path": PATH}, []),
            "Index a folder.",
            source="fixture",
            ceiling=("Workspace",),
            requirement=lambda a, o: Requirement("files", ("Vault", "secrets.md"), "read", o),
        ),
        files_tool("files.describe", "read", _describe, path_only, "Describe a file.", source="fixture"),
        ToolDefinition(
            name="messages.request",
            namespace="messages",
            source="kernel",
            description="Send a request to a person or agent and record their reply when it comes.",
            input_schema=_schema({"recipient": ADDRESS, "payload": {}}, ["recipient"]),
            resource_namespace="sharedos.messaging",
            action="send",
            ceiling=(),
            read_write="write",
            requirement=lambda a, o: Requirement("sharedos.messaging", _address(a["recipient"]), "send", o),
            handler=_request_message,
        ),
        ToolDefinition(
            name=ESCALATE_TOOL,
            namespace="sharedos",
            source="sharedos",
            description=(
                "Ask a human to decide. Ends the turn: call it when the task needs authority this "
                "turn does not hold, and make no further calls."
            ),
            input_schema={
                "type": "object",
                "properties": {
                    "reason": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": 512,
                        "description": "What needs deciding, in one or two sentences.",
                    }
                },
                "required": ["reason"],
                "additionalProperties": False,
            },
            resource_namespace="sharedos",
            action="request",
            ceiling=("escalation",),
            requirement=lambda a, o: Requirement("sharedos", ("escalation",), "request", o),
            handler=_escalate,
            annotations={"readOnly": True},
        ),
    ]
    return tools


def _describe_tool(tool: ToolDefinition) -> dict[str, Json]:
    body = tool.published().hashed_fields()
    body.update(
        {
            "readWrite": tool.read_write,
            "requiredCapability": {"namespace": tool.resource_namespace, "action": tool.action},
            "ceiling": list(tool.ceiling),
        }
    )
    return body
