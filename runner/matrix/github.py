"""The matrix as a GitHub Actions job matrix: one job per runnable cell, from the same cells as ``runner run``.

``runner matrix --format github [--harness ...] [--case ...]`` prints
``json.dumps(github_matrix(cells(harness, case)), separators=(",", ":"))``; the workflow's plan job writes it to
``$GITHUB_OUTPUT`` (:func:`render_github_output` gives that line) and the cell job expands it with
``strategy.matrix: ${{ fromJSON(needs.plan.outputs.matrix) }}``. Every entry of ``include`` is one job::

    {"cell": "escalation.baseline.codex", "case": "escalation", "condition": "baseline",
     "harness": "codex", "image": "codex", "credentials": "OPENAI_API_KEY,CODEX_API_KEY", "unavailable": ""}

``credentials`` names the host variables that column's live model reads (comma-separated, empty when none): the
workflow passes a secret to a job only when its name is in that list. ``cell`` is also a directory name and an
artifact name (``cell-<id>``), so it is checked to be a plain dotted id.

Unavailable columns (a profile's ``unavailable``) start no job: they cannot run on a hosted runner any more than
here. :func:`unavailable_cells` gives them, with their reasons, for the report.

GitHub refuses a matrix of more than 256 jobs; :func:`github_matrix` refuses it first, saying how to narrow it.
The output is compact and deterministic: the same cells give the same bytes.
"""

from __future__ import annotations

import json
import re
from typing import Any

from runner.harnesses.profile import Profile
from runner.matrix.cells import Cell

MAX_JOBS = 256  # GitHub Actions: "a matrix can generate a maximum of 256 jobs per workflow run"
KEYS = ("cell", "case", "condition", "harness", "image", "credentials", "unavailable")
CELL_ID = re.compile(r"^[a-z0-9][a-z0-9-]*(\.[a-z0-9][a-z0-9-]*)+$")
VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class MatrixTooLarge(ValueError):
    """More jobs than GitHub accepts in one matrix; the message says how to narrow it."""


def credentials(profile: Profile) -> list[str]:
    """The host variables a live run of this column may read: the profile's ``credentials`` then its live model's,
    each once, in that order."""
    live = profile.model.live.credentials if profile.model and profile.model.live else []
    names = list(dict.fromkeys([*profile.credentials, *live]))
    bad = [n for n in names if not VARIABLE.match(n)]
    if bad:
        raise ValueError(f"{profile.source or profile.id}: credential {bad[0]!r} is not an environment variable name")
    return names


def entry(cell: Cell) -> dict[str, str]:
    """One job of the matrix (every value a string, as the workflow reads them)."""
    if not CELL_ID.match(cell.id):
        raise ValueError(
            f"cell id {cell.id!r} cannot name a directory and an artifact (expected case.condition.harness)"
        )
    return {
        "cell": cell.id,
        "case": cell.case.id,
        "condition": cell.condition.id,
        "harness": cell.profile.id,
        "image": cell.profile.image,
        "credentials": ",".join(credentials(cell.profile)),
        "unavailable": " ".join((cell.profile.unavailable or "").split()),
    }


def _unique(cells: list[Cell]) -> list[Cell]:
    """Each cell once (``--harness codex,codex`` must not start two jobs writing one artifact), order kept."""
    first: dict[str, Cell] = {}
    for cell in cells:
        first.setdefault(cell.id, cell)
    return list(first.values())


def unavailable_cells(cells: list[Cell]) -> list[dict[str, str]]:
    """The cells left out of the job matrix because their column is unavailable, with the reason."""
    return [e for e in map(entry, _unique(cells)) if e["unavailable"]]


def github_matrix(cells: list[Cell]) -> dict[str, list[dict[str, str]]]:
    """``{"include": [job, ...]}`` for ``strategy.matrix``: one job per available cell, in the cells' order.

    Raises :class:`MatrixTooLarge` past :data:`MAX_JOBS` jobs. No cells gives ``{"include": []}``, which the
    workflow checks before expanding (GitHub refuses an empty matrix).
    """
    include = [e for e in map(entry, _unique(cells)) if not e["unavailable"]]
    if len(include) > MAX_JOBS:
        cases = len({(e["case"], e["condition"]) for e in include})
        columns = len({e["harness"] for e in include})
        raise MatrixTooLarge(
            f"the matrix has {len(include)} runnable cells ({cases} rows x {columns} columns), but GitHub Actions "
            f"starts at most {MAX_JOBS} jobs from one matrix: narrow it with --harness ID,... and/or --case ID,... "
            "(and run the rest in another workflow run)"
        )
    return {"include": include}


def dumps(matrix: dict[str, Any]) -> str:
    """The compact JSON ``runner matrix --format github`` prints (also what ``fromJSON`` reads)."""
    return json.dumps(matrix, separators=(",", ":"))


def render_github_output(matrix: dict[str, Any]) -> str:
    """The ``matrix=<json>`` line (newline included) to append to ``$GITHUB_OUTPUT``."""
    text = dumps(matrix)
    if "\n" in text or "\r" in text:  # json.dumps escapes both; a one-line output must stay one line
        raise ValueError("the matrix JSON must be one line")
    return f"matrix={text}\n"
