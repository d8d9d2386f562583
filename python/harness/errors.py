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

    def __str__(self) -> str:
        # Our message, even when mixed with a type whose str differs (KeyError quotes it).
        return str(self.args[0]) if self.args else ""

    @classmethod
    def like(cls, original: BaseException, message: str) -> StatementError:
        """A StatementError that is also an instance of ``original``'s type.

        torch's Timer lets the statement's own exception through (SyntaxError,
        ZeroDivisionError, ...), so ``except ZeroDivisionError`` around a Timer keeps
        working with harness, which adds the statement's line to the message.
        """
        base = type(original)
        if not isinstance(original, Exception) or isinstance(original, HarnessError):
            return cls(message)
        try:
            mixed = _MIXED.get((cls, base)) or type(cls.__name__, (cls, base), {"__module__": cls.__module__})
            _MIXED[(cls, base)] = mixed
            return mixed(message)
        except TypeError:  # a type that cannot be mixed in or built from one message
            return cls(message)


_MIXED: dict[tuple[type, type], type] = {}


class CallgrindFailed(StatementError, OSError):
    """``collect_callgrind``'s measuring process failed (torch raises OSError there)."""


class BuildError(HarnessError):
    """Building native code failed."""

    exit_code = 1


class Terminated(KeyboardInterrupt):
    """SIGTERM, turned into an interruption so the same clean-up runs as for Ctrl-C
    (workers killed, temporary files removed, finished results kept)."""

    exit_code = 143  # 128 + SIGTERM, what a shell reports for a process killed by it
