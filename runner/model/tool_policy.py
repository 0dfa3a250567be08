"""Tool policy measured on the wire (upstream's ADR 0027, ``ToolPolicy`` version ``"2"``). Pure.

A harness declares what its model can reach besides SharedOS: ``broker-only``, ``mixed`` or ``unknown``, with an
inventory split into ``managedMcp`` (SharedOS endpoints, reached over MCP through the broker), ``harnessLocal``
(the harness's own tools: "every local tool counts: shell, patch, write, read, planners, harmless utilities; no
exemption") and ``externalDirect`` (endpoints reached without the broker), and evidence. Upstream can only take a
declaration; runner *sees* the inventory: every request a CLI sends its model carries the tools it lets the model
call. This module turns those tool lists into the record upstream writes as ``system.toolPolicy``.

**Reading.** :func:`offered_in_request` reads one request body in its dialect: the function tools
(:meth:`~runner.model.dialects.base.Dialect.exposed_tools`, Codex's namespaced ones as ``namespace/name``),
Anthropic's deferred tools too (``defer_loading``: declared, loadable), and the tools a vendor hosts or a client
runs by type rather than by function: OpenAI Responses' ``web_search``/``file_search``/``code_interpreter``/
``image_generation`` (hosted), ``local_shell``/``computer_use_preview``/``shell``/``apply_patch`` (run by the
CLI), ``mcp`` (a remote MCP server the vendor calls: ``mcp:<server_label>``); Anthropic's ``web_search_*``,
``web_fetch_*``, ``code_execution_*`` server tools (hosted) and its ``mcp_servers`` connector (``mcp:<name>``);
Gemini's ``googleSearch``, ``codeExecution``, ``urlContext`` & co. (hosted). :func:`offered_in_log` reads every
generation request of an exchange log (``model-exchanges.jsonl``), each with its reference ``<log>#seq=<n>``.

**Classifying** (:func:`measure_inventory`, the union over every request of the turn, side requests included: a
sub-agent's tools are the CLI's too):

- a tool of this turn's MCP server under any direct naming scheme (:func:`runner.model.names.is_server_tool`) is
  the managed path: ``managedMcp`` names the server (an endpoint, as the ADR's field holds), and the tool names
  are kept in :attr:`ToolInventory.managed`;
- a tool named for another MCP server where the name says so (``mcp__<other>__*``, Codex's namespace
  ``mcp__<other>``, Gemini's ``mcp_<other>_*``), a vendor-hosted tool (``hosted:<type>``) and a remote MCP server
  the vendor calls (``mcp:<label>``) are ``externalDirect``. (Another server's tool named without an ``mcp``
  prefix, as opencode names them, cannot be told from a local tool and counts as local: the mode is ``mixed``
  either way.)
- a **proxy** (a local tool whose arguments name MCP tools or whose program calls them: :data:`PROXIES`) is local
  code that reaches MCP. The ADR: "a proxy that only forwards to this turn's SharedOS endpoint may count as managed
  only after the host has reviewed its implementation and configuration; a label or a read-only hint is not
  enough". So a proxy is ``harnessLocal``, and its reach is not in the request's list, so the inventory is not
  complete, *unless* the caller passes it in ``reviewed`` with a reference to that review (then it is neither local
  nor a gap, and the reference joins the evidence). runner ships **no** reviewed proxy (:data:`REVIEWED_PROXIES`
  is empty): none of these implementations has been reviewed, and one is known to reach more than MCP (Vibe 3's
  ``run_typescript`` runs ``file_system.bash``: docs/measurements.md, "Vibe's run_typescript"), so it can never be.
  A loader (``ToolSearch``, ``tool_search``) is a proxy by this rule too: what it can load is not in the list.
- everything else is ``harnessLocal``.

**The mode** (:func:`tool_policy`): ``mixed`` when a local tool or an outside endpoint is named (the path exists,
whether or not the turn used it); otherwise ``broker-only`` when the inventory is complete, ``unknown`` when it
is not. The inventory is **complete** when at least one generation request was seen, every one's tool list was
read (none refused or cut at the log's bound), and no unreviewed proxy could reach tools its list does not name;
"complete" is what the wire shows the model could call in this turn, no more: hooks, a CLI's own network, or
side effects other than tools are not in it (the ADR: a policy "never proves process isolation"). The evidence
cites the requests whose tool lists differed (the first of each), and what the caller adds: the image, the CLI's
version, the profile's launch configuration.

**Bounds.** A tool list is the CLI's, so what is read of it is bounded: a name (and a namespace, a hosted tool's
type) is kept as it is shown (:func:`recorded_name`: every character a terminal would obey escaped, at most
:data:`MAX_NAME_CHARS`), and a request's first :data:`MAX_REQUEST_TOOLS` tools are read, a longer list making the
inventory incomplete (:attr:`OfferedTools.cut`): a real CLI offers tens of tools, and the record holds at most the
ADR's bounds of them anyway.

:func:`compare_policies` says what changed between two measurements of a harness (a CLI bump that adds a built-in
tool is a finding).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from runner.core.outcomes import JsonValue
from runner.core.visible import visible
from runner.model.dialects import ANTHROPIC, BY_NAME, GEMINI, OPENAI_RESPONSES, RequestInfo
from runner.model.dialects.base import as_dict, as_list
from runner.model.names import ExposedTool, is_server_tool

POLICY_VERSION = "2"
Mode = Literal["broker-only", "mixed", "unknown"]
Inventory = Literal["complete", "unknown"]
MAX_MANAGED, MAX_LOCAL, MAX_EXTERNAL, MAX_EVIDENCE = 64, 256, 64, 64  # the ADR's bounds on each list
MAX_NAME_CHARS = 128  # of a tool name as recorded (OpenAI and Anthropic allow 64, Gemini 128)
MAX_REQUEST_TOOLS = 512  # tools read of one request's list (a CLI with many MCP servers offers a few hundred)

# Local tools that reach MCP for the model (their arguments name an MCP tool, or their program calls one), or load
# tools the request does not list; each as measured on its CLI (runner.model.names, each harness's README).
PROXIES: dict[str, str] = {
    "mcp": "pi-mcp-adapter's gateway: calls any configured MCP server's tool by name",
    "mcpScript": "pi-mcp-adapter: runs a script that calls MCP tools",
    "codemode": "Pi's built-in MCP: a JavaScript program run in QuickJS, every MCP tool a function",
    "tool_call": "Qwen Code: calls a deferred tool by name",
    "tool_search": "Qwen Code: finds deferred tools",
    "ToolSearch": "Factory Droid (and Claude Code with tool search on): loads deferred tools into later requests",
    "run_typescript": "Mistral Vibe 3: a TypeScript program over connector groups (file_system, process, mcp_*)",
    "search_tool_functions": "Mistral Vibe 3: finds functions run_typescript can call",
}
REVIEWED_PROXIES: Mapping[str, str] = {}  # proxy name -> the host's review of it: none reviewed (see the docstring)
RESPONSES_LOCAL_TYPES = frozenset({"local_shell", "computer_use_preview", "computer_use", "shell", "apply_patch"})
RESPONSES_FUNCTION_TYPES = frozenset({"function", "namespace", "custom"})
ANTHROPIC_HOSTED_PREFIXES = ("web_search", "web_fetch", "code_execution")
GEMINI_FUNCTION_KEYS = frozenset({"functionDeclarations", "function_declarations"})


@dataclass(frozen=True)
class OfferedTools:
    """One generation request's tools: function tools as named (``namespace/name`` for Codex's), and the tools it
    offers by type (``hosted:<type>``, ``mcp:<label>``, or a type the CLI runs itself, by its type); ``readable``:
    whether its tool list could be read at all."""

    ref: str
    tools: tuple[ExposedTool, ...] = ()
    hosted: tuple[str, ...] = ()
    local_types: tuple[str, ...] = ()
    readable: bool = True
    cut: int = 0  # tools past MAX_REQUEST_TOOLS, not read

    @property
    def names(self) -> tuple[str, ...]:
        """Every tool of the request, as the inventory names it."""
        return (*(shown(t) for t in self.tools), *self.local_types, *self.hosted)


def shown(tool: ExposedTool) -> str:
    return f"{tool.namespace}/{tool.name}" if tool.namespace else tool.name


def recorded_name(name: str) -> str:
    """A name the CLI sent, as the inventory keeps it: each character a reader would act on (a terminal's escape
    sequences, a line break, a bidirectional override, a lone surrogate) written as its escape, and at most
    :data:`MAX_NAME_CHARS` characters (a longer one ends in ``…``)."""
    text = visible(name).replace("\n", "\\n").replace("\t", "\\t")
    return text if len(text) <= MAX_NAME_CHARS else text[: MAX_NAME_CHARS - 1] + "…"


def _recorded(tools: Sequence[ExposedTool]) -> list[ExposedTool]:
    return [ExposedTool(recorded_name(t.name), None if t.namespace is None else recorded_name(t.namespace))
            for t in tools]


def offered_in_request(dialect: str, body: JsonValue, ref: str) -> OfferedTools:
    """The tools one request body offers its model, read in ``dialect`` (a name of
    :data:`runner.model.dialects.BY_NAME`); an unreadable body (not an object) is ``readable=False``."""
    reader = BY_NAME.get(dialect)
    if reader is None or not isinstance(body, dict) or "truncated" in body or "refused" in body:
        return OfferedTools(ref, readable=False)
    tools = list(reader.exposed_tools(body))
    hosted: list[str] = []
    local_types: list[str] = []
    declared = as_list(body.get("tools"))
    if reader is OPENAI_RESPONSES:
        for tool in map(as_dict, declared):
            kind = str(tool.get("type", ""))
            if kind == "mcp":
                hosted.append(f"mcp:{tool.get('server_label') or tool.get('server_url') or '?'}")
            elif kind in RESPONSES_LOCAL_TYPES:
                local_types.append(kind)
            elif kind and kind not in RESPONSES_FUNCTION_TYPES and not isinstance(tool.get("name"), str):
                hosted.append(f"hosted:{kind}")
    elif reader is ANTHROPIC:
        tools += [ExposedTool(name) for tool in map(as_dict, declared)
                  if tool.get("defer_loading") is True and isinstance(name := tool.get("name"), str)]
        hosted_names = {str(tool.get("name")) for tool in map(as_dict, declared)
                        if str(tool.get("type", "")).startswith(ANTHROPIC_HOSTED_PREFIXES)}
        tools = [t for t in tools if t.name not in hosted_names]
        hosted += [f"hosted:{name}" for name in sorted(hosted_names)]
        hosted += [f"mcp:{as_dict(server).get('name') or as_dict(server).get('url') or '?'}"
                   for server in as_list(body.get("mcp_servers"))]
    elif reader is GEMINI:
        for tool in map(as_dict, declared):
            hosted += [f"hosted:{key}" for key in tool if key not in GEMINI_FUNCTION_KEYS]
    else:  # openai-chat: a tool entry that is no function is one the vendor runs
        hosted += [f"hosted:{tool.get('type')}" for tool in map(as_dict, declared)
                   if tool.get("type") not in (None, "function") and not as_dict(tool.get("function")).get("name")]
    listed = tuple(dict.fromkeys(_recorded(tools)))
    kept = listed[:MAX_REQUEST_TOOLS]
    hosted_kept = tuple(dict.fromkeys(map(recorded_name, hosted)))
    local_kept = tuple(dict.fromkeys(map(recorded_name, local_types)))
    cut = len(listed) - len(kept) + max(0, len(hosted_kept) - MAX_EXTERNAL) + max(0, len(local_kept) - MAX_LOCAL)
    return OfferedTools(ref, kept, hosted_kept[:MAX_EXTERNAL], local_kept[:MAX_LOCAL], cut=cut)


def offered_in_log(entries: Iterable[Mapping[str, JsonValue]], log_name: str = "model-exchanges.jsonl"
                   ) -> list[OfferedTools]:
    """Every generation request's tools in an exchange log's entries (parsed lines), in the log's order; each
    referenced ``<log_name>#seq=<seq>``. Requests of no dialect, model lists and token counts are left out."""
    found: list[OfferedTools] = []
    for entry in entries:
        dialect, request = entry.get("dialect"), as_dict(entry.get("request"))
        reader = BY_NAME.get(dialect) if isinstance(dialect, str) else None
        if reader is None or not reader.generates(RequestInfo(str(request.get("method", "")),
                                                              str(request.get("path", "")))):
            continue
        found.append(offered_in_request(reader.name, request.get("body"), f"{log_name}#seq={entry.get('seq')}"))
    return found


