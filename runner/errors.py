"""The errors a ``runner`` command reports, each carrying the exit code it ends with.

Every layer raises its own error classes (an unknown case, a bad profile, an engine that keeps failing …); each
derives from one of these, so the command line maps an error to its exit code in one place
(``runner.cli``) instead of once per call site. This module imports nothing from ``runner``: any layer may
use it.

  0   the command did its job (for ``exec``: the turn ran and settled, whatever its status)
  1   the command ran and its verdict is no (``report``: the gate failed; ``repro``: another grade)
  2   bad usage (:class:`UsageError`)
  3   an unknown harness, case, condition or behaviour (:class:`UnknownName`)
  4   a harness profile that cannot be used; the message names the file and field (:class:`ProfileProblem`)
  5   infrastructure: no engine, an engine that keeps failing a call, an image that cannot be built, a
      container that cannot start, an output directory that cannot take the files or that another live run holds
      (:class:`InfrastructureError`)
  130 interrupted (Ctrl-C or SIGTERM); every container the run started has been removed
"""

from __future__ import annotations

from enum import IntEnum
from typing import ClassVar


class Exit(IntEnum):
    OK = 0
    VERDICT = 1
    USAGE = 2
    UNKNOWN = 3
    PROFILE = 4
    INFRASTRUCTURE = 5
    INTERRUPTED = 130


class RunnerError(Exception):
    """An error a command reports in one line (its message) and ends with :attr:`exit_code`."""

    exit_code: ClassVar[Exit] = Exit.USAGE


class UsageError(RunnerError):
    exit_code = Exit.USAGE


class UnknownName(RunnerError):
    exit_code = Exit.UNKNOWN


class ProfileProblem(RunnerError):
    exit_code = Exit.PROFILE


class InfrastructureError(RunnerError):
    exit_code = Exit.INFRASTRUCTURE
