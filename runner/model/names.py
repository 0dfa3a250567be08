"""Which name a CLI exposes for a canonical SharedOS tool, looked up in the request's own tool list. Pure.

Every vendor CLI renames the MCP tools it offers its model (``reference/vendor-clis.md``). Each harness declares how
its CLI does (:class:`ToolNaming`, the ``tool_naming`` of its package's ``HARNESS``: the schemes below that it uses, or
schemes of its own defined in its folder, and whether its CLI defers the tools behind a loader); a harness with no
package of its own (a profile from a user directory) gets :data:`BUILT_IN`, every scheme defined here. For each
canonical name (``files.read``) the scripted model tries the naming's schemes, in its order, against the tools the
request actually carries, and uses the first that is there.
``<s>`` is the MCP server name the CLI registered (``sharedos``); ``<f>`` is the tool's
portable name (dots to underscores, ``files_read``), then the canonical name itself (a CLI that keeps
the dot).

Direct schemes (the model calls the tool by its exposed name):

=================  =========================================  ============================================
scheme             exposed as                                  measured on
=================  =========================================  ============================================
``claude``         ``mcp__<s>__<f>``                           Claude Code; Qwen Code with ``alwaysLoadTools``;
                                                               Pi 1.6 built-in MCP, ``exposure: direct``
``codex``          ``<f>`` inside the namespace ``mcp__<s>``   Codex 0.169 (call carries name + namespace)
``server-prefix``  ``<s>_<f>``                                 opencode; Pi 0.86 + pi-mcp-adapter ``directTools``
``gemini``         ``mcp_<s>_<f>``                             Gemini CLI
``copilot``        ``<s>-<f>`` with every ``_`` and ``.`` as   GitHub Copilot CLI 1.0.102
                   ``-`` (``sharedos-files-snapshot-create``,
                   ``sharedos-sharedos-escalate``)
``cline``          ``<s>__<f>``, always with a hash suffix     Cline 3.0.65 (``sharedos__files_read_5f40265d``);
                   (runner's model column: without one)        ``runner/harnesses/model/agent.py``
``droid``          ``<s>___<f>`` (three underscores)           Factory Droid, once loaded by ToolSearch (defined
                                                               in ``runner/harnesses/droid/naming.py``)
=================  =========================================  ============================================

A column with no router of its own (``issues_uncatalogued: true``: runner's model column, upstream's
``modelLimits``) filters nothing the model calls: for it, a call to a tool the request does not offer
is *invented* under its canonical name (:func:`invented`), the way a model may call a name from its
prompt that is not among its tools, and the agent sends it to SharedOS as it is.

Proxy schemes, used only when the request exposes no tool of the server under any direct scheme
(the CLI hides the MCP tools behind a gateway tool, and the model names the MCP tool in the
gateway's arguments). A request that shows the server's tools directly *and* a gateway (Qwen with
``alwaysLoadTools``, Pi with ``directTools``) has told the model which tools exist: a tool missing
from its direct names is not offered, and is not called through the gateway either.

================  ==============  ==========================================================  ==========
scheme            tool called     arguments                                                   measured on
================  ==============  ==========================================================  ==========
``pi-proxy``      ``mcp``         ``{"tool": "<s>_<portable>", "args": {...}}``               Pi + pi-mcp-adapter
``pi-codemode``   ``codemode``    ``{"code": "return await tools.mcp__<s>__<js>({...});"}``   Pi 1.6 built-in MCP
``qwen-proxy``    ``tool_call``   ``{"name": "mcp__<s>__<portable>", "arguments": {...}}``    Qwen Code (deferred tools)
================  ==============  ==========================================================  ==========

``pi-codemode`` (Pi's default ``exposure: codemode``) is the one proxy whose argument is a program:
the ``codemode`` tool's single parameter ``code`` is JavaScript that Pi runs in a QuickJS sandbox,
where every MCP tool is ``tools.mcp__<server>__<tool>`` (the tool name with every character outside
``[A-Za-z0-9_]`` turned into ``_``: ``sharedos.escalate`` is ``tools.mcp__sharedos__sharedos_escalate``).
The arguments are written as a JSON object literal (valid JavaScript), and ``return`` hands the MCP
``CallToolResult`` back as the script's output, which is the one tool result the request then carries.
Measured on Pi 1.6.0: the MCP tools are not in the request (only ``codemode``); the system prompt
lists ``mcp__sharedos (codemode)``; a script naming a tool the server lacks fails with ``TypeError:
tools.mcp__sharedos__nope does not exist. Available: ...`` (still one tool result, no MCP call).

**Deferred tools** (:class:`DeferredTools`, a naming's ``deferred``). A CLI may offer no MCP tool until the model
loads it (Factory Droid's ``ToolSearch``: ``runner/harnesses/droid/naming.py``). A request in which the naming's loader
says the tools are deferred carries our tools; the player (:mod:`runner.model.script`) then makes the loader's call its
first playable call, in every request of the turn, so the step count (which includes that call's result) stays
aligned.

A CLI may also append a short hash to a name it had to normalise (``<name>_<hash>``): measured here
on Qwen Code 0.24.4, which exposes ``files.read`` as ``mcp__sharedos__files_read_1rtbejb`` (the dot
is not in the function-name alphabet), on DeepSeek's dsh 0.1.0-rc.8, which suffixes every MCP tool
with 12 hex digits (``mcp__sharedos__files_read_369b5d85e292``,
``mcp__sharedos__sharedos_escalate_72e183f8c537``), and on Cline 3.0.65, which adds 8 hex digits to every
MCP tool. For a naming that says so (``hashed``), after the exact names, each direct scheme is tried again with such a
suffix (``_`` and 5-8
lowercase letters or digits, or ``_`` and 12 hex digits).

A tool the request exposes under none of these is *not offered* (the CLI filtered it, or its
router would refuse it): :func:`resolve_tool` returns ``None`` and the player skips that call.

A request *carries our tools* (:func:`carries_server_tools`) when any exposed tool belongs to the
server under one of the direct schemes, or a proxy tool is exposed. A request that does not (title
generation, memory agents, next-speaker checks) is a side request and gets a short text answer.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from runner.core.outcomes import JsonValue

PI_PROXY_TOOL = "mcp"
PI_CODEMODE_TOOL = "codemode"
HASH_SUFFIX = r"(?:_[0-9a-z]{5,8}|_[0-9a-f]{12})"  # Qwen Code | dsh
_HASHED = re.compile(HASH_SUFFIX)
QWEN_PROXY_TOOL = "tool_call"
PROXY_TOOLS = (PI_PROXY_TOOL, PI_CODEMODE_TOOL, QWEN_PROXY_TOOL)


@dataclass(frozen=True)
class ExposedTool:
    """One callable tool as a request offers it: a flat name, or a name inside a namespace (Codex)."""

    name: str
    namespace: str | None = None


@dataclass(frozen=True)
class ToolTarget:
    """How the model calls one canonical tool in this request: the name (and namespace) to emit and
    the arguments to send, already wrapped for a proxy."""

    canonical: str
    scheme: str
    name: str
    arguments: dict[str, JsonValue] = field(default_factory=dict)
    namespace: str | None = None
    proxy: bool = False


def _for(template: str, server: str) -> str:
    return template.replace("{server}", server)


@dataclass(frozen=True)
class DirectScheme:
    """One way a CLI exposes an MCP tool under a name of its own: ``prefix`` before the tool's form, or the form alone
    inside ``namespace`` (``{server}`` in either is the server's name). ``dashed``: every character of the form outside
    ``[A-Za-z0-9-]`` as ``-``; ``only_prefixed``: the scheme names only a form that already starts with
    ``<server>_``, as it is (pi-mcp-adapter does not repeat its prefix)."""

    name: str
    prefix: str = ""
    namespace: str | None = None
    dashed: bool = False
    only_prefixed: bool = False
    bare: bool = False  # the MCP name itself, and only a dotted one (no CLI's own tool has a dot)

    def exposed(self, form: str, server: str) -> tuple[str, str | None] | None:
        """The ``(name, namespace)`` the tool of this form is offered under, or ``None`` if the scheme names none."""
        if self.bare:
            return (form, None) if "." in form else None
        if self.only_prefixed and not form.startswith(f"{server}_"):
            return None
        name = _dashed(form) if self.dashed else form
        return _for(self.prefix, server) + name, (None if self.namespace is None else _for(self.namespace, server))

    def owns(self, tool: ExposedTool, server: str) -> bool:
        """Whether ``tool`` is named like one of ``server``'s tools under this scheme."""
        if self.bare:
            return tool.namespace is None and "." in tool.name
        if self.namespace is not None:
            return tool.namespace == _for(self.namespace, server)
        return tool.namespace is None and tool.name.startswith(_for(self.prefix, server) or f"{server}_")


@dataclass(frozen=True)
class ProxyScheme:
    """A gateway tool the model calls with the MCP tool named in its arguments: ``wrap(canonical, arguments, server)``
    gives those arguments."""

    name: str
    tool: str
    wrap: Callable[[str, dict[str, JsonValue], str], dict[str, JsonValue]]


class DeferredTools(Protocol):
    """A CLI that offers the server's tools only once the model loads them with a call of its own."""

    def defers(self, exposed: Sequence[ExposedTool], server: str) -> bool:
        """Whether this request shows the tools deferred (none loaded yet, or loaded by the loader)."""
        ...

    def load(self, canonicals: Iterable[str], server: str) -> ToolTarget:
        """The call that loads every tool of ``canonicals``."""
        ...


@dataclass(frozen=True)
class ToolNaming:
    """How one harness's CLI names the MCP tools it offers its model: its direct schemes and its gateway tools, in the
    order they are tried, whether it may add a hash suffix (``hashed``), and its loader of deferred tools."""

    direct: tuple[DirectScheme, ...] = ()
    proxies: tuple[ProxyScheme, ...] = ()
    hashed: bool = False
    deferred: DeferredTools | None = None

    def owns(self, tool: ExposedTool, server: str) -> bool:
        return any(scheme.owns(tool, server) for scheme in self.direct)


def portable_name(name: str) -> str:
    """Dots to underscores: the rename every CLI applies at the MCP boundary (``runner.core.tools``)."""
    return name.replace(".", "_")


def _forms(canonical: str) -> list[str]:
    portable = portable_name(canonical)
    return [portable] if portable == canonical else [portable, canonical]


def _dashed(name: str) -> str:
    """Copilot CLI's function name for an MCP tool: every character outside ``[A-Za-z0-9-]`` as ``-``."""
    return re.sub(r"[^A-Za-z0-9-]", "-", name)


def codemode_script(canonical: str, arguments: Mapping[str, JsonValue], server: str = "sharedos") -> str:
    """The JavaScript a model sends Pi's ``codemode`` tool to call ``canonical`` once and return its result."""
    method = re.sub(r"[^A-Za-z0-9_]", "_", f"mcp__{server}__{canonical}")
    return f"return await tools.{method}({json.dumps(dict(arguments), sort_keys=True)});"


CLAUDE = DirectScheme("claude", prefix="mcp__{server}__")
CODEX = DirectScheme("codex", namespace="mcp__{server}")
SERVER_PREFIX = DirectScheme("server-prefix", prefix="{server}_")
# Pi (pi-mcp-adapter 2.36, toolPrefix "server") does not repeat a prefix the tool name already has: measured here,
# sharedos.escalate is exposed as `sharedos_escalate`
SERVER_PREFIX_DEDUPLICATED = DirectScheme("server-prefix-deduplicated", only_prefixed=True)
GEMINI = DirectScheme("gemini", prefix="mcp_{server}_")
COPILOT = DirectScheme("copilot", prefix="{server}-", dashed=True)
CLINE = DirectScheme("cline", prefix="{server}__")
# Continue's cn 1.5.47 and Nanocoder 1.30.0 (measured 2026-12-06): an MCP tool under its own dotted name (files.read)
BARE = DirectScheme("bare", bare=True)
PI_PROXY = ProxyScheme("pi-proxy", PI_PROXY_TOOL, lambda c, args, s: {"tool": f"{s}_{portable_name(c)}", "args": args})
PI_CODEMODE = ProxyScheme("pi-codemode", PI_CODEMODE_TOOL, lambda c, args, s: {"code": codemode_script(c, args, s)})
QWEN_PROXY = ProxyScheme(
    "qwen-proxy", QWEN_PROXY_TOOL, lambda c, args, s: {"name": f"mcp__{s}__{portable_name(c)}", "arguments": args}
)
# every scheme defined here, for a harness with no naming of its own (a profile outside any harness package)
BUILT_IN = ToolNaming(
    direct=(CLAUDE, CODEX, SERVER_PREFIX, GEMINI, COPILOT, CLINE, SERVER_PREFIX_DEDUPLICATED),
    proxies=(PI_PROXY, PI_CODEMODE, QWEN_PROXY), hashed=True,
)


def direct_candidates(canonical: str, server: str, naming: ToolNaming = BUILT_IN) -> list[tuple[str, str, str | None]]:
    """``(scheme, name, namespace)`` for every direct scheme of ``naming``, in the order they are tried: each form of
    the name (portable, then canonical) under every scheme."""
    out: list[tuple[str, str, str | None]] = []
    for form in _forms(canonical):
        for scheme in naming.direct:
            exposed = scheme.exposed(form, server)
            if exposed is not None:
                out.append((scheme.name, *exposed))
    return out


def invented(canonical: str, arguments: Mapping[str, JsonValue] | None) -> ToolTarget:
    """A call to a tool the request does not offer, under its canonical name (a column that filters nothing)."""
    return ToolTarget(canonical, "invented", canonical, dict(arguments or {}))


def resolve_tool(
    canonical: str, arguments: Mapping[str, JsonValue] | None, exposed: Iterable[ExposedTool], server: str = "sharedos",
    naming: ToolNaming = BUILT_IN,
) -> ToolTarget | None:
    """The call to emit for ``canonical`` given the request's exposed tools, or ``None`` if not offered."""
    tools = list(exposed)
    offered = {(t.name, t.namespace) for t in tools}  # plain tuples: a request may offer very many tools
    args = dict(arguments or {})
    candidates = direct_candidates(canonical, server, naming)
    for scheme, name, namespace in candidates:
        if (name, namespace) in offered:
            return ToolTarget(canonical, scheme, name, args, namespace)
    if naming.hashed:
        hashed = _hashed(tools, {(namespace, name) for _, name, namespace in candidates})
        for scheme, name, namespace in candidates:
            match = sorted(hashed.get((namespace, name), ()))
            if len(match) == 1:
                return ToolTarget(canonical, f"{scheme}+hash", match[0], args, namespace)
    if any(naming.owns(tool, server) for tool in tools):
        return None
    for proxy in naming.proxies:
        if (proxy.tool, None) in offered:
            return ToolTarget(canonical, proxy.name, proxy.tool, proxy.wrap(canonical, args, server), proxy=True)
    return None


Stem = tuple[str | None, str]  # a namespace (or none) and a tool name before its hash suffix


def _hashed(tools: Iterable[ExposedTool], stems: set[Stem]) -> dict[Stem, list[str]]:
    """The tools named one of ``stems`` (namespace, name) plus a hash suffix, by that stem: one pass over the
    request's tools, a set lookup each, however many it offers (the suffix holds no ``_``: it starts at the
    last one)."""
    found: dict[Stem, list[str]] = {}
    for tool in tools:
        stem = tool.name.rpartition("_")[0]
        if (tool.namespace, stem) in stems and _HASHED.fullmatch(tool.name, len(stem)):
            found.setdefault((tool.namespace, stem), []).append(tool.name)
    return found


def is_server_tool(tool: ExposedTool, server: str = "sharedos") -> bool:
    """Whether ``tool`` is named like a tool of ``server`` under a direct scheme (any of the table above, a hash
    suffix included); a proxy tool is not (:data:`PROXY_TOOLS`)."""
    return _direct_of_server(tool, server)


def _direct_of_server(tool: ExposedTool, server: str) -> bool:
    """Whether ``tool`` is named like a tool of ``server`` under a direct scheme (a dotted flat name: ``bare``)."""
    if tool.namespace is not None:
        return tool.namespace == f"mcp__{server}"
    return "." in tool.name or tool.name.startswith((f"mcp__{server}__", f"{server}_", f"mcp_{server}_", f"{server}-"))


def carries_server_tools(
    exposed: Iterable[ExposedTool], server: str = "sharedos", naming: ToolNaming = BUILT_IN
) -> bool:
    """True when the request offers any tool of ``server`` (a direct scheme of ``naming``), one of its gateway tools,
    or its deferred tools behind its loader."""
    tools = list(exposed)
    if naming.deferred is not None and naming.deferred.defers(tools, server):
        return True
    gateways = {proxy.tool for proxy in naming.proxies}
    return any(naming.owns(tool, server) or (tool.namespace is None and tool.name in gateways) for tool in tools)