@dataclass(frozen=True)
class ToolInventory:
    """What a turn's CLI offered its model, classified (the rules in the module docstring)."""

    server: str
    managed: tuple[str, ...] = ()  # this server's tools, as the CLI named them
    local: tuple[str, ...] = ()  # harnessLocal: the CLI's own tools, unreviewed proxies included
    external: tuple[str, ...] = ()  # externalDirect: other MCP servers, hosted tools, remote MCP
    proxies: tuple[str, ...] = ()  # the proxy tools seen (reviewed or not)
    reviewed: Mapping[str, str] = field(default_factory=dict)  # the reviewed proxies seen, with their review
    gaps: tuple[str, ...] = ()  # why the inventory is not complete; () when it is
    requests: int = 0
    evidence: tuple[str, ...] = ()

    @property
    def complete(self) -> bool:
        return self.requests > 0 and not self.gaps

    def to_json(self) -> dict[str, JsonValue]:
        return {"server": self.server, "managed": [*self.managed], "local": [*self.local],
                "external": [*self.external], "proxies": [*self.proxies], "reviewed": {**self.reviewed},
                "complete": self.complete, "gaps": [*self.gaps], "requests": self.requests,
                "evidence": [*self.evidence]}


def measure_inventory(
    offered: Sequence[OfferedTools], server: str = "sharedos", *, reviewed: Mapping[str, str] = REVIEWED_PROXIES,
) -> ToolInventory:
    """The inventory of every request's tools (the union), classified; ``reviewed``: proxy names the host has
    reviewed as forwarding only to this turn's SharedOS endpoint, each with a reference to that review."""
    managed: dict[str, None] = {}
    local: dict[str, None] = {}
    external: dict[str, None] = {}
    proxies: dict[str, None] = {}
    gaps: list[str] = []
    evidence: list[str] = []
    lists: set[tuple[str, ...]] = set()
    for request in offered:
        if not request.readable:
            gaps.append(f"{request.ref}: its tool list could not be read")
            continue
        if request.cut:
            gaps.append(f"{request.ref}: {request.cut} of its tools past the {MAX_REQUEST_TOOLS} runner reads")
        if request.names not in lists:  # the first request of each distinct tool list is the evidence
            lists.add(request.names)
            evidence.append(request.ref)
        for tool in request.tools:
            name = shown(tool)
            if is_server_tool(tool, server):
                managed[name] = None
            elif tool.namespace is None and (tool.name in PROXIES or tool.name == f"mcp__{server}"):
                proxies[name] = None
            elif (other := other_server(tool, server)) is not None:
                external[f"mcp:{other}"] = None
            else:
                local[name] = None
        local.update(dict.fromkeys(request.local_types))
        external.update(dict.fromkeys(request.hosted))
    for proxy in proxies:
        if proxy not in reviewed:
            local[proxy] = None
            gaps.append(f"{proxy}: a proxy whose reach its request does not list, not reviewed by the host")
    if not offered:
        gaps.append("no model request was seen")
    review = {p: reviewed[p] for p in proxies if p in reviewed}
    return ToolInventory(
        server=server, managed=tuple(sorted(managed)), local=tuple(sorted(local)), external=tuple(sorted(external)),
        proxies=tuple(sorted(proxies)), reviewed=review, gaps=tuple(dict.fromkeys(gaps)),
        requests=sum(1 for r in offered if r.readable), evidence=tuple(evidence),
    )


