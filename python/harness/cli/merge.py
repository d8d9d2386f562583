"""``python -m harness merge``: join the records of ``bench --shard`` parts into one run record."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    merge = subparsers.add_parser("merge", help="join the records of bench --shard parts into one run record")
    merge.add_argument("output", metavar="OUTPUT", help="run record to write (.json, .jsonl or .csv)")
    merge.add_argument("inputs", nargs="+", metavar="INPUT", help="the parts' run records")
    merge.add_argument(
        "--allow-mixed", action="store_true",
        help="merge parts that ran on different harness, torch or Python versions (their rows are marked)",
    )
    merge.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness.present.table import print_results
    from harness.records.merge import MIXED, merge
    from harness.records.store import check_writable, load, save

    check_writable(args.output)
    record = merge([(path, load(path)) for path in args.inputs], allow_mixed=args.allow_mixed)
    print_results(record.results, generic=bool(record.environment.get(MIXED)))
    appended = save(record, args.output)
    print(f"merged {len(args.inputs)} record(s), {len(record.results)} results; "
          f"run record {'appended to' if appended else 'written to'} {args.output}")
    return 0
