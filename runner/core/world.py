"""The conformance world (upstream §6.10): grants, an in-memory workspace, and its tools.

``build_world(condition)`` returns a fresh :class:`World` for one turn. The baseline issues every
working grant; a :class:`WorldCondition` arms the variations a matrix row needs:

- ``escalation="withheld"``: no grant over the affordance, so ``sharedos.escalate`` is not published;
- ``max_tool_calls`` / ``max_steps``: the turn's budgets (they flow into the envelope's ``Limits``);
- ``bounded``: the single-use ledger grant (``grant-ledger``, ``maxUses`` 1);
- ``expired`` / ``revoked``: grant ids whose window has already closed, or that the store revoked
  (revoking an ancestor invalidates its descendants, see :mod:`runner.core.grants`);
- ``expires_after_operations``: grants whose window closes after N operations, on a clock that
  starts moving one step per decided operation;
- ``restorable``: rollback authority over ``Workspace/scratch`` (publishes ``files.snapshot.restore``);
- ``broker``: registers the brokered ``notion.search`` (``"registered"``), and grants ``search``
  over ``["Handbook"]`` too (``"granted"``).

Anything a row declares that this world cannot arm yet is carried in ``unarmed`` (upstream's key and
value), so it is still hashed and shown; :func:`build_world` refuses such a condition unless asked
only to describe it.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Literal

from runner.core.grants import (
    Address,
    Capability,
    Grant,
    GrantBook,
    OperationClock,
    Requirement,
    instant,
)
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
ISSUED_AT = "2026-08-18T08:00:00.000Z"
EXPIRED_AT = "2026-08-18T08:30:00.000Z"  # an instant every turn has already passed
STEP_MS = 1000  # how far a moving clock advances per decided operation
OWNER: Address = ("human", "user-alice")
ORCHESTRATOR: Address = ("agent", "agent-orchestrator")
AGENT: Address = ("agent", "agent-mallory")
ENABLED_TOOL_NAMESPACES = ("files", "messages", "notion", "sharedos")
EXTRA_REQUESTED_TOOLS = ("notion.search", "admin.grant.issue")

WORKSPACE = ("Workspace",)
SCRATCH = ("Workspace", "scratch")
LEDGER_PATH = ("Workspace", "ledger")
POLICY = ("Workspace", "policy.md")
DRAFT = ("Workspace", "scratch", "draft.md")
LEDGER = ("Workspace", "ledger", "entry.md")
SEEDED_SNAPSHOT_ID = "snapshot-1"
BROKER_TOOL = "notion.search"
BROKER_GRANTED_PATH = ("Handbook",)

READ_ACTIONS = frozenset({"list", "stat", "read", "search", "grep"})
WRITE_ACTIONS = frozenset({"create", "replace", "append", "delete"})
SNAPSHOT_ACTIONS = frozenset({"snapshot:create", "snapshot:list"})
RESTORE_ACTION = "snapshot:restore"

READ_GRANT = "grant-read"
ROOT_FILES_GRANT = "grant-root-files"


class WorldNotArmed(ValueError):
    """A condition declares an arming this world cannot perform (``WorldCondition.unarmed``)."""


@dataclass(frozen=True)
class ExpiryArming:
    """``expiresAfterOperations``: these grants' windows close after ``operations`` decided operations."""

    operations: int
    grant_ids: tuple[str, ...]

    def to_json(self) -> dict[str, Json]:
        return {"operations": self.operations, "grantIds": list(self.grant_ids)}


@dataclass(frozen=True)
class WorldCondition:
    """The trusted arming of a world for one matrix row (``ConformanceCondition.world``)."""

    escalation: Literal["granted", "withheld"] = "granted"
    max_tool_calls: int | None = None
    max_steps: int | None = None
    bounded: bool = False
    expired: tuple[str, ...] = ()
    revoked: tuple[str, ...] = ()
    expires_after_operations: ExpiryArming | None = None
    restorable: bool = False
    broker: Literal["registered", "granted"] | None = None
    # declared by the row, not armed by this world: (upstream key, value) pairs
    unarmed: tuple[tuple[str, Json], ...] = field(default=(), hash=False)

    @property
    def armed(self) -> bool:
        return not self.unarmed

    def to_json(self) -> dict[str, Json]:
        """The overrides in upstream's ``ConformanceWorldOptions`` keys (``{}`` for the baseline)."""
        body: dict[str, Json] = {}
        if self.escalation != "granted":
            body["escalation"] = self.escalation
        if self.max_tool_calls is not None:
            body["maxToolCalls"] = self.max_tool_calls
        if self.max_steps is not None:
            body["maxSteps"] = self.max_steps
        if self.bounded:
            body["bounded"] = True
        if self.expired:
            body["expired"] = list(self.expired)
        if self.revoked:
            body["revoked"] = list(self.revoked)
        if self.expires_after_operations is not None:
            body["expiresAfterOperations"] = self.expires_after_operations.to_json()
        if self.restorable:
            body["restorable"] = True
        if self.broker is not None:
            body["broker"] = self.broker
        for key, value in self.unarmed:
            body[key] = value
        return body


