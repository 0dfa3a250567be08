"""How Factory Droid names the MCP tools it offers its model, and how it defers them (measured on 0.225.2).

Droid offers no MCP tool until the model loads it: the first request carries only a ``ToolSearch`` function and lists
the deferred names (``<server>___<tool>``, three underscores) in a system reminder; calling
``ToolSearch {"query": "select:<name>,..."}`` adds them to the next request's tools. A request exposing ``ToolSearch``
and no tool of the server, or the server's tools only under Droid's scheme, carries our tools; the scripted model then
makes the ``ToolSearch`` call its first playable call (:mod:`runner.model.script`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from runner.model.names import BUILT_IN, DirectScheme, ExposedTool, ToolNaming, ToolTarget, portable_name

TOOL_SEARCH_TOOL = "ToolSearch"
SCHEME = DirectScheme("droid", prefix="{server}___")


class ToolSearch:
    """Droid's loader of deferred tools (:class:`runner.model.names.DeferredTools`)."""

    def defers(self, exposed: Sequence[ExposedTool], server: str) -> bool:
        """``ToolSearch`` offered, and the server's tools either not yet loaded (none offered) or offered under Droid's
        scheme only. Claude Code, whose tool search is off, never matches."""
        if ExposedTool(TOOL_SEARCH_TOOL) not in exposed:
            return False
        return all(SCHEME.owns(tool, server) for tool in exposed if BUILT_IN.owns(tool, server))

    def load(self, canonicals: Iterable[str], server: str) -> ToolTarget:
        """The ``ToolSearch`` call that loads every tool the script calls, under Droid's names."""
        names = list(dict.fromkeys(f"{server}___{portable_name(c)}" for c in canonicals))
        return ToolTarget(TOOL_SEARCH_TOOL, "droid-tool-search", TOOL_SEARCH_TOOL,
                          {"query": "select:" + ",".join(names)})


NAMING = ToolNaming(direct=(SCHEME,), deferred=ToolSearch())
