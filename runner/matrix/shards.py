"""Slicing a column's cells into CI jobs: ``runner run --shard K/N`` and the plan that chooses N.

Pure: no I/O. A cell belongs to shard ``sha256(cell id) mod N``, so each cell is in exactly one shard, the
assignment is the same on every machine and in every process, and adding a row moves no other cell (a
contiguous split in suite order would shift every cell after the new row into another job). Only the cells
that run a turn are sharded: the others are graded where the report is made.

The number of shards of a column is the smallest N whose largest shard fits the time budget, counting
``profile.cell_seconds`` per cell (what one cell of that column was measured to take, run one at a time: a job
that runs cells side by side only finishes sooner). Hash slices are not exactly even, so N is chosen by the
real sizes of the slices, never by a division that assumes them even.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from runner.errors import UsageError

SHARD = re.compile(r"^([1-9][0-9]*)/([1-9][0-9]*)$")


class ShardError(UsageError, ValueError):
    """A ``--shard`` value that is not ``K/N`` with 1 <= K <= N."""


@dataclass(frozen=True)
class Shard:
    index: int  # 1-based, as written: 1/2 and 2/2
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def holds(self, cell_id: str) -> bool:
        return shard_of(cell_id, self.count) == self.index


def parse_shard(value: str) -> Shard:
    found = SHARD.match(value.strip())
    if found is None:
        raise ShardError(f"--shard {value!r}: expected K/N, e.g. 1/2 (the first of two slices)")
    index, count = int(found.group(1)), int(found.group(2))
    if index > count:
        raise ShardError(f"--shard {value!r}: in K/N, K must be between 1 and N")
    return Shard(index, count)


def shard_of(cell_id: str, count: int) -> int:
    """The 1-based shard of ``count`` that holds this cell."""
    digest = hashlib.sha256(cell_id.encode("utf-8")).digest()
    return int.from_bytes(digest[:8], "big") % count + 1


def sizes(cell_ids: Sequence[str], count: int) -> list[int]:
    """How many of these cells each of ``count`` shards holds."""
    out = [0] * count
    for cell_id in cell_ids:
        out[shard_of(cell_id, count) - 1] += 1
    return out


def shards_needed(cell_ids: Sequence[str], cell_seconds: float, budget_seconds: float, most: int) -> int:
    """The fewest shards (at most ``most``) whose largest slice takes no longer than the budget.

    When even ``most`` shards cannot keep inside the budget, ``most`` it is: the plan never refuses a column for
    being slow, it says what the job will take (:func:`job_seconds`).
    """
    if not cell_ids:
        return 0
    if budget_seconds <= 0:
        raise ValueError("the shard budget must be a positive number of seconds")
    start = max(1, math.ceil(len(cell_ids) * cell_seconds / budget_seconds))
    for count in range(min(start, most), most + 1):
        if max(sizes(cell_ids, count)) * cell_seconds <= budget_seconds:
            return count
    return most


def job_seconds(cell_ids: Sequence[str], shard: Shard, cell_seconds: float) -> float:
    """The turn time of one shard's cells, run one at a time."""
    return sum(1 for c in cell_ids if shard.holds(c)) * cell_seconds
