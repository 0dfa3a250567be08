"""Which name a CLI exposes for a canonical SharedOS tool, looked up in the request's own tool list. Pure.

Every vendor CLI renames the MCP tools it offers its model (``reference/vendor-clis.md``). The
scripted model therefore never assumes a scheme: for each canonical name (``files.read``) it tries
the names below, in this order, against the tools the request actually carries, and uses the first
that is there. ``<s>`` is the MCP server name the CLI registered (``sharedos``); ``<f>`` is the tool's
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
``droid``          ``<s>___<f>`` (three underscores)           Factory Droid, once loaded by ToolSearch
``bare``           the MCP name itself, no server prefix       Continue's ``cn`` 1.5.47, Nanocoder 1.30.0
                   (``files.read``); only a dotted name, so
                   it cannot be a CLI's own tool
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
``vibe-codemode`` ``run_typescript`` ``{"code": "async function main() {`` ... ``}"}``           Mistral Vibe 3.0.2
================  ==============  ==========================================================  ==========

``vibe-codemode`` (Mistral Vibe's unified harness, the only one 3.x has) is Pi's codemode in TypeScript: the request
declares ``run_typescript`` (``{"code": string}``) and ``search_tool_functions`` beside Vibe's own tools, the system
prompt lists the connector group ``mcp_<s>``, and a script reaches an MCP tool as ``tools.mcp_<s>.<portable>``
(``tools.mcp_sharedos.sharedos_escalate``). The sandbox runs ``main()``; its return value is the one tool result the
next request carries (the MCP result's ``structuredContent``, else its text); an ``isError`` result throws inside the
script (``run_typescript failed: {"name":"mcp_tool_error","message":...}``), and an unknown tool fails with
``TypeError: tools.mcp_sharedos.nope is not a function`` (no MCP call). ``search_tool_functions`` (``best_match``,
``details``) is what a real model is told to call first; a script needs neither.

``pi-codemode`` (Pi's default ``exposure: codemode``) is the one proxy whose argument is a program:
the ``codemode`` tool's single parameter ``code`` is JavaScript that Pi runs in a QuickJS sandbox,
where every MCP tool is ``tools.mcp__<server>__<tool>`` (the tool name with every character outside
``[A-Za-z0-9_]`` turned into ``_``: ``sharedos.escalate`` is ``tools.mcp__sharedos__sharedos_escalate``).
The arguments are written as a JSON object literal (valid JavaScript), and ``return`` hands the MCP
``CallToolResult`` back as the script's output, which is the one tool result the request then carries.
Measured on Pi 1.6.0: the MCP tools are not in the request (only ``codemode``); the system prompt
lists ``mcp__sharedos (codemode)``; a script naming a tool the server lacks fails with ``TypeError:
tools.mcp__sharedos__nope does not exist. Available: ...`` (still one tool result, no MCP call).

**Deferred tools (Factory Droid 0.225.2).** Droid offers no MCP tool until the model loads it: the first
request carries only a ``ToolSearch`` function and lists the deferred names (``<s>___<f>``) in a system reminder;
calling ``ToolSearch {"query": "select:<name>,..."}`` adds them to the next request's tools. A request exposing
``ToolSearch`` and no tool of the server, or the server's tools only under the ``droid`` scheme, carries our tools;
the player (:mod:`runner.model.script`) then makes the ``ToolSearch`` call its first playable call, in every request
of the turn, so the step count (which includes that call's result) stays aligned. :func:`tool_search_target` builds
it.

A CLI may also append a short hash to a name it had to normalise (``<name>_<hash>``): measured here
on Qwen Code 0.24.4, which exposes ``files.read`` as ``mcp__sharedos__files_read_1rtbejb`` (the dot
is not in the function-name alphabet), on DeepSeek's dsh 0.1.0-rc.8, which suffixes every MCP tool
with 12 hex digits (``mcp__sharedos__files_read_369b5d85e292``,
``mcp__sharedos__sharedos_escalate_72e183f8c537``), and on Cline 3.0.65, which adds 8 hex digits to every
MCP tool. After the exact names, each direct scheme is tried again with such a suffix (``_`` and 5-8
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
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from runner.core.outcomes import JsonValue

PI_PROXY_TOOL = "mcp"
PI_CODEMODE_TOOL = "codemode"
TOOL_SEARCH_TOOL = "ToolSearch"
HASH_SUFFIX = r"(?:_[0-9a-z]{5,8}|_[0-9a-f]{12})"  # Qwen Code | dsh
_HASHED = re.compile(HASH_SUFFIX)
QWEN_PROXY_TOOL = "tool_call"
VIBE_CODEMODE_TOOL = "run_typescript"
PROXY_TOOLS = (PI_PROXY_TOOL, PI_CODEMODE_TOOL, QWEN_PROXY_TOOL, VIBE_CODEMODE_TOOL)


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


def portable_name(name: str) -> str:
    """Dots to underscores: the rename every CLI applies at the MCP boundary (``runner.core.tools``)."""
    return name.replace(".", "_")


def _forms(canonical: str) -> list[str]:
    portable = portable_name(canonical)
    return [portable] if portable == canonical else [portable, canonical]


def _dashed(name: str) -> str:
    """Copilot CLI's function name for an MCP tool: every character outside ``[A-Za-z0-9-]`` as ``-``."""
    return re.sub(r"[^A-Za-z0-9-]", "-", name)


