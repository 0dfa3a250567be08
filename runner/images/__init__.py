"""Pinned images: the offline bases and one image per harness, each locked in its folder's ``lock.json`` (what any
machine reproduces: pins, integrity hashes, recipe hashes) and recorded per machine under
``$RUNNER_CACHE_DIR/builds`` (:class:`ImageSettings`, read by the edge and handed to every function here).

* :mod:`.tree`: where the image folders are (the bases and common files here, under ``bases/`` and ``common/``; each
  harness's under ``runner/harnesses/<package>/images/``), found from the installed package.
* :mod:`.bootstrap`: the mmdebstrap bases (bootstrap, import, or a registry base pinned by digest).
* :mod:`.recipes`: what an image folder's ``recipe.json`` declares, and which harnesses can be built here.
* :mod:`.staging`: wheels and npm packages staged on the host once per package list.
* :mod:`.context`: the build context plan and the recipe hash over it.
* :mod:`.build`: :func:`ensure_image`, the offline build and the version command.
* :mod:`.lock`: the ``lock.json`` files (computed from the tree, written only by ``runner images lock|bump``), the
  local build records, and verify (a stale lock is a finding; what differs on this machine only is not).
* :mod:`.archive`: the CI cache of built images (a key from the declared inputs, ``docker save`` and ``load``).
* :mod:`.pins`, :mod:`.registry`, :mod:`.bump`: the pins each recipe writes (the one place a version is written),
  compared with their registries (``runner images outdated``), rewritten and rebuilt (``runner images bump``).
  Imported from their modules, not from here.

Everything a caller needs is importable from here (``from runner.images import ensure_image``).
"""

from runner.images.archive import (
    ArchiveError,
    LoadResult,
    SavedArchive,
    archive_path,
    cache_key,
    cache_key_inputs,
    load_images,
    save_images,
)
from runner.images.bootstrap import BASE_IMAGE_ENV, base_image_env, base_recipe_hash, ensure_base
from runner.images.build import ensure_image
from runner.images.lock import (
    LOCK_VERSION,
    Finding,
    ImageRecord,
    LockEntry,
    LockError,
    current_keys,
    expected_lock,
    lock_files,
    read_build,
    read_lock,
    recipe_hash,
    stale_findings,
    update_lock,
    verify_lock,
    write_lock,
)
from runner.images.recipes import (
    HarnessRecipe,
    buildable_harnesses,
    load_harness_recipe,
    unavailable_images,
)
from runner.images.shared import (
    CERTS_DIR,
    CERTS_ENV,
    DEFAULT_BASE,
    ImageSettings,
    Progress,
)
from runner.images.tree import image_dir, image_dirs, source_root

__all__ = [
    "BASE_IMAGE_ENV",
    "CERTS_DIR",
    "CERTS_ENV",
    "DEFAULT_BASE",
    "LOCK_VERSION",
    "ArchiveError",
    "Finding",
    "HarnessRecipe",
    "ImageRecord",
    "ImageSettings",
    "LoadResult",
    "LockEntry",
    "LockError",
    "Progress",
    "SavedArchive",
    "archive_path",
    "base_image_env",
    "base_recipe_hash",
    "buildable_harnesses",
    "cache_key",
    "cache_key_inputs",
    "current_keys",
    "ensure_base",
    "ensure_image",
    "expected_lock",
    "image_dir",
    "image_dirs",
    "load_harness_recipe",
    "load_images",
    "lock_files",
    "read_build",
    "read_lock",
    "recipe_hash",
    "save_images",
    "source_root",
    "stale_findings",
    "unavailable_images",
    "update_lock",
    "verify_lock",
    "write_lock",
]
