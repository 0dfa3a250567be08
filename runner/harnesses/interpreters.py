"""Stream interpreters by name: a profile picks one with ``interpreter: <name>``.

- ``jsonl``: runner's own frame vocabulary, spoken by the reference harness and usable by any CLI
  wrapper nobody has written an interpreter for (documented in docs/profiles.md):
  ``session.started`` (with ``mcp_servers[].status``), ``message``, ``turn.completed``,
  ``turn.failed``; ``tool.call``/``tool.result`` frames are read for the transcript only, because on
  the MCP path calls travel over MCP, never over stdout (§8 item 9).
- ``exit-code``: reads no frames; the exit code alone decides (0 completes with no prose).

A harness whose CLI prints its own frames adds its interpreter to its package and declares it in the package's
``HARNESS`` (:mod:`runner.harnesses.package`); this module finds every package's, so nothing here names a harness:
runner's own folders under ``runner/harnesses``, then the plugins, packages of other distributions registered under the
``runner.harnesses`` entry point group (``docs/plugins.md``). A broken plugin is set aside by name (:data:`BROKEN`),
with a :class:`PluginWarning`, and never stops the others from loading.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import TypeVar

import runner.harnesses
from runner.core.outcomes import JsonValue, ProtocolError
from runner.core.vocabulary import Code
from runner.errors import ProfileProblem
from runner.harnesses.package import UNDECLARED, DeclaredPolicy, HarnessPackage
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
        error = frame.get("error")
        if not isinstance(error, dict):
            error = {}
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
        SOURCES[info.name] = BUILT_IN_SOURCE
        found[info.name] = harness
    return found


class PluginWarning(UserWarning):
    """A plugin runner skipped (its name and why): every other harness is still there."""


@dataclass(frozen=True)
class BrokenPlugin:
    """A plugin that gives no usable harness package: its entry point's name, where it comes from, and why."""

    name: str
    source: str
    problem: str

    def __str__(self) -> str:
        return f"plugin {self.name!r} ({self.source}) skipped: {self.problem}"


@dataclass(frozen=True)
class Plugin:
    """A plugin's harness package: its entry point's name, the package, its folder, and where it comes from."""

    name: str
    package: HarnessPackage
    folder: Path
    source: str


