"""One cell's directory: ``result.json`` (the typed :class:`~runner.matrix.result.CellResult`: the grade, the
turn, every pin), ``repro.sh`` (the exact command that reruns this cell), and the turn's own files (record,
transcripts, exchange log).

With ``--trials N``, trial 1 is the cell directory and trial k its ``trial-<k>/`` subdirectory (:func:`trial_dir`),
each a cell directory of its own.

``result.json`` is what ``runner report`` merges and what ``runner run`` checks before running a cell again: a
cell whose result holds the same plannable pins is not run twice.

**Only runner's own files are results.** A cell directory also holds what the CLI left behind (its session files,
copied under ``session/``, and a row of several turns' ``turn-<n>/``), and a CLI can write a file named
``result.json`` there. So results are found by the layout runner writes, never by name alone
(:func:`result_files`): a cell directory's own ``result.json``, and those of its trials (``trial-<k>/``) and reruns
(``repro-<run id>/``); never anything below ``session/``, ``turn-<n>/`` or an earlier attempt's ``attempt-<n>/``,
never through a symbolic link; each read bounded (:data:`MAX_RESULT_BYTES`) from a regular file.

**Attempts.** ``runner run`` retries a cell that hit an infrastructure error. Before the first attempt the cell
directory is cleared of an earlier run's files (:func:`clear_cell`); before each later one the earlier attempt's
files are moved to ``attempt-<n>/`` (:func:`keep_attempt`), so every attempt writes its own files and none is
appended to another's.
"""

from __future__ import annotations

import errno
import json
import os
import re
import shutil
import stat
from pathlib import Path

from runner.matrix.options import SETTINGS
from runner.matrix.result import CellPins, CellResult, ResultError

RESULT = "result.json"
REPRO = "repro.sh"
# the pins known before a cell runs: equal pins mean an existing result can be reused
PLANNED_PINS = ("caseSetHash", "worldSetHash", "judgeVersion", "runnerVersion", "imageId", "cliVersion", "profileHash")
# pins compared even when the planned cell lacks them: every setting's (runner.matrix.options: a faulted result never
# stands in for a plain one, nor one in another dialect, under another runtime, of another epoch...) and the trial's
ALWAYS_COMPARED = (*(row.pin for row in SETTINGS if row.pin is not None), "trial")
TRIAL_PREFIX = "trial-"
ATTEMPT_PREFIX = "attempt-"
MAX_RESULT_BYTES = 16 * 1024 * 1024
# the directories runner writes inside a cell directory that are runs of their own: its trials and its reruns
OWN_RUNS = re.compile(r"^(trial-[1-9][0-9]*|repro-[A-Za-z0-9-]+)$")
# what a cell directory holds that is never a run: the CLI's own files, each turn's, an earlier attempt's
NEVER_RUNS = re.compile(r"^(session|turn-[0-9]+|attempt-[0-9]+)$")


def trial_dir(cell_directory: Path, trial: int) -> Path:
    """Where trial ``trial`` of a cell is written: trial 1 in the cell directory itself (so a one-trial run is laid
    out as it always was, and a run asked for more trials later reuses it), trial k >= 2 in ``trial-<k>/`` inside
    it. ``runner report`` finds every trial below a directory it is given; ``runner repro`` takes any of them."""
    return cell_directory if trial == 1 else cell_directory / f"{TRIAL_PREFIX}{trial}"


def write_cell(directory: Path, result: CellResult) -> Path:
    """Write ``result.json`` atomically (a half-written result is never left) and ``repro.sh``."""
    directory.mkdir(parents=True, exist_ok=True)
    tmp = directory / f".{RESULT}.tmp"
    # text runner cannot encode (a lone surrogate from the CLI's output) is written as its JSON escape
    tmp.write_text(result.dumps(indent=2) + "\n", encoding="utf-8", errors="backslashreplace")
    os.replace(tmp, directory / RESULT)
    script = directory / REPRO
    script.write_text(
        "#!/bin/sh\n"
        f"# Reruns the cell {result.id} alone, with the pins recorded in result.json.\n"
        "# From the runner checkout: .venv/bin/runner … (or `runner repro <this directory>`).\n"
        f"exec {result.repro}\n",
        encoding="utf-8", errors="backslashreplace",
    )
    script.chmod(0o755)
    return directory / RESULT


