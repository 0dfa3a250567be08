"""Cold set-up durations on this machine, recorded by the step that spent them; ``make bench`` reports them.

Cold work happens once per machine (installing the engine, bootstrapping a base, staging and building
an image), so a bench run cannot repeat it side by side; each step writes its own wall time instead,
one file per step so that concurrent builds never contend: ``$RUNNER_CACHE_DIR/cold-timings/<step>.json``
holding ``{"seconds": 27.8, "at": "2026-12-01T11:02:03Z", ...}``. The steps are ``engine.install`` and
``engine.start`` (written by runner/engine/host/ensure-docker.sh), ``base.<name>`` (mmdebstrap plus import) and
``image.<harness>`` (npm/wheel staging, build and version check).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pydantic import JsonValue  # a JSON value, typed (the type alone: no pydantic at run time)

DIRECTORY = "cold-timings"


def record(cache: Path, step: str, seconds: float, **detail: str | int | float) -> None:
    """Write ``step``'s duration atomically; a cache that cannot be written loses only the figure."""
    folder = cache / DIRECTORY
    body = {"seconds": round(seconds, 2), "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **detail}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{step}.{os.getpid()}.json"
        tmp.write_text(json.dumps(body) + "\n", encoding="utf-8")
        os.replace(tmp, folder / f"{step}.json")
    except OSError:
        pass


def read(cache: Path) -> dict[str, dict[str, JsonValue]]:
    """Every recorded step with a numeric ``seconds``; unreadable files are skipped."""
    found: dict[str, dict[str, JsonValue]] = {}
    for path in sorted((cache / DIRECTORY).glob("*.json")):
        try:
            body = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        seconds = body.get("seconds") if isinstance(body, dict) else None
        if isinstance(seconds, int | float) and not isinstance(seconds, bool):
            found[path.stem] = body
    return found
