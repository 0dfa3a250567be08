"""The matrix as a GitHub Actions job matrix: one job per column, or per shard of a column, whatever the rows.

``runner matrix --format github [--harness ...] [--case ...] [--shard-minutes M]`` prints
``json.dumps(github_matrix(cells(harness, case), ...), separators=(",", ":"))``; the workflow's plan job writes it
to ``$GITHUB_OUTPUT`` (:func:`render_github_output` gives that line) and the column job expands it with
``strategy.matrix: ${{ fromJSON(needs.plan.outputs.matrix) }}``. Every entry of ``include`` is one job::

    {"job": "codex", "harness": "codex", "image": "codex", "shard": "1/1", "cells": "23", "minutes": "1.5",
     "credentials": "OPENAI_API_KEY,CODEX_API_KEY"}

The job builds (or loads) its column's image once and runs ``runner run --harness <harness> --case <the same
selection> --shard <shard>``: the same command a user runs locally, with its progress, resume and retries.

- **Jobs scale with columns, not rows.** Only cells that run a turn are planned (:meth:`MatrixCell.runs_a_turn`); a
  column gets as many shards as keep each job's turn time inside ``shard_minutes`` (:mod:`runner.matrix.shards`),
  and never more than GitHub's 256 jobs allow across the columns: the plan makes its jobs longer rather than
  refuse a selection that fits. Only more than 256 columns is refused.
- **Trials** (``--trials N``, the workflow's ``trials`` input) multiply each cell's turn time by N; a cell's
  trials stay in one job (a shard holds cells, never single trials), where they run one after another.
- **Cells that run no turn start no job**: declared rows and unavailable columns are written by the report job
  (``runner run --declared-only``), with no engine.
- ``credentials`` names the host variables that column's live model reads (comma-separated, empty when none):
  the workflow passes a secret to a job only when its name is in that list.
- ``job`` is also an artifact name (``column-<job>``), so it is checked to be a plain id.

The output is compact and deterministic: the same cells give the same bytes.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from runner.errors import UsageError
from runner.harnesses.profile import Profile
from runner.matrix.cells import MatrixCell, unique
from runner.matrix.shards import Shard, job_seconds, shards_needed

MAX_JOBS = 256  # GitHub Actions: "a matrix can generate a maximum of 256 jobs per workflow run"
DEFAULT_SHARD_MINUTES = 20.0
KEYS = ("job", "harness", "image", "shard", "cells", "minutes", "credentials")
JOB_ID = re.compile(r"^[a-z0-9][a-z0-9-]*$")
VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class MatrixTooLarge(UsageError, ValueError):
    """More columns than GitHub accepts jobs in one matrix; the message says how to narrow it."""


def credentials(profile: Profile) -> list[str]:
    """The host variables a live run of this column may read: the profile's ``credentials`` then its live model's,
    each once, in that order."""
    live = profile.model.live.credentials if profile.model and profile.model.live else []
    names = list(dict.fromkeys([*profile.credentials, *live]))
    bad = [n for n in names if not VARIABLE.match(n)]
    if bad:
        raise ValueError(f"{profile.source or profile.id}: credential {bad[0]!r} is not an environment variable name")
    return names


def _harnesses(found: list[MatrixCell]) -> dict[str, tuple[Profile, list[str]]]:
    """Per column (in the cells' order), its profile and the ids of its cells that run a turn."""
    out: dict[str, tuple[Profile, list[str]]] = {}
    for cell in unique(found):
        if cell.runs_a_turn():
            out.setdefault(cell.profile.id, (cell.profile, []))[1].append(cell.id)
    return out


def plan_shards(
    found: list[MatrixCell], shard_minutes: float = DEFAULT_SHARD_MINUTES, trials: int = 1
) -> dict[str, int]:
    """Shards per column: each the fewest that keep its jobs inside the budget, within GitHub's job limit."""
    harnesses = _harnesses(found)
    if len(harnesses) > MAX_JOBS:
        raise MatrixTooLarge(
            f"the selection has {len(harnesses)} harnesses that run a turn, but GitHub Actions starts at most "
            f"{MAX_JOBS} jobs from one matrix and each harness needs at least one: narrow it with --harness ID,... "
            "(and run the rest in another workflow run)"
        )
    most = MAX_JOBS // len(harnesses) if harnesses else 1
    return {
        harness: shards_needed(ids, profile.cell_seconds * trials, shard_minutes * 60, most)
        for harness, (profile, ids) in harnesses.items()
    }


def github_matrix(
    found: list[MatrixCell], shard_minutes: float = DEFAULT_SHARD_MINUTES, trials: int = 1
) -> dict[str, list[dict[str, str]]]:
    """``{"include": [job, ...]}`` for ``strategy.matrix``: one job per shard of each column that runs a turn.

    No such cell gives ``{"include": []}``, which the workflow checks before expanding (GitHub refuses an empty
    matrix).
    """
    harnesses = _harnesses(found)
    include = []
    for harness, count in plan_shards(found, shard_minutes, trials).items():
        profile, ids = harnesses[harness]
        for index in range(1, count + 1):
            shard = Shard(index, count)
            if any(shard.holds(c) for c in ids):  # a slice the hash left empty starts no job
                include.append(_entry(profile, shard, ids, trials))
    return {"include": include}


def _entry(profile: Profile, shard: Shard, ids: Sequence[str], trials: int = 1) -> dict[str, str]:
    job = profile.id if shard.count == 1 else f"{profile.id}-{shard.index}of{shard.count}"
    if not JOB_ID.match(job):
        raise ValueError(f"column id {profile.id!r} cannot name a job and an artifact")
    held = sum(1 for c in ids if shard.holds(c))
    return {
        "job": job,
        "harness": profile.id,
        "image": profile.image,
        "shard": str(shard),
        "cells": str(held),
        "minutes": f"{job_seconds(ids, shard, profile.cell_seconds * trials) / 60:.1f}",
        "credentials": ",".join(credentials(profile)),
    }


def dumps(matrix: Mapping[str, object]) -> str:
    """The compact JSON ``runner matrix --format github`` prints (also what ``fromJSON`` reads)."""
    return json.dumps(matrix, separators=(",", ":"))


def render_github_output(matrix: Mapping[str, object]) -> str:
    """The ``matrix=<json>`` line (newline included) to append to ``$GITHUB_OUTPUT``."""
    text = dumps(matrix)
    if "\n" in text or "\r" in text:  # json.dumps escapes both; a one-line output must stay one line
        raise ValueError("the matrix JSON must be one line")
    return f"matrix={text}\n"