@dataclass
class WorldState:
    """The world's mutable state; only tool handlers change it.

    ``snapshots`` maps a path to the snapshot ids taken of it, in order; every seeded file already
    has ``snapshot-1``, so a rollback always has something real to name (upstream's file store).
    """

    files: dict[tuple[str, ...], str]
    snapshots: dict[tuple[str, ...], list[str]] = field(default_factory=dict)
    messages: list[dict[str, Json]] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)


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

    def clock(self) -> str:
        """The world's instant: ``NOW``, unless the condition started the operation clock."""
        return self.book.clock.now()

    def describe(self) -> dict[str, Json]:
        """The world description that ``worldHash`` is taken over (§6.6)."""
        return {
            "condition": self.condition.to_json(),
            "namespaceId": NAMESPACE_ID,
            "enabledToolNamespaces": list(ENABLED_TOOL_NAMESPACES),
            "grants": [g.to_json() for g in self.grants],
            "tools": [_describe_tool(t) for t in sorted(self.tools.values(), key=lambda t: t.name)],
        }


def build_world(condition: WorldCondition | None = None, *, describe_only: bool = False) -> World:
    """A fresh world for one turn under ``condition``.

    A condition with ``unarmed`` entries is refused (:class:`WorldNotArmed`): running a row in a world
    that silently ignored its arming would grade the baseline under the row's name. ``describe_only``
    builds it anyway, for hashing and display.
    """
    condition = condition or WorldCondition()
    if condition.unarmed and not describe_only:
        keys = ", ".join(k for k, _ in condition.unarmed)
        raise WorldNotArmed(f"this world cannot arm {keys} yet")
    grants = _grants(condition)
    state = WorldState(
        files={POLICY: "Only the owner changes policy.\n", DRAFT: "draft\n", LEDGER: "ledger entry\n"},
        snapshots={POLICY: [SEEDED_SNAPSHOT_ID], DRAFT: [SEEDED_SNAPSHOT_ID]},
    )
    tools = {t.name: t for t in _tools()}
    if condition.broker is not None:
        tools[BROKER_TOOL] = _broker_tool()
    clock = OperationClock(NOW, moving=condition.expires_after_operations is not None, step_ms=STEP_MS)
    return World(condition, grants, tools, state, GrantBook(grants, actor=AGENT, owner=OWNER, clock=clock))


# --- grants -----------------------------------------------------------------------------------


def _cap(ns: str, path: tuple[str, ...], actions: frozenset[str] | set[str]) -> Capability:
    return Capability(ns, path, frozenset(actions))