def other_server(tool: ExposedTool, server: str) -> str | None:
    """The MCP server another tool's name says it belongs to (``mcp__x__t``, namespace ``mcp__x``, ``mcp_x_t``)."""
    if tool.namespace is not None:
        rest = tool.namespace.removeprefix("mcp__")
        return rest if rest != tool.namespace and rest and rest != server else None
    for prefix, cut in (("mcp__", "__"), ("mcp_", "_")):
        if tool.name.startswith(prefix):
            other, sep, rest = tool.name[len(prefix):].partition(cut)
            if sep and other and rest and other != server:
                return other
    return None


@dataclass(frozen=True)
class ToolPolicy:
    """The ADR 0027 record, as upstream writes it under ``system.toolPolicy``."""

    mode: Mode
    inventory: Inventory
    managed_mcp: tuple[str, ...]
    harness_local: tuple[str, ...] = ()
    external_direct: tuple[str, ...] = ()
    evidence: tuple[str, ...] = ()
    version: str = POLICY_VERSION

    def __post_init__(self) -> None:
        outside = bool(self.harness_local or self.external_direct)
        if self.mode == "mixed" and not outside:
            raise ValueError("a mixed policy names at least one local tool or outside endpoint")
        if self.mode != "mixed" and outside:
            raise ValueError(f"a {self.mode} policy names no local tool and no outside endpoint")
        if self.mode == "broker-only" and self.inventory != "complete":
            raise ValueError("a broker-only policy needs a complete inventory")
        if self.mode == "unknown" and self.inventory != "unknown":
            raise ValueError("an unknown policy has an unknown inventory")
        if self.inventory == "complete" and not self.evidence:
            raise ValueError("a complete inventory cites its evidence")
        if not 1 <= len(self.managed_mcp) <= MAX_MANAGED:
            raise ValueError(f"managedMcp names 1 to {MAX_MANAGED} SharedOS endpoints")
        for name, values, most in (("harnessLocal", self.harness_local, MAX_LOCAL),
                                   ("externalDirect", self.external_direct, MAX_EXTERNAL),
                                   ("evidence", self.evidence, MAX_EVIDENCE)):
            if len(values) > most:
                raise ValueError(f"{name} holds at most {most} entries, not {len(values)}")

    def to_json(self) -> dict[str, JsonValue]:
        return {"version": self.version, "mode": self.mode, "inventory": self.inventory,
                "managedMcp": [*self.managed_mcp], "harnessLocal": [*self.harness_local],
                "externalDirect": [*self.external_direct], "evidence": [*self.evidence]}

    @classmethod
    def from_json(cls, body: Mapping[str, JsonValue] | None) -> ToolPolicy | None:
        """A version-2 record as written; None for a record without one (upstream reads that as ``unknown``);
        ValueError for another version (legacy ``strict``/``hybrid`` are not relabelled) or a bad record."""
        if body is None:
            return None
        if body.get("version") != POLICY_VERSION:
            raise ValueError(f"tool policy version {body.get('version')!r}: only version {POLICY_VERSION!r} is read")
        mode, inventory = body.get("mode"), body.get("inventory")
        if mode not in ("broker-only", "mixed", "unknown") or inventory not in ("complete", "unknown"):
            raise ValueError(f"tool policy mode {mode!r} / inventory {inventory!r} is not version 2's")
        return cls(mode, inventory, _strings(body, "managedMcp"),  # type: ignore[arg-type]
                   _strings(body, "harnessLocal"), _strings(body, "externalDirect"), _strings(body, "evidence"))


