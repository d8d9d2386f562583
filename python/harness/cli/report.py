"""``python -m harness report``: a self-contained HTML report of one or more runs."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    report = subparsers.add_parser("report", help="write a self-contained HTML report of one or more runs")
    report.add_argument(
        "runs", nargs="+", metavar="RUN", help="run records (.json, .jsonl, .csv); shown in order of start time"
    )
    report.add_argument(
        "--output", "-o", default="report.html", metavar="FILE", help="HTML file to write (default report.html)"
    )
    report.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness.present.html_report import write_report

    count = write_report(args.runs, args.output)
    print(f"report of {count} run(s) written to {args.output}")
    return 0
