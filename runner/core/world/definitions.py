"""The world's tool definitions: argument schemas, the shipped and fixture tools, the brokered one."""

from __future__ import annotations

from typing import Literal

import runner.core.world.workspace as ws
from runner.core.grants import Address, Requirement
from runner.core.outcomes import JsonValue
from runner.core.tools import ArgumentError, Handler, Resolver, ToolDefinition, path_argument
from runner.core.vocabulary import ESCALATE_TOOL
from runner.core.world.constants import BROKER_GRANTED_PATH, BROKER_TOOL

SEGMENT: dict[str, JsonValue] = {
    "type": "string",
    "minLength": 1,
    "maxLength": 255,
    "pattern": r"^(?!\.\.?$)[^/\\\x00]+$",
}
PATH: dict[str, JsonValue] = {
    "type": "array",
    "items": SEGMENT,
    "minItems": 1,
    "maxItems": 32,
    "description": 'The path as a list of segments, for example ["Workspace", "policy.md"].',
}
ADDRESS: dict[str, JsonValue] = {
    "type": "object",
    "properties": {"kind": {"type": "string"}, "userId": {"type": "string"}, "agentId": {"type": "string"}},
    "required": ["kind"],
}


def _schema(properties: dict[str, JsonValue], required: list[str], *, open_: bool = False) -> dict[str, JsonValue]:
    return {"type": "object", "properties": properties, "required": [*required], "additionalProperties": open_}


def _address(value: JsonValue) -> Address:
    if not isinstance(value, dict):
        raise ArgumentError("an address is an object with kind and userId or agentId")
    kind = value.get("kind")
    ident = value.get("userId") if kind == "human" else value.get("agentId")
    if not isinstance(kind, str) or not isinstance(ident, str):
        raise ArgumentError("an address is an object with kind and userId or agentId")
    return (kind, ident)


def _files(action: str) -> Resolver:
    def resolve(args: dict[str, JsonValue], owner: Address) -> Requirement:
        return Requirement("files", path_argument(args, ("Workspace",)), action, owner)

    return resolve


def registered_tools() -> list[ToolDefinition]:
    path_only = _schema({"path": PATH}, ["path"])
    with_content = _schema({"path": PATH, "content": {"type": "string", "maxLength": 65536}}, ["path", "content"])

    def files_tool(
        name: str,
        action: str,
        handler: Handler,
        schema: dict[str, JsonValue],
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
        files_tool("files.list", "list", ws.list_entries, path_only, "List the entries directly under a folder."),
        files_tool("files.stat", "stat", ws.stat, path_only, "Describe a file or folder."),
        files_tool("files.read", "read", ws.read, path_only, "Read a file's text."),
        files_tool("files.search", "search", ws.search, search, "Find files by name beneath a folder."),
        files_tool("files.grep", "grep", ws.grep, grep, "Find lines containing a text beneath a folder."),
        files_tool("files.create", "create", ws.create, with_content, "Create a new file.", "write"),
        files_tool("files.replace", "replace", ws.replace, with_content, "Replace a file's text.", "write"),
        files_tool("files.append", "append", ws.append, with_content, "Append text to a file.", "write"),
        files_tool(
            "files.delete", "delete", ws.delete, path_only, "Delete a file.", "write", annotations={"destructive": True}
        ),
        files_tool(
            "files.snapshot.create",
            "snapshot:create",
            ws.snapshot_create,
            path_only,
            "Snapshot a folder so it can be rolled back.",
            "write",
        ),
        files_tool(
            "files.snapshot.list",
            "snapshot:list",
            ws.snapshot_list,
            _schema({"path": PATH}, []),
            "List the snapshots taken of a file or folder.",
        ),
        files_tool(
            "files.snapshot.restore",
            "snapshot:restore",
            ws.snapshot_restore,
            restore,
            "Roll a file back to a snapshot.",
            "write",
        ),
        files_tool(
            "files.purge",
            "purge",
            ws.purge,
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
            ws.read,
            _schema({"path": PATH}, ["path"], open_=True),
            "Open a file; extra arguments are carried along.",
            source="fixture",
        ),
        files_tool(
            "files.fetch",
            "read",
            ws.read,
            _schema({"path": PATH, "owner": ADDRESS}, ["path", "owner"]),
            "Fetch a file from the named owner's workspace.",
            source="fixture",
            requirement=lambda a, o: Requirement("files", path_argument(a), "read", _address(a["owner"])),
        ),
        files_tool(
            "files.index",
            "read",
            ws.read,
            _schema({"path": PATH}, []),
            "Index a folder.",
            source="fixture",
            ceiling=("Workspace",),
            requirement=lambda a, o: Requirement("files", ("Vault", "secrets.md"), "read", o),
        ),
        files_tool("files.describe", "read", ws.mismatched_result, path_only, "Describe a file.", source="fixture"),
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
            handler=ws.request_message,
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
            handler=ws.escalate,
            annotations={"readOnly": True},
        ),
    ]
    return tools


def broker_tool() -> ToolDefinition:
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
        requirement=lambda a, o: Requirement("notion", path_argument(a, BROKER_GRANTED_PATH), "search", o),
        handler=ws.broker_search,
        annotations={"readOnly": True},
    )


def describe_tool(tool: ToolDefinition) -> dict[str, JsonValue]:
    body = tool.published().hashed_fields()
    body.update(
        {
            "readWrite": tool.read_write,
            "requiredCapability": {"namespace": tool.resource_namespace, "action": tool.action},
            "ceiling": list(tool.ceiling),
        }
    )
    return body