def _strings(body: Mapping[str, JsonValue], key: str) -> tuple[str, ...]:
    values = body.get(key, [])
    if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
        raise ValueError(f"tool policy {key} must be a list of strings")
    return tuple(v for v in values if isinstance(v, str))


def tool_policy(inventory: ToolInventory, extra_evidence: Sequence[str] = ()) -> ToolPolicy:
    """The ADR 0027 record the inventory supports (the mode rule in the module docstring); ``extra_evidence``:
    references the caller holds (the image id, the CLI version, the profile's launch configuration), cited first.
    Evidence past the ADR's bound of 64 is cut (the requests first, the caller's kept)."""
    local = inventory.local[:MAX_LOCAL]
    external = inventory.external[:MAX_EXTERNAL]
    complete = inventory.complete and len(inventory.local) <= MAX_LOCAL and len(inventory.external) <= MAX_EXTERNAL
    reviews = [f"review:{proxy}:{ref}" for proxy, ref in sorted(inventory.reviewed.items())]
    evidence = [*dict.fromkeys([*extra_evidence, *reviews, *inventory.evidence])][:MAX_EVIDENCE]
    mode: Mode = "mixed" if local or external else "broker-only" if complete and evidence else "unknown"
    shown_inventory: Inventory = "complete" if complete and evidence else "unknown"
    return ToolPolicy(mode, shown_inventory, (inventory.server,), local, external, tuple(evidence))