def load_result(file: Path) -> CellResult:
    """Read one ``result.json``: a regular file, not a link to one, and bounded; a file that is not a result is a
    :class:`ResultError` naming it (and the field)."""
    try:
        data = json.loads(_read_regular(file, MAX_RESULT_BYTES).decode("utf-8"))
    except OSError as err:
        why = "a symbolic link, not runner's own file" if err.errno == errno.ELOOP else err.strerror or str(err)
        raise ResultError(f"{file}: not a cell result ({why})") from None
    except (ValueError, RecursionError) as err:
        raise ResultError(f"{file}: not a cell result ({type(err).__name__}: {err})") from None
    return CellResult.read(data, str(file))


def _read_regular(file: Path, limit: int) -> bytes:
    """The bytes of ``file``, opened without following a link at its name; a FIFO, a device or a directory, or a
    file over ``limit`` bytes, is refused (an OSError saying which)."""
    fd = os.open(file, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        data = handle.read(limit + 1)
    if len(data) > limit:
        raise OSError(errno.EFBIG, f"larger than {limit} bytes")
    return data


def result_files(path: Path) -> list[Path]:
    """The ``result.json`` files runner wrote below ``path`` (a cell directory, a directory holding cell directories
    at any depth, or a result file itself), in a stable order: see the module's *Only runner's own files*. A
    directory holding a result is a cell directory: below it only its trials and reruns are read. Any other
    directory is walked, but never into a CLI's files (``session/``), a turn's (``turn-<n>/``) or an earlier
    attempt's (``attempt-<n>/``), and never through a link."""
    if not path.is_dir():
        return [path]
    found: list[Path] = []
    pending = [path]
    while pending:
        directory = pending.pop()
        try:
            entries = sorted(os.scandir(directory), key=lambda e: e.name)
        except OSError:
            continue  # a directory runner cannot list holds no result it can read
        names = {e.name: e for e in entries}
        own = names.get(RESULT)
        cell = own is not None and own.is_file(follow_symlinks=False)
        if cell:
            found.append(directory / RESULT)
        below = [e for e in entries if e.is_dir(follow_symlinks=False)
                 and (OWN_RUNS.match(e.name) if cell else not NEVER_RUNS.match(e.name))]
        pending.extend(Path(e.path) for e in reversed(below))
    return found


def read_cell(directory: Path) -> CellResult | None:
    """The result in a cell directory, or None when there is none that can be read (resume runs it again)."""
    try:
        return load_result(directory / RESULT)
    except ResultError:
        return None


def reusable(existing: CellResult | None, planned: CellPins) -> bool:
    """An existing graded result with the same plannable pins: resume skips the cell."""
    if existing is None or not existing.reusable:
        return False
    pins, wanted = existing.pins.to_dict(), planned.to_dict()
    return all(pins.get(k) == wanted.get(k) for k in PLANNED_PINS if k in wanted) and all(
        pins.get(k) == wanted.get(k) for k in ALWAYS_COMPARED
    )


def clear_cell(directory: Path) -> None:
    """Before a cell runs again: remove an earlier run's files from its directory (they belong to no attempt of this
    run), all but the trials and reruns kept inside it, each a cell directory of its own. Links are removed, never
    followed."""
    for entry in _entries(directory):
        if not OWN_RUNS.match(entry.name):
            _remove(entry)


def keep_attempt(directory: Path, number: int) -> str:
    """Move attempt ``number``'s files out of the way of the next: into ``attempt-<number>/`` in the cell directory
    (its result, logs and the CLI's files, as it left them); returns that directory's name."""
    name = f"{ATTEMPT_PREFIX}{number}"
    target = directory / name
    if target.is_dir() and not target.is_symlink():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for entry in _entries(directory):
        if not (OWN_RUNS.match(entry.name) or entry.name.startswith(ATTEMPT_PREFIX)):
            os.replace(entry.path, target / entry.name)
    return name


def _entries(directory: Path) -> list[os.DirEntry[str]]:
    try:
        return sorted(os.scandir(directory), key=lambda e: e.name)
    except FileNotFoundError:
        return []


def _remove(entry: os.DirEntry[str]) -> None:
    if entry.is_dir(follow_symlinks=False):
        shutil.rmtree(entry.path)
    else:
        os.unlink(entry.path)
