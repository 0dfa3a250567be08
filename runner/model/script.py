"""The scripted model: plays a turn's action list in whatever dialect it is asked. Pure, stateless.

Like a real model, the player keeps no state between requests: everything it answers is derived
from the request alone, so retries, side requests and parallel requests cannot desynchronise it.

**Step rule.** ``step`` is the number of tool results already present in the request's conversation
(``function_call_output`` items, ``role: tool`` messages, ``tool_result`` blocks, ``functionResponse``
parts: each dialect counts its own). The *plan* is computed from the action list and the request's
own tool list (:func:`plan_for`):

1. Walk the actions in order up to the first ``finish`` or ``hang`` (that action is the plan's
   terminal; with neither, the terminal is a final text of :data:`DEFAULT_FINAL_TEXT`). Actions
   after the terminal are never played.
2. Each ``call`` whose tool the request exposes (:func:`runner.model.names.resolve_tool`) becomes
   the next *playable* call; a ``call`` whose tool is not exposed at all is skipped, and the skip is
   reported with its reason (it goes into the exchange log) -- except on a column that filters
   nothing its model calls (``invents``: the model column, ``issues_uncatalogued``), where the call
   is made under its canonical name (:func:`runner.model.names.invented`). ``exit`` and ``flood``
   are things a CLI process does, not a model: they are skipped too, with a reason.
3. ``say`` texts are carried to the next playable call and sent as assistant text before it (or,
   with no later playable call, before the ``finish`` text, separated by a blank line).

Then step ``N`` answers the ``N``-th playable call (0-based) while ``N < len(calls)``, and the
terminal otherwise: the ``finish`` text, or for ``hang`` a stall (the HTTP response is held open
without an answer until the client goes away or the server stops). Because a skipped call is
removed *before* indexing, the mapping is the same for every request of a turn as long as the CLI
offers the same tools, and the number of tool results the CLI sends back always equals the number
of playable calls answered so far.

A request that carries none of the server's tools (:func:`runner.model.names.carries_server_tools`)
is a side request (title generation, memory agents) and gets :data:`SIDE_TEXT`, whatever its step.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from runner.core.outcomes import JsonValue
from runner.model.names import (
    BUILT_IN,
    ExposedTool,
    ToolNaming,
    ToolTarget,
    carries_server_tools,
    invented,
    resolve_tool,
)

SIDE_TEXT = "OK."
DEFAULT_FINAL_TEXT = "Done."
ACTION_KINDS = frozenset({"call", "say", "flood", "exit", "hang", "finish"})


class ScriptError(ValueError):
    """An action list the scripted model cannot play."""


@dataclass(frozen=True)
class ToolCallReply:
    target: ToolTarget
    step: int
    preamble: str | None = None

    @property
    def call_id(self) -> str:
        return f"call_runner_{self.step}"


@dataclass(frozen=True)
class TextReply:
    text: str
    side: bool = False


@dataclass(frozen=True)
class StallReply:
    """Hold the response open without answering."""


Reply = ToolCallReply | TextReply | StallReply


@dataclass(frozen=True)
class Skipped:
    index: int
    action: dict[str, JsonValue]
    reason: str

    def to_json(self) -> dict[str, JsonValue]:
        return {"index": self.index, "action": self.action, "reason": self.reason}


@dataclass(frozen=True)
class PlannedCall:
    index: int  # position in the action list
    target: ToolTarget
    preamble: str | None = None


@dataclass(frozen=True)
class Plan:
    calls: tuple[PlannedCall, ...]
    terminal: TextReply | StallReply
    skipped: tuple[Skipped, ...] = ()
    side: bool = False

    def reply(self, step: int) -> Reply:
        """What to answer at ``step`` (the number of tool results in the request)."""
        if self.side:
            return TextReply(SIDE_TEXT, side=True)
        if 0 <= step < len(self.calls):
            planned = self.calls[step]
            return ToolCallReply(planned.target, step, planned.preamble)
        return self.terminal


@dataclass(frozen=True)
class Decision:
    """One request's answer, with what the exchange log needs to explain it."""

    step: int
    reply: Reply
    plan: Plan

    def to_json(self) -> dict[str, JsonValue]:
        body: dict[str, JsonValue] = {"step": self.step, "playable_calls": len(self.plan.calls)}
        reply = self.reply
        if isinstance(reply, ToolCallReply):
            body["reply"] = "call"
            body["call"] = {
                "canonical": reply.target.canonical, "scheme": reply.target.scheme, "name": reply.target.name,
                "namespace": reply.target.namespace, "call_id": reply.call_id,
            }
        elif isinstance(reply, TextReply):
            body["reply"] = "side" if reply.side else "text"
        else:
            body["reply"] = "stall"
        if self.plan.skipped:
            body["skipped"] = [s.to_json() for s in self.plan.skipped]
        return body