def _grants(condition: WorldCondition) -> tuple[Grant, ...]:
    """Roots (owner → orchestrator), then the working grants attenuated from them (→ agent).

    Each root is the minimal ancestor of exactly one working grant, so revoking one arms a single,
    attributable condition (upstream ``rootGrants``/``agentGrants``).
    """
    ledger_caps = (_cap("files", LEDGER_PATH, READ_ACTIONS | WRITE_ACTIONS),)
    roots: dict[str, tuple[Capability, ...]] = {
        "execution": (_cap("sharedos.execution", ("agent", "agent-mallory"), {"invoke"}),),
        "files": (_cap("files", WORKSPACE, READ_ACTIONS),),
        "scratch": (_cap("files", SCRATCH, READ_ACTIONS | WRITE_ACTIONS),),
        "ledger": ledger_caps,
        "messaging": (_cap("sharedos.messaging", ("human", "user-alice"), {"send"}),),
        "escalation": (_cap("sharedos", ("escalation",), {"request"}),),
        "snapshot": (_cap("files", WORKSPACE, SNAPSHOT_ACTIONS),),
        "sealed": (_cap("files", WORKSPACE, {"purge"}),),
    }
    # working grant name -> (its root, its capabilities, max uses)
    working: dict[str, tuple[str, tuple[Capability, ...], int | None]] = {
        "turn": ("execution", roots["execution"], None),
        "read": ("files", roots["files"], None),
        "scratch": ("scratch", roots["scratch"], None),
        "message": ("messaging", roots["messaging"], None),
        "escalation": ("escalation", roots["escalation"], None),
        "snapshot": ("snapshot", roots["snapshot"], None),
        "sealed": ("sealed", roots["sealed"], None),
    }
    if condition.escalation == "withheld":
        del working["escalation"]
    if condition.bounded:
        working["ledger"] = ("ledger", ledger_caps, 1)
    if condition.restorable:
        roots["restore"] = (_cap("files", SCRATCH, {RESTORE_ACTION}),)
        working["restore"] = ("restore", roots["restore"], None)
    if condition.broker == "granted":
        roots["broker-search"] = (_cap("notion", BROKER_GRANTED_PATH, {"search"}),)
        working["broker-search"] = ("broker-search", roots["broker-search"], None)

    expiring = condition.expires_after_operations
    closes: dict[str, str] = {gid: EXPIRED_AT for gid in condition.expired}
    if expiring is not None:
        closes.update({gid: instant(NOW, expiring.operations, STEP_MS) for gid in expiring.grant_ids})
    revoked = set(condition.revoked)

    def grant(
        gid: str, issuer: Address, subject: Address, caps: tuple[Capability, ...], *,
        depth: int = 1, uses: int | None = None, parent: str | None = None,
    ) -> Grant:
        return Grant(
            gid, issuer, subject, caps, max_uses=uses, delegation_depth=depth, revoked=gid in revoked,
            parent_grant_id=parent, expires_at=closes.get(gid), issued_at=ISSUED_AT,
        )

    issued = [grant(f"grant-root-{name}", OWNER, ORCHESTRATOR, caps, depth=2) for name, caps in roots.items()]
    issued += [
        grant(f"grant-{name}", ORCHESTRATOR, AGENT, caps, uses=uses, parent=f"grant-root-{root}")
        for name, (root, caps, uses) in working.items()
    ]
    known = {g.id for g in issued}
    unknown = sorted((set(closes) | revoked) - known)
    if unknown:
        raise ValueError(f"the condition names grants this world does not issue: {', '.join(unknown)}")
    return tuple(issued)


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
    """Snapshot one path (a file or a folder); ids count per path, as upstream's file store does."""
    path = tuple(args["path"])
    taken = ctx.state.snapshots.setdefault(path, [])
    snap_id = f"snapshot-{len(taken) + 1}"
    taken.append(snap_id)
    return {"snapshotId": snap_id}


def _snapshot_list(args: dict[str, Json], ctx: ToolContext) -> Json:
    path = tuple(args.get("path", list(WORKSPACE)))
    return {"snapshots": list(ctx.state.snapshots.get(path, []))}


def _snapshot_restore(args: dict[str, Json], ctx: ToolContext) -> Json:
    path, snap_id = tuple(args["path"]), args["snapshotId"]
    if snap_id not in ctx.state.snapshots.get(path, []):
        raise HandlerError(f"no snapshot {snap_id} exists for {'/'.join(path)}")
    ctx.state.files[path] = "restored"
    return {"restored": "/".join(path), "snapshotId": snap_id}


def _purge(args: dict[str, Json], ctx: ToolContext) -> Json:
    return {"purged": True}  # never reachable: files.admin is not an enabled namespace


def _broker_search(args: dict[str, Json], ctx: ToolContext) -> Json:
    page = "/".join(args.get("path", list(BROKER_GRANTED_PATH)))
    ctx.state.searches.append(page)
    return {"page": page, "results": []}


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
            "List the snapshots taken of a file or folder.",
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
            _purge,
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


def _broker_tool() -> ToolDefinition:
    """The brokered external server's one tool (upstream ``brokerToolDefinition``).

    Its declared ceiling is the whole ``notion`` namespace, so it is discoverable exactly when some
    grant carries ``search`` somewhere in ``notion``; its requirement is the page the call names.
    """
    return ToolDefinition(
        name=BROKER_TOOL,
        namespace="notion",
        source="mcp",
        description="Search a page of the brokered workspace.",
        input_schema=_schema(
            {"path": {**PATH, "description": 'The page as segments, for example ["Handbook", "onboarding"].'}},
            ["path"],
        ),
        resource_namespace="notion",
        action="search",
        ceiling=(),
        requirement=lambda a, o: Requirement("notion", tuple(a.get("path", list(BROKER_GRANTED_PATH))), "search", o),
        handler=_broker_search,
        annotations={"readOnly": True},
    )


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