def direct_candidates(canonical: str, server: str) -> list[tuple[str, str, str | None]]:
    """``(scheme, name, namespace)`` for every direct scheme, in the order they are tried."""
    out: list[tuple[str, str, str | None]] = []
    for form in _forms(canonical):
        out += [
            ("claude", f"mcp__{server}__{form}", None),
            ("codex", form, f"mcp__{server}"),
            ("server-prefix", f"{server}_{form}", None),
            ("gemini", f"mcp_{server}_{form}", None),
            ("copilot", f"{server}-{_dashed(form)}", None),
            ("cline", f"{server}__{form}", None),
            ("droid", f"{server}___{form}", None),
        ]
        if form == canonical and "." in canonical:
            out.append(("bare", form, None))  # a dotted name is never a CLI's own tool
        if form.startswith(f"{server}_"):
            # Pi (pi-mcp-adapter 2.36, toolPrefix "server") does not repeat a prefix the tool name
            # already has: measured here, sharedos.escalate is exposed as `sharedos_escalate`
            out.append(("server-prefix-deduplicated", form, None))
    return out


def invented(canonical: str, arguments: Mapping[str, JsonValue] | None) -> ToolTarget:
    """A call to a tool the request does not offer, under its canonical name (a column that filters nothing)."""
    return ToolTarget(canonical, "invented", canonical, dict(arguments or {}))


def resolve_tool(
    canonical: str, arguments: Mapping[str, JsonValue] | None, exposed: Iterable[ExposedTool], server: str = "sharedos"
) -> ToolTarget | None:
    """The call to emit for ``canonical`` given the request's exposed tools, or ``None`` if not offered."""
    tools = list(exposed)
    offered = {(t.name, t.namespace) for t in tools}  # plain tuples: a request may offer very many tools
    args = dict(arguments or {})
    candidates = direct_candidates(canonical, server)
    for scheme, name, namespace in candidates:
        if (name, namespace) in offered:
            return ToolTarget(canonical, scheme, name, args, namespace)
    hashed = _hashed(tools, {(namespace, name) for _, name, namespace in candidates})
    for scheme, name, namespace in candidates:
        match = sorted(hashed.get((namespace, name), ()))
        if len(match) == 1:
            return ToolTarget(canonical, f"{scheme}+hash", match[0], args, namespace)
    if any(_direct_of_server(tool, server) for tool in tools):
        return None
    portable = portable_name(canonical)
    wrapped: dict[str, JsonValue]
    if (PI_PROXY_TOOL, None) in offered:
        wrapped = {"tool": f"{server}_{portable}", "args": args}
        return ToolTarget(canonical, "pi-proxy", PI_PROXY_TOOL, wrapped, proxy=True)
    if (PI_CODEMODE_TOOL, None) in offered:
        wrapped = {"code": codemode_script(canonical, args, server)}
        return ToolTarget(canonical, "pi-codemode", PI_CODEMODE_TOOL, wrapped, proxy=True)
    if (QWEN_PROXY_TOOL, None) in offered:
        wrapped = {"name": f"mcp__{server}__{portable}", "arguments": args}
        return ToolTarget(canonical, "qwen-proxy", QWEN_PROXY_TOOL, wrapped, proxy=True)
    if (VIBE_CODEMODE_TOOL, None) in offered:
        wrapped = {"code": vibe_codemode_script(canonical, args, server)}
        return ToolTarget(canonical, "vibe-codemode", VIBE_CODEMODE_TOOL, wrapped, proxy=True)
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


