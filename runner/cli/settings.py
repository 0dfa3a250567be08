"""The edge: the one module of the command line that reads the environment, and where each command's options are
parsed into the typed, frozen settings everything below takes (:class:`runner.turn.settings.TurnSettings`, with the
plan's :class:`runner.matrix.plan.CellOptions`). A cell setting is declared (:func:`option`) and parsed
(:func:`cell_options`) from its row in :mod:`runner.matrix.options`.

The variables runner reads:

- ``RUNNER_PROFILES_DIR``: profiles are looked up there after ``--profiles-dir`` and before the user's directory
  (``$XDG_CONFIG_HOME/runner/harnesses``, else ``~/.config/runner/harnesses``), then the harness packages' own;
- ``RUNNER_REAPER=0``: no reaper process (a test of ``runner gc`` needs the leftover);
- ``DOCKER_HOST`` (and docker-py's ``DOCKER_TLS_VERIFY``, ``DOCKER_CERT_PATH``): the engine
  (:func:`runner.engine.connect` is handed them);
- every variable, as the host's (:meth:`runner.turn.settings.Host.from_environ`): the credentials live mode forwards,
  the values the scrubber keeps out of every file, ``RUNNER_LIVE_BASE_URL`` (live mode forwards there instead of the
  profile's ``model.live.base_url``) and ``RUNNER_FAULT=latch-disabled`` (a deliberately broken build, for proving
  that the judge and the gate catch it).

Importing this module costs nothing: what it builds is imported when a command runs.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

if TYPE_CHECKING:
    from typer.models import OptionInfo

    from runner.images.settings import ImageSettings
    from runner.matrix.options import Setting
    from runner.matrix.plan import CellOptions
    from runner.turn.settings import Host

T = TypeVar("T")
PROFILES_ENV = "RUNNER_PROFILES_DIR"
REAPER_ENV = "RUNNER_REAPER"


def profiles_dirs(explicit: Path | None = None) -> list[Path]:
    """Where to look for profiles before the harness packages' own: ``--profiles-dir``, then ``$RUNNER_PROFILES_DIR``,
    then the user's directory (:func:`user_profiles_dir`, whether or not it exists)."""
    return [path for _, path in profile_search(explicit)]


def profile_search(explicit: Path | None = None) -> list[tuple[str, Path]]:
    """:func:`profiles_dirs`, each with what put it there (``--profiles-dir``, ``$RUNNER_PROFILES_DIR``, ``user``)."""
    from_env = os.environ.get(PROFILES_ENV)
    found = [("--profiles-dir", explicit), (f"${PROFILES_ENV}", Path(from_env) if from_env else None),
             ("user", user_profiles_dir())]
    return [(label, path) for label, path in found if path is not None]


def user_profiles_dir() -> Path:
    """The user's own profiles: ``$XDG_CONFIG_HOME/runner/harnesses``, else ``~/.config/runner/harnesses``."""
    config = os.environ.get("XDG_CONFIG_HOME")
    return (Path(config) if config else Path.home() / ".config") / "runner" / "harnesses"


def host() -> Host:
    """The host's environment, read once, as the turns use it."""
    from runner.turn.settings import Host

    return Host.from_environ(os.environ)


def image_settings() -> ImageSettings:
    """Where the image code finds the repository and its cache, and the environment npm and mmdebstrap run with."""
    from runner.images.settings import ImageSettings

    return ImageSettings.from_environ(os.environ)


def engine_environ() -> Mapping[str, str]:
    """The host's variables the engine connection reads (``DOCKER_HOST`` and docker-py's TLS ones)."""
    return dict(os.environ)


def host_script_environ(**extra: str) -> dict[str, str]:
    """What a host script (``runner setup``) runs with: the user's environment (its PATH, DOCKER_HOST, sudo's), and
    ``extra``."""
    return {**os.environ, **extra}


def reaper_enabled() -> bool:
    """Whether a run holds a lease on a reaper process (``RUNNER_REAPER=0`` says no)."""
    return os.environ.get(REAPER_ENV, "1").strip().lower() not in ("0", "false", "no", "off")


def option(setting: Setting[T]) -> OptionInfo:
    """The typer declaration of a cell setting, from its row: a command takes it as
    ``name: Annotated[T, option(ROW)] = ROW.default`` (typer makes the flag of the parameter's name)."""
    import typer

    declared: OptionInfo = typer.Option(help=setting.help, metavar=setting.metavar, envvar=setting.envvar,
                                        min=setting.min)
    return declared


def cell_options(given: Mapping[str, object], *, run_id: str, run_unsupported: bool = False) -> CellOptions:
    """The command's options as the plan takes them, with the host's environment: ``given`` is what typer parsed,
    by parameter name (``ctx.params``), each setting parsed once, here, by its row. A value an option does not take
    raises :class:`runner.turn.settings.SettingError` naming the option (exit 2)."""
    from runner.matrix.plan import CellOptions

    return CellOptions.parse(given, run_id=run_id, host=host(), run_unsupported=run_unsupported)