def discover_plugins(
    taken: Mapping[str, HarnessPackage], interpreters: Mapping[str, Interpreter]
) -> tuple[list[Plugin], list[BrokenPlugin]]:
    """Every harness package another distribution registers under the :data:`ENTRY_POINTS` group (``<name> =
    <module>:<attribute>``, the attribute a :class:`HarnessPackage`; its profiles and image folders beside that
    module), in name order; one that cannot be loaded, gives anything else, or takes a name or an interpreter another
    package has (``taken``, ``interpreters``, or an earlier plugin) is set aside, and the rest are unaffected."""
    plugins: list[Plugin] = []
    broken: list[BrokenPlugin] = []
    names, provided = set(taken), dict(interpreters)
    for entry in sorted(metadata.entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        dist = entry.dist
        source = f"plugin {dist.name} {dist.version}" if dist is not None else f"plugin {entry.value}"
        found = _plugin_problem(entry, names, provided)
        if isinstance(found, str):
            broken.append(BrokenPlugin(entry.name, source, found))
            continue
        package, folder = found
        plugins.append(Plugin(entry.name, package, folder, source))
        names.add(entry.name)
        provided.update(package.interpreters)
    return plugins, broken


def _plugin_problem(
    entry: metadata.EntryPoint, taken: set[str], interpreters: Mapping[str, Interpreter]
) -> str | tuple[HarnessPackage, Path]:
    """The plugin's package and its folder, or what is wrong with it."""
    if entry.name in taken:
        return f"a harness package named {entry.name!r} is already there"
    try:
        package = entry.load()
    except Exception as error:  # a plugin is another distribution's code: whatever it raises, it is that plugin's
        return f"cannot be loaded ({entry.value}): {type(error).__name__}: {error}"
    if not isinstance(package, HarnessPackage):
        return f"{entry.value} is a {type(package).__name__}, not a runner.harnesses.package.HarnessPackage"
    clash = sorted(set(package.interpreters) & set(interpreters))
    if clash:
        return f"its interpreter(s) {clash} are another package's"
    module_file = getattr(sys.modules.get(entry.module), "__file__", None)
    if module_file is None:
        return f"its module {entry.module!r} has no folder to hold its profiles"
    return package, Path(module_file).resolve().parent


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


ENTRY_POINTS = "runner.harnesses"  # the entry point group a plugin registers its harness package under
BUILT_IN_SOURCE = "built-in"
FOLDERS: dict[str, Path] = {}  # each package's folder, by its name (filled by discover)
SOURCES: dict[str, str] = {}  # where each package comes from: built-in, or the plugin's distribution and version
BROKEN: dict[str, BrokenPlugin] = {}  # the plugins skipped, by their entry point's name
PACKAGES: dict[str, HarnessPackage] = discover()
# runner's own two, then every package's
INTERPRETERS: dict[str, Interpreter] = _merged("interpreter", [
    (__name__, {"jsonl": jsonl, "exit-code": exit_code_only}),
    *((f"{__package__}.{name}", package.interpreters) for name, package in PACKAGES.items()),
])
# the plugins after the built-in ones: a plugin never displaces one
_plugins, _broken = discover_plugins(PACKAGES, INTERPRETERS)
for _plugin in _plugins:
    PACKAGES[_plugin.name], FOLDERS[_plugin.name] = _plugin.package, _plugin.folder
    SOURCES[_plugin.name] = _plugin.source
    INTERPRETERS.update(_plugin.package.interpreters)
for _set_aside in _broken:
    BROKEN[_set_aside.name] = _set_aside
    warnings.warn(str(_set_aside), PluginWarning, stacklevel=1)
# interpreters whose CLI keeps its turn's events in a session log read after it exits (stream.SessionReader)
SESSION_READERS: dict[str, SessionReader] = _merged(
    "session reader", [(f"{__package__}.{name}", package.session_readers) for name, package in PACKAGES.items()]
)


def package_dirs() -> list[Path]:
    """Every harness package's folder, the built-in ones then the plugins', each in name order."""
    return [FOLDERS[name] for name in sorted(FOLDERS, key=lambda n: (SOURCES[n] != BUILT_IN_SOURCE, n))]


def package_source(profile_source: str) -> str | None:
    """Where the package holding the profile file ``profile_source`` comes from, or None outside every package."""
    owner = _owner(profile_source)
    if owner is None or SOURCES[owner] == BUILT_IN_SOURCE:
        return None if owner is None else BUILT_IN_SOURCE
    return f"{SOURCES[owner]} ({owner})"


def _owner(profile_source: str) -> str | None:
    """The name of the package whose folder holds the profile file ``profile_source``, if any."""
    folder = Path(profile_source).resolve().parent
    return next((name for name, path in FOLDERS.items() if path == folder), None)


def tool_naming(profile_source: str) -> ToolNaming:
    """How the CLI of the profile read from ``profile_source`` names its MCP tools: the ``tool_naming`` of the package
    whose folder holds that file, or every built-in scheme for a profile outside any package (a user directory)."""
    owner = _owner(profile_source)
    return PACKAGES[owner].tool_naming if owner is not None else BUILT_IN


def get_session_reader(name: str) -> SessionReader | None:
    return SESSION_READERS.get(name)


def get_interpreter(name: str) -> Interpreter:
    try:
        return INTERPRETERS[name]
    except KeyError:
        raise UnknownInterpreter(name) from None


def declared_policy(harness_id: str) -> DeclaredPolicy:
    """The tool policy the harness ``harness_id`` declares (ADR 0027): the declaration of the package that names it,
    or :data:`~runner.harnesses.package.UNDECLARED` (``unknown``) when none does (a plugin, a user's profile)."""
    return next((p.tool_policy[harness_id] for p in PACKAGES.values() if harness_id in p.tool_policy), UNDECLARED)
