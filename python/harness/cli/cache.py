"""``python -m harness cache``: the per-user cache's folder and sizes and what each kind keeps there
(the measured peaks: when and under what load), or emptying it, whole or one kind's entries."""

from __future__ import annotations

import argparse

from harness.errors import UsageError


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    cache = subparsers.add_parser("cache", help="inspect or clear the per-user cache")
    cache.add_argument(
        "action", choices=["info", "clear"],
        help="info: the cache's folder, the size of each kind of artefact in it and the measured peaks it holds "
             "(when, under what load); clear: empty it (rebuilt as needed)",
    )
    cache.add_argument(
        "what", nargs="?", metavar="WHAT",
        help="with clear: only these entries (peaks: the measured peaks, measured again by the next gpt_fast run)",
    )
    cache.set_defaults(handler=run)


def _entries() -> dict[str, object]:
    """Each named cache entry a registered kind provides (gpt_fast: peaks), resolved on use."""
    from harness import kinds

    return {name: target for kind in kinds.registered() for name, target in kind.cache.items()}


def run(args: argparse.Namespace) -> int:
    from harness import kinds
    from harness.files.cache import cache_info, cache_root, clear_cache

    entries = _entries()
    if args.what is not None:
        if args.action != "clear":
            raise UsageError(f"cache {args.action} takes no {args.what!r}; use `cache clear {args.what}`")
        if args.what not in entries:
            raise UsageError(f"cache clear {args.what!r}: no such entry; choose one of {', '.join(entries)} "
                             "or clear the whole cache with `cache clear`")
        for line in kinds.resolve(entries[args.what], f"cache entry {args.what!r}")(clear=True):  # type: ignore[arg-type]
            print(line)
        return 0
    if args.action == "clear":
        clear_cache()
        print(f"cleared {cache_root()}")
        return 0
    print(f"cache root: {cache_root()}")
    for kind, size in cache_info().items():
        print(f"  {kind}: {size / 1e6:.1f} MB")
    for name, target in entries.items():
        print(f"{name}:")
        for line in kinds.resolve(target, f"cache entry {name!r}")(clear=False):  # type: ignore[arg-type]
            print(f"  {line}")
    return 0
