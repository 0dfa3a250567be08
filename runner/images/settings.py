"""What the image code takes from the host's environment, read once by the edge (``runner.cli.settings`` and the
processes of their own) and handed down: nothing under :mod:`runner.images` reads a variable. Light to
import: a dataclass and paths, no engine."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT_ENV = "RUNNER_REPO_ROOT"
CACHE_DIR_ENV = "RUNNER_CACHE_DIR"
CERTS_ENV = "RUNNER_CA_CERTS_DIR"
CERTS_DIR = Path("/usr/local/share/ca-certificates")
# RUNNER_BASE_IMAGE, RUNNER_BASE_NODE_IMAGE, ...: a base replaced by a registry image pinned by digest
_BASE_REF_ENV = re.compile(r"^RUNNER_[0-9A-Z_]+_IMAGE$")


def _default_cache_dir() -> Path:
    return Path.home() / ".cache" / "runner"


@dataclass(frozen=True)
class ImageSettings:
    """Where the image code finds the image folders and its cache, and what it hands the tools it runs."""

    # $RUNNER_REPO_ROOT: a tree holding a runner/ package whose image folders to use (a test's scratch copy);
    # None: the tree the installed runner package is in (runner.images.tree)
    repo_root: Path | None = None
    # $RUNNER_CACHE_DIR, else ~/.cache/runner
    cache_dir: Path = field(default_factory=_default_cache_dir)
    # $RUNNER_CA_CERTS_DIR, else /usr/local/share/ca-certificates (what update-ca-certificates reads)
    ca_certs_dir: Path = CERTS_DIR
    # the pinned base references by variable name (RUNNER_BASE_IMAGE=name@sha256:...), as set (validated on use)
    base_refs: Mapping[str, str] = field(default_factory=dict)
    # the environment npm and mmdebstrap run with (the host's: PATH, HOME, proxies, npm's own settings)
    environ: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> ImageSettings:
        """What ``environ`` (the process environment, handed in by the edge that reads it) says."""
        variables = dict(environ)
        root = variables.get(REPO_ROOT_ENV)
        return cls(
            repo_root=Path(root).resolve() if root else None,
            cache_dir=Path(variables.get(CACHE_DIR_ENV) or _default_cache_dir()),
            ca_certs_dir=Path(variables.get(CERTS_ENV) or CERTS_DIR),
            base_refs={k: v for k, v in variables.items() if _BASE_REF_ENV.match(k)},
            environ=variables,
        )
