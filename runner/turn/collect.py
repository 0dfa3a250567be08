"""After the turn: copy the CLI's own session transcript out of the turn dir, scrubbed and bounded.

The transcript is the CLI's: its HOME, its files, its links. It is read through :mod:`runner.intake.files` alone
(from a directory descriptor runner owns, every component opened without following, regular files only, at most
:data:`SESSION_LIMITS`), so a link the CLI plants at the session path or anywhere below it (to a host file, a host
directory, ``/proc/self/environ``), or swaps in while runner reads, is skipped and told, never followed. What lands in
``<cell>/session/`` is runner's copy; everything read back from the session afterwards (a session reader, the
databases scrubbed below) reads that copy, never the CLI's tree.

Every byte copied passes :meth:`~runner.core.scrub.Scrubber.mask` (same length, so a binary store
stays readable). That is not enough for a SQLite database (opencode keeps its session in one): a
value longer than a page is stored across overflow pages, each starting with a four-byte pointer,
so a secret that straddles a page boundary is never contiguous in the file and no byte search finds
it, yet any SQLite reader gives it back whole. So a copied database is also scrubbed through SQLite
itself: every text and blob value holding a secret is rewritten, then the file is vacuumed (no free
page keeps the old value) and its write-ahead log folded in.

A zstd-compressed file (dsh keeps its session log as ``session.jsonl.zstd``) hides a secret from any
byte search just as well, so while secrets are being scrubbed it is decompressed (as far as it can be
read), scrubbed and compressed again; an unreadable tail is dropped rather than kept unchecked.
"""

from __future__ import annotations

import logging
import sqlite3
from contextlib import closing
from pathlib import Path

import zstandard

from runner.core.scrub import Scrubber
from runner.harnesses.compressed import decompress_bytes
from runner.intake.files import Copied, IntakeBounds, Tree, copy_tree

MAX_SESSION_BYTES = 64 * 1024 * 1024
SESSION_LIMITS = IntakeBounds(bytes=MAX_SESSION_BYTES, entries=10_000, depth=32)
logger = logging.getLogger("runner.turn")
SQLITE_MAGIC = b"SQLite format 3\x00"
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"
SIDE_FILES = ("-wal", "-shm", "-journal")


def copy_session_transcript(tree: Tree, dest: Path, scrubber: Scrubber) -> Copied:
    """Copy the session transcript at ``tree`` (a file or a folder) into ``dest``, scrubbed; what was copied
    (``files``: relative to ``dest``; a database SQLite could not check is dropped) and what was skipped. Stops at
    :data:`MAX_SESSION_BYTES`."""
    databases: list[str] = []

    def scrub(relative: str, data: bytes) -> bytes:
        if data.startswith(SQLITE_MAGIC):
            databases.append(relative)
        if data.startswith(ZSTD_MAGIC) and scrubber.active:
            return scrub_zstd(data, scrubber)
        return scrubber.mask(data)

    copied = copy_tree(tree, dest, SESSION_LIMITS, scrub)
    _tell(copied, "session transcript")
    if scrubber.active:
        for database in databases:
            scrub_database(dest / database, scrubber)
    copied.files = [c for c in copied.files if (dest / c).exists()]
    return copied


def _tell(copied: Copied, what: str) -> None:
    """Say what was not taken in: a warning when a bound cut the copy short or nothing was taken in (the session path
    itself a link), else (links and special files a CLI keeps in its HOME, as some do) only at INFO."""
    level = logging.INFO if copied.complete and copied.files else logging.WARNING
    for skipped in copied.skipped[:20]:
        logger.log(level, "%s: %r not copied: %s", what, skipped.path[:200], skipped.why)
    if len(copied.skipped) > 20:
        logger.log(level, "%s: %d more entries not copied", what, len(copied.skipped) - 20)


def scrub_zstd(data: bytes, scrubber: Scrubber) -> bytes:
    """A zstd file's readable content with every secret replaced by its marker, compressed again."""
    return bytes(zstandard.ZstdCompressor().compress(scrubber.raw(decompress_bytes(data, MAX_SESSION_BYTES))))


def scrub_database(path: Path, scrubber: Scrubber) -> None:
    """Replace every secret in every text or blob value of ``path``'s tables, through SQLite.

    A database SQLite cannot open is left as masked bytes, and removed if its values cannot be
    checked (a secret stored across overflow pages would survive there)."""
    try:
        with closing(sqlite3.connect(path)) as db:
            # a virtual table's values live in its shadow tables, which are ordinary ones
            tables = [row[0] for row in db.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' "
                "AND upper(coalesce(sql, '')) NOT LIKE 'CREATE VIRTUAL%'"
            )]
            for table in tables:
                _scrub_table(db, table, scrubber)
            db.commit()
            db.execute("VACUUM")
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error:
        for suffix in ("", *SIDE_FILES):
            path.with_name(path.name + suffix).unlink(missing_ok=True)


def _scrub_table(db: sqlite3.Connection, table: str, scrubber: Scrubber) -> None:
    name = '"' + table.replace('"', '""') + '"'
    columns = [row[1] for row in db.execute(f"PRAGMA table_info({name})")]
    for column in columns:
        col = '"' + column.replace('"', '""') + '"'
        for secret, marker in scrubber.markers():
            # text in place; a blob through text and back, only where the secret's bytes are in it
            db.execute(f"UPDATE {name} SET {col} = replace({col}, ?, ?) "
                       f"WHERE typeof({col}) = 'text' AND instr({col}, ?) > 0", (secret, marker, secret))
            db.execute(f"UPDATE {name} SET {col} = CAST(replace(CAST({col} AS TEXT), ?, ?) AS BLOB) "
                       f"WHERE typeof({col}) = 'blob' AND instr({col}, CAST(? AS BLOB)) > 0",
                       (secret, marker, secret))
