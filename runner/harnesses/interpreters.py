"""Stream interpreters by name: a profile picks one with ``interpreter: <name>``.

- ``jsonl``: runner's own frame vocabulary, spoken by the reference harness and usable by any CLI
  wrapper nobody has written an interpreter for (documented in the README):
  ``session.started`` (with ``mcp_servers[].status``), ``message``, ``turn.completed``,
  ``turn.failed``; ``tool.call``/``tool.result`` frames are read for the transcript only, because on
  the MCP path calls travel over MCP, never over stdout (§8 item 9).
- ``exit-code``: reads no frames; the exit code alone decides (0 completes with no prose).

A harness whose CLI prints its own frames adds its interpreter to its package and declares it in the package's
``HARNESS`` (:mod:`runner.harnesses.package`); this module finds every package's, so nothing here names a harness.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Mapping
from pathlib import Path
from typing import TypeVar

import runner.harnesses
from runner.core.outcomes import JsonValue, ProtocolError
from runner.core.vocabulary import Code
from runner.errors import ProfileProblem
from runner.harnesses.package import HarnessPackage
from runner.harnesses.stream import Completed, Failed, Interpreter, McpStartup, Message, SessionReader, Step
from runner.model.names import BUILT_IN, ToolNaming

T = TypeVar("T")


class UnknownInterpreter(ProfileProblem, LookupError):
    """A profile naming an interpreter no package provides (a loaded profile cannot: its ``interpreter`` is checked
    against :data:`INTERPRETERS` when it loads)."""

    def __init__(self, name: str) -> None:
        super().__init__(f"no such stream interpreter: {name!r} (known: {', '.join(sorted(INTERPRETERS))})")


def jsonl(frame: dict[str, JsonValue]) -> list[Step]:
    kind = frame.get("type")
    if kind == "session.started":
        servers = frame.get("mcp_servers")
        return (
            [
                McpStartup(str(s.get("name")), s.get("status") == "connected", str(s.get("error") or s.get("status")))
                for s in servers
                if isinstance(s, dict)
            ]
            if isinstance(servers, list)
            else []
        )
    if kind == "message" and isinstance(text := frame.get("text"), str):
        return [Message(text)]
    if kind == "turn.completed":
        text = frame.get("text")
        return [Completed({"text": text} if isinstance(text, str) else None)]
    if kind == "turn.failed":
        error = frame.get("error") if isinstance(frame.get("error"), dict) else {}
        assert isinstance(error, dict)
        code = str(error.get("code") or Code.HARNESS_FAILED)
        text = str(error.get("message") or "The harness reported a failure.")
        return [Failed(ProtocolError.of(code, text, retryable=True))]
    return []


def exit_code_only(frame: dict[str, JsonValue]) -> list[Step]:
    return []


def discover() -> dict[str, HarnessPackage]:
    """Every package under ``runner/harnesses`` by its name, each with the ``HARNESS`` its ``__init__`` declares."""
    found: dict[str, HarnessPackage] = {}
    for info in sorted(pkgutil.iter_modules(runner.harnesses.__path__), key=lambda i: i.name):
        if not info.ispkg:
            continue
        module = importlib.import_module(f"{runner.harnesses.__name__}.{info.name}")
        harness = getattr(module, "HARNESS", None)
        if not isinstance(harness, HarnessPackage):
            raise TypeError(f"{module.__name__} declares no HARNESS (a runner.harnesses.package.HarnessPackage)")
        FOLDERS[info.name] = Path(str(module.__file__)).resolve().parent
        found[info.name] = harness
    return found


def _merged(what: str, provided: list[tuple[str, Mapping[str, T]]]) -> dict[str, T]:
    """Every ``(provider, {name: value})`` in one mapping, each name provided once."""
    merged: dict[str, T] = {}
    origin: dict[str, str] = {}
    for provider, values in provided:
        for name, value in values.items():
            if name in merged:
                raise ValueError(f"{what} {name!r} is provided twice: by {origin[name]} and by {provider}")
            merged[name], origin[name] = value, provider
    return merged


FOLDERS: dict[str, Path] = {}  # each package's folder, by its name (filled by discover)
PACKAGES: dict[str, HarnessPackage] = discover()
# runner's own two, then every package's
INTERPRETERS: dict[str, Interpreter] = _merged("interpreter", [
    (__name__, {"jsonl": jsonl, "exit-code": exit_code_only}),
    *((f"{__package__}.{name}", package.interpreters) for name, package in PACKAGES.items()),
])
# interpreters whose CLI keeps its turn's events in a session log read after it exits (stream.SessionReader)
SESSION_READERS: dict[str, SessionReader] = _merged(
    "session reader", [(f"{__package__}.{name}", package.session_readers) for name, package in PACKAGES.items()]
)


def tool_naming(profile_source: str) -> ToolNaming:
    """How the CLI of the profile read from ``profile_source`` names its MCP tools: the ``tool_naming`` of the package
    whose folder holds that file, or every built-in scheme for a profile outside any package (a user directory)."""
    folder = Path(profile_source).resolve().parent
    owner = next((name for name, path in FOLDERS.items() if path == folder), None)
    return PACKAGES[owner].tool_naming if owner is not None else BUILT_IN


def get_session_reader(name: str) -> SessionReader | None:
    return SESSION_READERS.get(name)


def get_interpreter(name: str) -> Interpreter:
    try:
        return INTERPRETERS[name]
    except KeyError:
        raise UnknownInterpreter(name) from None
