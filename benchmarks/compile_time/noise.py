"""Measure compile-time cases several times, each in fresh processes: now `python -m harness noise`.

    python benchmarks/compile_time/noise.py [CASE ...] [--repeats 3] [--jobs 2] [-k PATTERN] [--write-expected FILE]

is the same as `python -m harness noise ...` (this file only forwards its
arguments, so commands that name it keep working): each case's spread over
the repeats, per torch compile phase, and the functions whose counts vary
between repeats; `--write-expected FILE` regenerates the expected file. See
docs/compile-time.md.
"""

from __future__ import annotations

import sys

from harness.cli import main

if __name__ == "__main__":
    sys.exit(main(["noise", *sys.argv[1:]]))
