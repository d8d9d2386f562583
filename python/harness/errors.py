"""Errors that harness reports to users as one clear message, without a traceback."""

from __future__ import annotations


class HarnessError(Exception):
    """Base of every error harness expects users to see.

    The CLI prints ``str(error)`` and exits with ``exit_code``; Python callers
    get the exception with the original error chained as ``__cause__``.
    """

    exit_code = 2


class UsageError(HarnessError, ValueError):
    """An argument or input is invalid (what, where, how to fix)."""


class StatementError(HarnessError):
    """A user statement failed to compile or raised while running."""

    exit_code = 1


class BuildError(HarnessError):
    """Building native code failed."""

    exit_code = 1


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an interruption so the same clean-up runs as for Ctrl-C
    (workers killed, temporary files removed, finished results kept)."""

    exit_code = 143  # 128 + SIGTERM, what a shell reports for a process killed by it
