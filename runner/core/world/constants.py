"""The conformance world's constants (upstream §6.10): ids, instants, addresses, paths, actions."""

from __future__ import annotations

from runner.core.grants import Address

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