def measure_policy(
    entries: Iterable[Mapping[str, JsonValue]], server: str = "sharedos", *, log_name: str = "model-exchanges.jsonl",
    extra_evidence: Sequence[str] = (), reviewed: Mapping[str, str] = REVIEWED_PROXIES,
) -> tuple[ToolPolicy, ToolInventory]:
    """An exchange log's entries to the policy they support, with the inventory it was read from."""
    inventory = measure_inventory(offered_in_log(entries, log_name), server, reviewed=reviewed)
    return tool_policy(inventory, extra_evidence), inventory


@dataclass(frozen=True)
class PolicyChange:
    """What changed from one measured policy of a harness to the next."""

    before: ToolPolicy
    after: ToolPolicy

    @property
    def added_local(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.after.harness_local) - set(self.before.harness_local)))

    @property
    def removed_local(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.before.harness_local) - set(self.after.harness_local)))

    @property
    def added_external(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.after.external_direct) - set(self.before.external_direct)))

    @property
    def removed_external(self) -> tuple[str, ...]:
        return tuple(sorted(set(self.before.external_direct) - set(self.after.external_direct)))

    @property
    def changed(self) -> bool:
        return bool(self.findings())

    def findings(self) -> list[str]:
        """One line per change, for a report: the mode first, then what the CLI's model can newly reach."""
        lines: list[str] = []
        if self.before.mode != self.after.mode:
            lines.append(f"tool policy {self.before.mode} -> {self.after.mode}")
        if self.before.inventory != self.after.inventory:
            lines.append(f"inventory {self.before.inventory} -> {self.after.inventory}")
        for what, names in (("new local tools", self.added_local), ("local tools gone", self.removed_local),
                            ("new outside endpoints", self.added_external),
                            ("outside endpoints gone", self.removed_external)):
            if names:
                lines.append(f"{what}: {', '.join(names)}")
        if set(self.before.managed_mcp) != set(self.after.managed_mcp):
            lines.append(f"managed endpoints {', '.join(self.before.managed_mcp)} -> "
                         f"{', '.join(self.after.managed_mcp)}")
        return lines


def compare_policies(before: ToolPolicy, after: ToolPolicy) -> PolicyChange:
    """What changed between two measurements of one harness (``findings()``: none when nothing did)."""
    return PolicyChange(before, after)
