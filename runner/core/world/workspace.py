"""The world's in-memory workspace: its state, as seeded, and the handlers that read and change it."""

from __future__ import annotations

import fnmatch
from typing import NoReturn

from runner.core.outcomes import JsonValue
from runner.core.tools import (
    EscalationNotTerminated,
    HandlerError,
    ResultFor,
    ToolContext,
    ToolFailure,
    path_argument,
)
from runner.core.vocabulary import Code, message
from runner.core.world.constants import BROKER_GRANTED_PATH, DRAFT, LEDGER, POLICY, SEEDED_SNAPSHOT_ID, WORKSPACE
from runner.core.world_state import WorldState


def seeded_state() -> WorldState:
    """The workspace every turn starts from: three files, and a snapshot of two of them."""
    return WorldState(
        files={POLICY: "Only the owner changes policy.\n", DRAFT: "draft\n", LEDGER: "ledger entry\n"},
        snapshots={POLICY: [SEEDED_SNAPSHOT_ID], DRAFT: [SEEDED_SNAPSHOT_ID]},
    )



def _children(ctx: ToolContext, path: tuple[str, ...]) -> list[tuple[str, ...]]:
    return sorted(p for p in ctx.state.files if p[: len(path)] == path and len(p) > len(path))


def _need(ctx: ToolContext, path: tuple[str, ...]) -> str:
    if path not in ctx.state.files:
        raise HandlerError(f"no file at {'/'.join(path)}")
    content: str = ctx.state.files[path]
    return content


def list_entries(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    path = path_argument(args)
    names: list[JsonValue] = [*sorted({p[len(path)] for p in _children(ctx, path)})]
    return {"path": list(path), "entries": names}


def stat(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    path = path_argument(args)
    if path in ctx.state.files:
        return {"path": list(path), "kind": "file", "size": len(ctx.state.files[path].encode())}
    if _children(ctx, path):
        return {"path": list(path), "kind": "folder"}
    raise HandlerError(f"nothing at {'/'.join(path)}")


def read(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    path = path_argument(args)
    return {"path": list(path), "content": _need(ctx, path)}


def search(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    path, query = path_argument(args), str(args["query"])
    hits: list[JsonValue] = ["/".join(p) for p in _children(ctx, path) if fnmatch.fnmatch(p[-1], f"*{query}*")]
    return {"matches": hits}


def grep(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    path, needle = path_argument(args), str(args["pattern"])
    hits: list[JsonValue] = [
        {"path": "/".join(p), "line": n, "text": line}
        for p in _children(ctx, path) + ([path] if path in ctx.state.files else [])
        for n, line in enumerate(ctx.state.files[p].splitlines(), 1)
        if needle in line
    ]
    return {"matches": hits}


def create(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    path = path_argument(args)
    if path in ctx.state.files:
        raise HandlerError(f"{'/'.join(path)} already exists")
    ctx.state.files[path] = str(args["content"])
    return {"path": list(path), "created": True}


def replace(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    path = path_argument(args)
    _need(ctx, path)
    ctx.state.files[path] = str(args["content"])
    return {"path": list(path), "replaced": True}


def append(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    path = path_argument(args)
    ctx.state.files[path] = ctx.state.files.get(path, "") + str(args["content"])
    return {"path": list(path), "appended": True}


def delete(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    path = path_argument(args)
    _need(ctx, path)
    del ctx.state.files[path]
    return {"path": list(path), "deleted": True}


def snapshot_create(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    """Snapshot one path (a file or a folder); ids count per path, as upstream's file store does."""
    path = path_argument(args)
    taken = ctx.state.snapshots.setdefault(path, [])
    snap_id = f"snapshot-{len(taken) + 1}"
    taken.append(snap_id)
    return {"snapshotId": snap_id}


def snapshot_list(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    path = path_argument(args, WORKSPACE)
    return {"snapshots": list(ctx.state.snapshots.get(path, []))}


def snapshot_restore(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    path, snap_id = path_argument(args), args["snapshotId"]
    if snap_id not in ctx.state.snapshots.get(path, []):
        raise HandlerError(f"no snapshot {snap_id} exists for {'/'.join(path)}")
    ctx.state.files[path] = "restored"
    return {"restored": "/".join(path), "snapshotId": snap_id}


def purge(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    return {"purged": True}  # never reachable: files.admin is not an enabled namespace


def broker_search(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    page = "/".join(path_argument(args, BROKER_GRANTED_PATH))
    ctx.state.searches.append(page)
    return {"page": page, "results": []}


def request_message(args: dict[str, JsonValue], ctx: ToolContext) -> JsonValue:
    """``messages.request``: hand the authorized send to the transport. A dispatch the transport refuses
    (a revoked route lease) fails ``message_request_not_accepted``, its code kept as the cause; the
    transport's own ``denied`` receipt is kept in :attr:`WorldState.transport` as it answered."""
    message_id = f"message-{len(ctx.state.transport.receipts) + 1}"
    receipt = ctx.state.transport.deliver(message_id, args["recipient"], args.get("payload"))
    if not receipt.accepted:
        cause = receipt.error_code or "message_delivery_denied"
        raise ToolFailure(Code.MESSAGE_REQUEST_NOT_ACCEPTED.value,
                          message(Code.MESSAGE_REQUEST_NOT_ACCEPTED, cause=cause), cause)
    ctx.state.messages.append({"messageId": message_id, "recipient": args["recipient"]})
    return {"messageId": message_id, "accepted": True}


def mismatched_result(args: dict[str, JsonValue], ctx: ToolContext) -> ResultFor:
    return ResultFor(call_id=f"{ctx.call_id}.someone-else", output={"described": True})


def escalate(args: dict[str, JsonValue], ctx: ToolContext) -> NoReturn:
    raise EscalationNotTerminated

