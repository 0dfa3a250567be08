"""Harness profiles: one YAML file per harness (``runner/harnesses/<package>/<id>.yaml``, in its harness's folder),
validated on load.

A profile says everything the turn needs to start one CLI and read what it prints: its image,
its argv template, how the prompt is fed, its environment, which stream interpreter reads its
stdout, where it keeps its own session transcript, and how it is wound down. Values are
substituted into argv and env with ``string.Template`` (``${prompt}``, ``${turn_dir}``,
``${mcp_socket}``, ``${script}``); nothing is ever handed to a shell.

A bad profile fails with :class:`ProfileError` naming the file, the field and what was expected.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from runner.errors import ProfileProblem, UnknownName
from runner.model.types import ModelEndpoint

PROFILE_ID = re.compile(r"^[a-z][a-z0-9-]{0,39}$")
PLACEHOLDERS = frozenset(
    {"prompt", "prompt_json", "turn_dir", "mcp_socket", "script", "home", "model_url", "model_port", "api_key", "model",
     "model_dialect"}
)


class ProfileError(ProfileProblem, ValueError):
    """A profile that cannot be used; the message names the file and the field."""


class UnknownHarness(UnknownName, LookupError):
    def __init__(self, harness: str, known: list[str], looked_in: Sequence[Path] = ()) -> None:
        where = f"; looked in {', '.join(str(d) for d in looked_in)}" if looked_in else ""
        super().__init__(f"no such harness: {harness!r} (known: {', '.join(known) or 'none'}{where})")
        self.harness = harness


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class PromptFeed(_Strict):
    """How the prompt reaches the CLI. ``argv``: through ``${prompt}`` in argv; ``stdin-line``: one line
    on stdin (``stdin_template`` rendered, default the prompt itself); ``stdin-file``: the prompt as the
    whole of stdin; ``none``. stdin is closed after the write unless ``keep_stdin_open`` (then it is
    closed at the CLI's first terminal frame)."""

    via: Literal["argv", "stdin-line", "stdin-file", "none"] = "argv"
    keep_stdin_open: bool = False
    stdin_template: str | None = None

    @field_validator("stdin_template")
    @classmethod
    def _template(cls, value: str | None) -> str | None:
        if value is not None:
            _check_template(value)
        return value


class ConfigFile(_Strict):
    """A file rendered into the CLI's HOME before it starts (placeholders substituted)."""

    path: str = Field(description="relative to HOME")
    content: str

    @field_validator("path")
    @classmethod
    def _relative(cls, value: str) -> str:
        parts = value.split("/")
        if value.startswith("/") or ".." in parts or not value:
            raise ValueError("expected a relative path inside HOME, without '..'")
        return value

    @field_validator("content")
    @classmethod
    def _content(cls, value: str) -> str:
        _check_template(value)
        return value


class WindDown(_Strict):
    grace_seconds: float = Field(default=5.0, ge=0, le=300)


class Profile(_Strict):
    id: str
    label: str
    description: str = ""
    image: str = Field(description="the image, by its folder's name (runner/harnesses/<package>/images/<image>/)")
    argv: list[str] = Field(min_length=1)
    prompt: PromptFeed = PromptFeed()
    env: dict[str, str] = {}
    home: Literal["tmpfs", "turn"] = "tmpfs"  # "turn": HOME lives in the turn dir and is kept after the turn
    config_files: list[ConfigFile] = []
    model: ModelEndpoint | None = None
    mcp_startup_required: bool = False  # the CLI reports its MCP servers at start; a failed one is infra
    requires_mcp_session: bool = True  # a turn in which the CLI never opened an MCP session is infra
    unavailable: str | None = None  # a harness that cannot run here, and why (never pretended)
    interpreter: str = "jsonl"
    issues_uncatalogued: bool = False  # True only for a harness with no router of its own
    mcp_server_name: str = "sharedos"
    session_transcript: str | None = None  # relative to HOME (home: turn): copied next to stdout.log
    credentials: list[str] = []
    default_deadline_seconds: float = Field(default=120.0, gt=0, le=3600)
    # what one cell of this harness takes (turn, judge, artifacts), measured here: CI sizes its shards by it
    cell_seconds: float = Field(default=20.0, gt=0, le=3600)
    wind_down: WindDown = WindDown()
    source: str = ""  # the file this profile came from (set by the loader)

    @field_validator("id")
    @classmethod
    def _id(cls, value: str) -> str:
        if not PROFILE_ID.match(value):
            raise ValueError(f"expected lowercase letters, digits and dashes matching {PROFILE_ID.pattern}")
        return value

    @field_validator("session_transcript")
    @classmethod
    def _session_transcript(cls, value: str | None) -> str | None:
        if value is not None and (not value or value.startswith("/") or ".." in value.split("/") or "\x00" in value):
            raise ValueError("expected a relative path inside HOME, without '..'")
        return value

    @field_validator("interpreter")
    @classmethod
    def _interpreter(cls, value: str) -> str:
        # the registry of harness packages (every package's HARNESS), imported by the profiles' loader only
        from runner.harnesses.interpreters import INTERPRETERS

        if value not in INTERPRETERS:
            raise ValueError(f"no such interpreter {value!r} (known: {', '.join(sorted(INTERPRETERS))})")
        return value

    @field_validator("argv")
    @classmethod
    def _argv(cls, value: list[str]) -> list[str]:
        for item in value:
            _check_template(item)
        return value

    @field_validator("env")
    @classmethod
    def _env(cls, value: dict[str, str]) -> dict[str, str]:
        for key, item in value.items():
            if not re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
                raise ValueError(f"{key!r} is not an environment variable name")
            _check_template(item)
        return value

    def render_argv(self, values: dict[str, str]) -> list[str]:
        return [string.Template(item).substitute(values) for item in self.argv]

    def render_env(self, values: dict[str, str]) -> dict[str, str]:
        return {k: string.Template(v).substitute(values) for k, v in self.env.items()}

    def render_config_files(self, values: dict[str, str]) -> dict[str, str]:
        return {f.path: string.Template(f.content).substitute(values) for f in self.config_files}


def _check_template(text: str) -> None:
    try:
        names = {m.group("named") or m.group("braced") for m in string.Template.pattern.finditer(text)}
    except ValueError as err:  # an invalid placeholder
        raise ValueError(f"invalid placeholder in {text!r}: {err}") from None
    names.discard(None)
    if "$" in text and not names and "$$" not in text:
        raise ValueError(f"invalid placeholder in {text!r}: use ${{name}} or $$ for a literal dollar")
    unknown = sorted(n for n in names if n not in PLACEHOLDERS)
    if unknown:
        raise ValueError(f"unknown placeholder ${{{unknown[0]}}}; expected one of {sorted(PLACEHOLDERS)}")


def load_profile(path: Path) -> Profile:
    """Load and validate one profile file."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as err:
        raise ProfileError(f"{path}: cannot read: {err.strerror}") from None
    except yaml.YAMLError as err:
        raise ProfileError(f"{path}: not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise ProfileError(f"{path}: expected a mapping of profile fields at the top level")
    try:
        profile = Profile.model_validate({**data, "source": str(path)})
    except ValidationError as err:
        problems = [f"{path}: field '{_where(e['loc'])}': {_problem(e)}" for e in err.errors()]
        raise ProfileError("\n".join(problems)) from None
    if profile.id != path.stem:
        raise ProfileError(f"{path}: field 'id': expected {path.stem!r} (the file name), got {profile.id!r}")
    return profile


def _problem(error: ErrorDetails) -> str:
    """pydantic's message, without its "Value error, " prefix, and the value at fault unless it already says it."""
    text = error["msg"].removeprefix("Value error, ")
    got = repr(error["input"])
    if error["type"] == "missing" or isinstance(error["input"], dict) or got in text:
        return text
    return f"{text} (got {got})"


def _where(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


HARNESSES = Path(__file__).resolve().parent  # runner/harnesses: one folder per harness package


def profile_dirs(extra: Sequence[Path] = ()) -> list[Path]:
    """Where profiles are looked up: the ``extra`` directories in order (the command's edge gives ``--profiles-dir``,
    ``$RUNNER_PROFILES_DIR`` and the user's directory: runner.cli.settings), then each harness package's folder, the
    built-in ones then the plugins' (:func:`runner.harnesses.interpreters.package_dirs`)."""
    # the registry of harness packages (every package's HARNESS, the plugins' too), imported when profiles are sought
    from runner.harnesses.interpreters import package_dirs

    return [*extra, *(d for d in package_dirs() if any(d.glob("*.yaml")))]


def looked_in(extra: Sequence[Path] = ()) -> list[Path]:
    """:func:`profile_dirs` as a message names them: the ``extra`` directories, then ``runner/harnesses`` for every
    built-in package, then each plugin's folder."""
    dirs = [*extra, HARNESSES]
    return dirs + [d for d in profile_dirs() if not d.is_relative_to(HARNESSES)]


def shipped_profile_dirs() -> list[Path]:
    """The harness packages' folders that hold a profile (``runner/harnesses/<package>/<id>.yaml``), in name order."""
    return sorted(p.parent for p in HARNESSES.glob("*/__init__.py") if any(p.parent.glob("*.yaml")))


def shipped_profiles() -> list[Path]:
    """Every shipped profile file, in the order of its id."""
    return sorted((p for d in shipped_profile_dirs() for p in d.glob("*.yaml")), key=lambda p: p.stem)


def shipped_profile(harness: str) -> Path:
    """The shipped profile file of ``harness`` (:class:`UnknownHarness` when no package ships one)."""
    found = next((p for p in shipped_profiles() if p.stem == harness), None)
    if found is None:
        raise UnknownHarness(harness, [p.stem for p in shipped_profiles()])
    return found


def known_harnesses(extra: Sequence[Path] = ()) -> list[str]:
    return sorted({p.stem for d in profile_dirs(extra) if d.is_dir() for p in d.glob("*.yaml")})


def find_profile(harness: str, extra: Sequence[Path] = ()) -> Profile:
    """The profile for a harness id, searching :func:`profile_dirs` in order. An id is a plain name
    (:data:`PROFILE_ID`), never a path: ``../x`` names no profile, whatever file it would reach."""
    if not PROFILE_ID.match(harness):
        raise UnknownHarness(harness, known_harnesses(extra), looked_in(extra))
    for directory in profile_dirs(extra):
        candidate = directory / f"{harness}.yaml"
        if candidate.is_file():
            return load_profile(candidate)
    raise UnknownHarness(harness, known_harnesses(extra), looked_in(extra))
