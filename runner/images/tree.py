"""Where the image folders are: inside the installed ``runner`` package, never in a checkout around it.

An image folder holds a ``recipe.json`` (and, but for an mmdebstrap base, a ``Dockerfile``), any context files, the
image's committed ``lock.json`` and its documentation (Markdown, never part of the image). The bases and the files
every image shares are the builder's own (``runner/images/bases/<name>/``, ``runner/images/common/``); each harness
image is its harness's (``runner/harnesses/<package>/images/<name>/``), beside its profile and its package, so that
a harness is one folder. A harness a plugin provides (another distribution registering its package under the
``runner.harnesses`` entry point group, ``docs/plugins.md``) keeps its image folders under its package's ``images/``
the same way: they are found from the entry points' modules, without importing them. An image is named by its
folder's name, unique across all these places.

The **source root** is the directory the ``runner`` package is in (the checkout in a development install,
``site-packages`` in an installed one): a recipe's ``files`` are paths from it (``runner/harnesses/reference/
client.py``), and a build context holds them under ``repo/``. ``ImageSettings.repo_root`` ($RUNNER_REPO_ROOT)
replaces it with another tree holding a ``runner/`` package (a test's scratch copy of the recipes).
"""

from __future__ import annotations

import importlib.util
from importlib import metadata
from pathlib import Path

from runner.images.errors import ImageBuildError, ImageMissing
from runner.images.settings import ImageSettings

RECIPE = "recipe.json"
ENTRY_POINTS = "runner.harnesses"  # the group plugins register their harness packages under
LOCK = "lock.json"
# the directory the installed runner package is in: runner/images/tree.py is three levels below it
INSTALLED_ROOT = Path(__file__).resolve().parents[2]


def source_root(settings: ImageSettings) -> Path:
    """The tree whose ``runner/`` package holds the image folders: ``settings.repo_root`` ($RUNNER_REPO_ROOT), or
    the one this package was installed in."""
    return settings.repo_root if settings.repo_root is not None else INSTALLED_ROOT


def bases_dir(root: Path) -> Path:
    """The builder's own image folders: the Debian bases and the layers every vendor image stands on."""
    return root / "runner" / "images" / "bases"


def harnesses_dir(root: Path) -> Path:
    """The harness packages, each with its image folders under ``images/``."""
    return root / "runner" / "harnesses"


def plugin_dirs() -> list[Path]:
    """The folder of every plugin's harness package (the module each ``runner.harnesses`` entry point names), in the
    entry points' name order, each once (two entry points may name one module), found without importing it; one whose
    module cannot be found is left out here (the harness registry names it: runner.harnesses.interpreters)."""
    found: list[Path] = []
    for entry in sorted(metadata.entry_points(group=ENTRY_POINTS), key=lambda e: e.name):
        try:
            spec = importlib.util.find_spec(entry.module)
        except (ImportError, ValueError):
            continue
        if spec is not None and spec.origin is not None and spec.submodule_search_locations is not None:
            found.append(Path(spec.origin).resolve().parent)
    return list(dict.fromkeys(found))


def image_dirs(root: Path) -> dict[str, Path]:
    """Every image folder by its name, in name order: a folder with a ``recipe.json`` under :func:`bases_dir`, a
    harness package's ``images/`` under ``root``, or a plugin's package's ``images/`` (:func:`plugin_dirs`). Two
    folders of one name are refused (the name is the image's, in its tag, its lock and every profile that names
    it)."""
    found: dict[str, Path] = {}
    recipes = [*bases_dir(root).glob(f"*/{RECIPE}"), *harnesses_dir(root).glob(f"*/images/*/{RECIPE}"),
               *(recipe for folder in plugin_dirs() for recipe in folder.glob(f"images/*/{RECIPE}"))]
    for recipe in sorted(recipes):
        directory = recipe.parent
        if directory.name in found:
            raise ImageBuildError(f"two image folders are named {directory.name!r}: {found[directory.name]} and "
                                  f"{directory} (an image's name is its folder's, unique across {root / 'runner'})")
        found[directory.name] = directory
    return dict(sorted(found.items()))


def find_image_dir(name: str, root: Path) -> Path | None:
    """The folder of image ``name``, or None when there is none."""
    return image_dirs(root).get(name)


def image_dir(name: str, root: Path) -> Path:
    """The folder of image ``name`` (:class:`ImageMissing`, naming the images there are, when there is none)."""
    folders = image_dirs(root)
    if name not in folders:
        raise ImageMissing(f"no image recipe named {name!r} under {root / 'runner'} (known: {', '.join(folders)})")
    return folders[name]


def shown(path: Path, root: Path) -> str:
    """``path`` as messages show it: from the source root (``runner/harnesses/codex/images/codex/recipe.json``)."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)
