"""The command line: ``python -m harness COMMAND``, one module per command.

Lives here: ``list_cmd`` (``list``), ``bench``, ``merge``, ``compare``,
``report``, ``check``, ``noise``, ``history`` (``history import|show|changes``),
``cache``, ``workers``: each a parser builder ``add_parser(subparsers)``
and its handler ``run(args)``, which parses and prints only and leaves the
work to the layers below; ``arguments`` (the arguments more than one
command takes, written once). This ``__init__`` assembles the parser and
holds ``main``: one message and a non-zero exit for bad input, Ctrl-C and
SIGTERM ending a run as an interrupt.
May import: ``harness.present``, ``harness.bench``, ``harness.run`` (``noise``: its repeats), ``harness.history``,
``harness.records``, ``harness.define``, ``harness.measure``,
``harness.workers``, ``harness.kinds``, ``harness.model``, ``harness.files``,
``harness.errors``, ``harness.options``, ``harness._version``.
Imported by: ``harness.__main__`` (``python -m harness``), the ``harness``
console script (``harness.cli:main``), ``scripts/cli_doc.py`` (docs/cli.md).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from collections.abc import Sequence

from harness._version import __version__
from harness.cli import bench, cache, check, compare, history, list_cmd, merge, noise, report, workers
from harness.cli.arguments import describe_subcommands, misplaced
from harness.errors import HarnessError, Terminated, UsageError

# In the order the top-level help lists them.
COMMANDS = (list_cmd, bench, merge, compare, report, check, noise, history, cache, workers)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m harness",
        description="Microbenchmarks for PyTorch: dispatch overhead, compile time, kernel efficiency.",
    )
    p.add_argument("--version", action="version", version=f"harness {__version__}")
    sub = p.add_subparsers(dest="command", metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    describe_subcommands(sub)
    return p


def _interrupted_exit_code(exc: KeyboardInterrupt) -> int:
    return Terminated.exit_code if isinstance(exc, Terminated) else 130


def _on_sigterm(signum: int, frame: object) -> None:
    raise Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extra = parser.parse_known_args(argv)
    if extra:
        hint = misplaced(parser, args, extra)
        if hint is None:
            parser.error(f"unrecognized arguments: {' '.join(extra)}")  # what parse_args says
        print(f"harness: error: {hint}", file=sys.stderr)
        return UsageError.exit_code
    if args.command is None:
        parser.print_help()
        return 2
    # A SIGTERM (a CI job cancelled, `kill`) cleans up as Ctrl-C does: without
    # this, Python dies at once and leaves its (valgrind'ed) workers running.
    previous = (
        signal.signal(signal.SIGTERM, _on_sigterm) if threading.current_thread() is threading.main_thread() else None
    )
    try:
        return args.handler(args)
    except HarnessError as exc:
        print(f"harness: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except OSError as exc:
        if exc.filename is None:
            raise
        # A file-system failure no writer turned into a message of its own: still one line, naming the path.
        from harness.files.oserrors import path_error

        print(f"harness: error: {path_error(exc, str(exc.filename), 'use it')}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        print(f"harness: {'terminated' if isinstance(exc, Terminated) else 'interrupted'}", file=sys.stderr)
        return _interrupted_exit_code(exc)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)