def codemode_script(canonical: str, arguments: Mapping[str, JsonValue], server: str = "sharedos") -> str:
    """The JavaScript a model sends Pi's ``codemode`` tool to call ``canonical`` once and return its result."""
    method = re.sub(r"[^A-Za-z0-9_]", "_", f"mcp__{server}__{canonical}")
    return f"return await tools.{method}({json.dumps(dict(arguments), sort_keys=True)});"


def vibe_codemode_script(canonical: str, arguments: Mapping[str, JsonValue], server: str = "sharedos") -> str:
    """The TypeScript a model sends Vibe's ``run_typescript`` to call ``canonical`` once and return its result."""
    group = re.sub(r"[^A-Za-z0-9_]", "_", f"mcp_{server}")
    method = re.sub(r"[^A-Za-z0-9_]", "_", canonical)
    call = f"tools.{group}.{method}({json.dumps(dict(arguments), sort_keys=True)})"
    return f"async function main() {{\n  return await {call};\n}}"


def is_server_tool(tool: ExposedTool, server: str = "sharedos") -> bool:
    """Whether ``tool`` is named like a tool of ``server`` under a direct scheme (any of the table above, a hash
    suffix included); a proxy tool is not (:data:`PROXY_TOOLS`)."""
    return _direct_of_server(tool, server)


def _direct_of_server(tool: ExposedTool, server: str) -> bool:
    """Whether ``tool`` is named like a tool of ``server`` under a direct scheme (a dotted flat name: ``bare``)."""
    if tool.namespace is not None:
        return tool.namespace == f"mcp__{server}"
    return "." in tool.name or tool.name.startswith((f"mcp__{server}__", f"{server}_", f"mcp_{server}_", f"{server}-"))


def carries_server_tools(exposed: Iterable[ExposedTool], server: str = "sharedos") -> bool:
    """True when the request offers any tool of ``server`` (any direct scheme), a proxy tool, or Droid's deferred
    tools behind ``ToolSearch``."""
    tools = list(exposed)
    return defers_server_tools(tools, server) or any(
        _direct_of_server(tool, server) or (tool.namespace is None and tool.name in PROXY_TOOLS)
        for tool in tools
    )


def defers_server_tools(exposed: Iterable[ExposedTool], server: str = "sharedos") -> bool:
    """Droid's exposure: ``ToolSearch`` offered, and the server's tools either not yet loaded (none offered) or
    offered under the ``droid`` scheme (``<s>___<f>``) only. Claude Code, whose tool search is off, never matches."""
    tools = list(exposed)
    if ExposedTool(TOOL_SEARCH_TOOL) not in tools:
        return False
    of_server = [t for t in tools if _direct_of_server(t, server)]
    return all(t.namespace is None and t.name.startswith(f"{server}___") for t in of_server)


def tool_search_target(canonicals: Iterable[str], server: str = "sharedos") -> ToolTarget:
    """The ``ToolSearch`` call that loads every tool the script calls, under Droid's names."""
    names = list(dict.fromkeys(f"{server}___{portable_name(c)}" for c in canonicals))
    return ToolTarget(TOOL_SEARCH_TOOL, "droid-tool-search", TOOL_SEARCH_TOOL, {"query": "select:" + ",".join(names)})