@runtime_checkable
class _Serialisable(Protocol):
    """What ``runner.conformance.behaviours.Action`` offers (an isinstance check is a hasattr here)."""

    def to_json(self) -> object: ...


def normalise_actions(actions: Iterable[object]) -> list[dict[str, JsonValue]]:
    """Action dicts (or ``runner.conformance.behaviours.Action`` objects), checked: anything else is a
    :class:`ScriptError`, so the items are of any type until then."""
    out: list[dict[str, JsonValue]] = []
    for index, item in enumerate(actions):
        action = item.to_json() if isinstance(item, _Serialisable) else item
        if not isinstance(action, Mapping):
            raise ScriptError(f"actions[{index}] is not an object")
        action = dict(action)
        kind = action.get("do")
        if kind not in ACTION_KINDS:
            raise ScriptError(f"actions[{index}]: unknown action {kind!r} (expected one of {sorted(ACTION_KINDS)})")
        if kind == "call":
            if not isinstance(action.get("tool"), str) or not action["tool"]:
                raise ScriptError(f"actions[{index}]: call needs a string 'tool'")
            if action.get("arguments") is not None and not isinstance(action["arguments"], Mapping):
                raise ScriptError(f"actions[{index}]: call 'arguments' must be an object")
        if kind in ("say", "finish") and action.get("text") is not None and not isinstance(action["text"], str):
            raise ScriptError(f"actions[{index}]: {kind} 'text' must be a string")
        out.append(action)
    return out


def plan_for(
    actions: Sequence[Mapping[str, JsonValue]], exposed: Iterable[ExposedTool], server: str = "sharedos", *,
    invents: bool = False, naming: ToolNaming = BUILT_IN,
) -> Plan:
    """The playable calls and the terminal of ``actions`` for a request exposing ``exposed``, named the way the
    harness's CLI names them (``naming``, its package's ``tool_naming``); ``invents``: the column filters nothing its
    model calls, so an unoffered call is made under its canonical name."""
    tools = list(exposed)
    side = not carries_server_tools(tools, server, naming)
    calls: list[PlannedCall] = []
    skipped: list[Skipped] = []
    says: list[str] = []
    terminal: TextReply | StallReply | None = None
    for index, raw in enumerate(actions):
        action = dict(raw)
        kind = action.get("do")
        if kind == "call":
            arguments = action.get("arguments")
            if arguments is not None and not isinstance(arguments, Mapping):  # normalise_actions rejected it already
                raise ScriptError(f"actions[{index}]: call 'arguments' must be an object")
            target = resolve_tool(str(action["tool"]), arguments, tools, server, naming)
            if target is None and invents and not side:
                target = invented(str(action["tool"]), arguments)
            if target is None:
                reason = f"tool {action['tool']!r} is not among the request's tools under any known name"
                skipped.append(Skipped(index, action, reason))
                continue
            calls.append(PlannedCall(index, target, "\n\n".join(says) if says else None))
            says = []
        elif kind == "say":
            if action.get("text"):
                says.append(str(action["text"]))
        elif kind in ("exit", "flood"):
            skipped.append(Skipped(index, action, f"{kind!r} is a CLI action a model cannot express"))
        elif kind == "hang":
            terminal = StallReply()
            break
        elif kind == "finish":
            terminal = TextReply("\n\n".join([*says, str(action.get("text") or DEFAULT_FINAL_TEXT)]))
            break
    if terminal is None:
        terminal = TextReply("\n\n".join([*says, DEFAULT_FINAL_TEXT]))
    if naming.deferred is not None and naming.deferred.defers(tools, server):
        # a CLI that defers its MCP tools (runner.model.names.DeferredTools): load them first, in every request
        wanted = [str(a["tool"]) for a in actions if a.get("do") == "call"]
        skipped = [s for s in skipped if s.action.get("do") != "call"]  # not offered *yet*: loaded by the loader
        calls.insert(0, PlannedCall(-1, naming.deferred.load(wanted, server)))
    return Plan(tuple(calls), terminal, tuple(skipped), side)


def decide(
    actions: Sequence[Mapping[str, JsonValue]], exposed: Iterable[ExposedTool], step: int, server: str = "sharedos",
    naming: ToolNaming = BUILT_IN,
) -> Decision:
    plan = plan_for(actions, exposed, server, naming=naming)
    return Decision(step, plan.reply(step), plan)
