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
``claude``         ``mcp__<s>__<f>``                           Claude Code; Qwen Code with ``alwaysLoadTools``
``codex``          ``<f>`` inside the namespace ``mcp__<s>``   Codex 0.169 (call carries name + namespace)
``server-prefix``  ``<s>_<f>``                                 opencode; Pi with ``directTools``
``gemini``         ``mcp_<s>_<f>``                             Gemini CLI
``model``          ``<s>__<f>``                                runner's model column (``harness_profiles/
                                                               model.yaml``), tried after every CLI's scheme
=================  =========================================  ============================================

The model column has nothing between the model and MCP, so nothing filters what the model calls
(upstream's ``modelLimits``): when a request offers the server's tools under the ``model`` scheme, a
call to a tool it does not offer is *invented* under its canonical name (:func:`invented`), the way a
model may call a name from its prompt that is not among its tools, and the agent sends it to
SharedOS as it is.

Proxy schemes, used only when the request exposes no tool of the server under any direct scheme
(the CLI hides the MCP tools behind a gateway tool, and the model names the MCP tool in the
gateway's arguments). A request that shows the server's tools directly *and* a gateway (Qwen with
``alwaysLoadTools``, Pi with ``directTools``) has told the model which tools exist: a tool missing
from its direct names is not offered, and is not called through the gateway either.

===============  ==============  ==========================================================  ==========
scheme           tool called     arguments                                                   measured on
===============  ==============  ==========================================================  ==========
``pi-proxy``     ``mcp``         ``{"tool": "<s>_<portable>", "args": {...}}``               Pi + pi-mcp-adapter
``qwen-proxy``   ``tool_call``   ``{"name": "mcp__<s>__<portable>", "arguments": {...}}``    Qwen Code (deferred tools)
===============  ==============  ==========================================================  ==========

A CLI may also append a short hash to a name it had to normalise (``<name>_<hash>``): measured here
on Qwen Code 0.24.4, which exposes ``files.read`` as ``mcp__sharedos__files_read_1rtbejb`` (the dot
is not in the function-name alphabet; upstream saw DeepSeek do the same). After the exact names,
each direct scheme is tried again with such a suffix (``_`` and 5-8 lowercase letters or digits).

A tool the request exposes under none of these is *not offered* (the CLI filtered it, or its
router would refuse it): :func:`resolve_tool` returns ``None`` and the player skips that call.

A request *carries our tools* (:func:`carries_server_tools`) when any exposed tool belongs to the
server under one of the direct schemes, or a proxy tool is exposed. A request that does not (title
generation, memory agents, next-speaker checks) is a side request and gets a short text answer.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

PI_PROXY_TOOL = "mcp"
MODEL_SCHEME = "model"
HASH_SUFFIX = r"_[0-9a-z]{5,8}"
QWEN_PROXY_TOOL = "tool_call"


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
    arguments: dict[str, Any] = field(default_factory=dict)
    namespace: str | None = None
    proxy: bool = False


def portable_name(name: str) -> str:
    """Dots to underscores: the rename every CLI applies at the MCP boundary (``runner.core.tools``)."""
    return name.replace(".", "_")


def _forms(canonical: str) -> list[str]:
    portable = portable_name(canonical)
    return [portable] if portable == canonical else [portable, canonical]


def direct_candidates(canonical: str, server: str) -> list[tuple[str, str, str | None]]:
    """``(scheme, name, namespace)`` for every direct scheme, in the order they are tried."""
    out: list[tuple[str, str, str | None]] = []
    for form in _forms(canonical):
        out += [
            ("claude", f"mcp__{server}__{form}", None),
            ("codex", form, f"mcp__{server}"),
            ("server-prefix", f"{server}_{form}", None),
            ("gemini", f"mcp_{server}_{form}", None),
        ]
        if form.startswith(f"{server}_"):
            # Pi (pi-mcp-adapter 2.36, toolPrefix "server") does not repeat a prefix the tool name
            # already has: measured here, sharedos.escalate is exposed as `sharedos_escalate`
            out.append(("server-prefix-deduplicated", form, None))
    return out


def model_column_name(canonical: str, server: str) -> str:
    """How runner's model column (``runner/harnesses/model/agent.py``) exposes a tool: ``<s>__<f>``."""
    return f"{server}__{portable_name(canonical)}"


def invented(canonical: str, arguments: Mapping[str, Any] | None) -> ToolTarget:
    """A call to a tool the request does not offer, under its canonical name (the model column only)."""
    return ToolTarget(canonical, "invented", canonical, dict(arguments or {}))


def resolve_tool(
    canonical: str, arguments: Mapping[str, Any] | None, exposed: Iterable[ExposedTool], server: str = "sharedos"
) -> ToolTarget | None:
    """The call to emit for ``canonical`` given the request's exposed tools, or ``None`` if not offered."""
    tools = set(exposed)
    args = dict(arguments or {})
    candidates = direct_candidates(canonical, server)
    for scheme, name, namespace in candidates:
        if ExposedTool(name, namespace) in tools:
            return ToolTarget(canonical, scheme, name, args, namespace)
    for scheme, name, namespace in candidates:
        hashed = re.compile(re.escape(name) + HASH_SUFFIX)
        match = sorted(t.name for t in tools if t.namespace == namespace and hashed.fullmatch(t.name))
        if len(match) == 1:
            return ToolTarget(canonical, f"{scheme}+hash", match[0], args, namespace)
    if ExposedTool(model_column_name(canonical, server)) in tools:
        return ToolTarget(canonical, MODEL_SCHEME, model_column_name(canonical, server), args)
    if any(_direct_of_server(tool, server) for tool in tools):
        return None
    portable = portable_name(canonical)
    if ExposedTool(PI_PROXY_TOOL) in tools:
        wrapped = {"tool": f"{server}_{portable}", "args": args}
        return ToolTarget(canonical, "pi-proxy", PI_PROXY_TOOL, wrapped, proxy=True)
    if ExposedTool(QWEN_PROXY_TOOL) in tools:
        wrapped = {"name": f"mcp__{server}__{portable}", "arguments": args}
        return ToolTarget(canonical, "qwen-proxy", QWEN_PROXY_TOOL, wrapped, proxy=True)
    return None


def _direct_of_server(tool: ExposedTool, server: str) -> bool:
    """Whether ``tool`` is named like a tool of ``server`` under a direct scheme."""
    if tool.namespace is not None:
        return tool.namespace == f"mcp__{server}"
    return tool.name.startswith((f"mcp__{server}__", f"{server}_", f"mcp_{server}_"))


def carries_server_tools(exposed: Iterable[ExposedTool], server: str = "sharedos") -> bool:
    """True when the request offers any tool of ``server`` (any direct scheme) or a proxy tool."""
    return any(
        _direct_of_server(tool, server) or (tool.namespace is None and tool.name in (PI_PROXY_TOOL, QWEN_PROXY_TOOL))
        for tool in exposed
    )
