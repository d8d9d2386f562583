"""``python -m harness cache``: the per-user cache's folder and sizes, or emptying it."""

from __future__ import annotations

import argparse


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    cache = subparsers.add_parser("cache", help="inspect or clear the per-user cache")
    cache.add_argument(
        "action", choices=["info", "clear"],
        help="info: the cache's folder and the size of each kind of artefact in it; clear: empty it (rebuilt as needed)",
    )
    cache.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from harness.files.cache import cache_info, cache_root, clear_cache

    if args.action == "clear":
        clear_cache()
        print(f"cleared {cache_root()}")
        return 0
    print(f"cache root: {cache_root()}")
    for kind, size in cache_info().items():
        print(f"  {kind}: {size / 1e6:.1f} MB")
    return 0
