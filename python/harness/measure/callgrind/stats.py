"""CallgrindStats and FunctionCounts: instruction counts per function, as torch's.

Public behaviour follows ``torch.utils.benchmark.utils.valgrind_wrapper.
timer_interface`` so code written against torch keeps working:
``FunctionCounts`` is a sorted, indexable, sliceable sequence of
``FunctionCount(count, function)`` with ``+``, ``-``, ``*``, ``transform``,
``filter``, ``sum`` and ``denoise``; ``CallgrindStats`` has ``stats``,
``counts``, ``delta`` and ``as_standardized``.

Every torch name gives torch's figure for the same data (``counts`` and
``denoise`` included). What harness adds is asked for by names of its own:
- ``own_counts()``: the statement's own instructions, the baseline (the empty
  statement measured in the same worker, the loop that drives it) subtracted.
- ``denoise(every_python=True)``: also drops the unicode-key dictionary
  lookups by the name they have from CPython 3.11 on
  (``unicodekeys_lookup_unicode``); torch's filter names only
  ``lookdict_unicode``, which 3.11+ no longer has.
"""

from __future__ import annotations

import collections
import dataclasses
import operator
import re
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from harness.measure.callgrind.layers import Layering, Rules, layer_counts
from harness.model.measurement import TaskSpec

# CPython's unicode-key dictionary lookups: variable-name lookups whose cost
# depends on hash collisions (torch calls these "known to be noisy"). torch's
# filter is the first name alone; the second is the same lookup from CPython 3.11 on.
TORCH_NOISY_SYMBOL = "dictobject.c:lookdict_unicode"
NOISY_SYMBOLS = (TORCH_NOISY_SYMBOL, "dictobject.c:unicodekeys_lookup_unicode")

# Path prefixes that differ between builds of the same code, and the object
# suffix: stripped so profiles from two machines or builds line up.
_STANDARDIZE = (
    (re.compile(r"^.+build/\.\./"), "build/../"),
    (re.compile(r"^.+/" + re.escape("build/aten/")), "build/aten/"),
    (re.compile(r"^.+/" + re.escape("Python/")), "Python/"),
    (re.compile(r"^.+/" + re.escape("Objects/")), "Objects/"),
    (re.compile(r"\s\[.+\]$"), ""),
)


def standardize_symbol(function: str) -> str:
    """``as_standardized``'s rewrite of one function name."""
    for pattern, replacement in _STANDARDIZE:
        function = pattern.sub(replacement, function)
    return function


def is_noisy(function: str) -> bool:
    return any(s in function for s in NOISY_SYMBOLS)


class FunctionCount(NamedTuple):
    count: int  # type: ignore[assignment]  # shadows tuple.count, as in torch
    function: str


@dataclasses.dataclass(repr=False, eq=False, frozen=True)
class FunctionCounts:
    """Instruction counts per function, largest first."""

    _data: tuple[FunctionCount, ...]
    inclusive: bool
    truncate_rows: bool = True
    _linewidth: int | None = None  # for tests; else torch's print linewidth

    def __iter__(self) -> Iterator[FunctionCount]:
        yield from self._data

    def __len__(self) -> int:
        return len(self._data)

    def __getitem__(self, item: Any) -> FunctionCount | FunctionCounts:
        data = self._data[item]
        if isinstance(data, tuple) and not isinstance(data, FunctionCount):
            return FunctionCounts(data, self.inclusive, truncate_rows=False)
        return data

    def __repr__(self) -> str:
        # torch widens the column by one more for a negative count; kept so the reprs match.
        count_len = max((len(str(c)) + (c < 0) for c, _ in self), default=0)
        linewidth = self._linewidth or _default_linewidth()
        fn_len = max(linewidth - count_len - 4, 40)
        lines = []
        for c, fn in self:
            if len(fn) > fn_len:
                left = (fn_len - 5) // 2
                fn = fn[:left] + " ... " + fn[-(fn_len - left - 5) :]
            lines.append(f"  {c:>{count_len}}  {fn}")
        if self.truncate_rows and len(lines) > 18:
            lines = lines[:9] + ["...".rjust(count_len + 2)] + lines[-9:]
        if not self.inclusive:
            lines.extend(["", f"Total: {self.sum()}"])
        return "\n".join([object.__repr__(self), *lines])

    def __add__(self, other: FunctionCounts) -> FunctionCounts:
        return self._merge(other, lambda c: c)

    def __sub__(self, other: FunctionCounts) -> FunctionCounts:
        return self._merge(other, operator.neg)

    def __mul__(self, other: int | float) -> FunctionCounts:
        return self._from_dict({fn: int(c * other) for c, fn in self._data}, self.inclusive)

    def transform(self, map_fn: Callable[[str], str]) -> FunctionCounts:
        """Rename functions with ``map_fn``; entries mapped to one name are added up."""
        counts: collections.defaultdict[str, int] = collections.defaultdict(int)
        for c, fn in self._data:
            counts[map_fn(fn)] += c
        return self._from_dict(counts, self.inclusive)

    def filter(self, filter_fn: Callable[[str], bool]) -> FunctionCounts:
        """Keep the entries whose function name ``filter_fn`` accepts."""
        return FunctionCounts(tuple(i for i in self if filter_fn(i.function)), self.inclusive)

    def sum(self) -> int:
        return sum(c for c, _ in self)

    def denoise(self, *, every_python: bool = False) -> FunctionCounts:
        """Drop CPython's unicode-key dictionary lookups, as torch's ``denoise`` does.

        ``every_python=True`` (harness only) drops them by every name CPython has
        given them (``NOISY_SYMBOLS``), so the filter also works on 3.11+.
        """
        if every_python:
            return self.filter(lambda fn: not is_noisy(fn))
        return self.filter(lambda fn: TORCH_NOISY_SYMBOL not in fn)

    def _merge(self, other: FunctionCounts, merge_fn: Callable[[int], int]) -> FunctionCounts:
        if self.inclusive != other.inclusive:
            # AssertionError, as torch raises for the same misuse.
            raise AssertionError("cannot merge inclusive and exclusive counts: take both from stats(inclusive=...)")
        counts: collections.defaultdict[str, int] = collections.defaultdict(int)
        for c, fn in self:
            counts[fn] += c
        for c, fn in other:
            counts[fn] += merge_fn(c)
        return self._from_dict(counts, self.inclusive)

    @staticmethod
    def _from_dict(counts: dict[str, int], inclusive: bool) -> FunctionCounts:
        flat = (FunctionCount(c, fn) for fn, c in counts.items() if c)
        return FunctionCounts(tuple(sorted(flat, reverse=True)), inclusive)

    @classmethod
    def from_mapping(cls, counts: dict[str, int], inclusive: bool) -> FunctionCounts:
        """From ``{function: count}`` (as the parser and the worker produce)."""
        return cls._from_dict(counts, inclusive)


def _default_linewidth() -> int:
    try:
        import torch

        return int(torch._tensor_str.PRINT_OPTS.linewidth)
    except Exception:  # torch's print options are private; fall back to its default
        return 80


_EMPTY_INCLUSIVE = FunctionCounts((), inclusive=True)
_EMPTY_EXCLUSIVE = FunctionCounts((), inclusive=False)


@dataclasses.dataclass(repr=False, eq=False, frozen=True)
class CallgrindStats:
    """Instruction counts of ``number_per_run`` runs of a statement, with its baseline."""

    task_spec: TaskSpec
    number_per_run: int
    built_with_debug_symbols: bool
    baseline_inclusive_stats: FunctionCounts
    baseline_exclusive_stats: FunctionCounts
    stmt_inclusive_stats: FunctionCounts
    stmt_exclusive_stats: FunctionCounts
    stmt_callgrind_out: str | None
    # With ``cache_sim=True`` (harness only): every cache figure (``counters.cache.FIGURES``) of the
    # ``number_per_run`` runs, the statement's and its baseline's (None: no simulation, or no baseline).
    stmt_cache: dict[str, int] | None = None
    baseline_cache: dict[str, int] | None = None

    def __repr__(self) -> str:
        base = self.baseline_exclusive_stats
        threads = self.task_spec.num_threads
        out = "\n".join(
            [
                object.__repr__(self),
                self.task_spec.summarize(),
                f"  {'':>25}All{'':>10}Noisy symbols removed",
                f"    Instructions: {self.counts(denoise=False):>12}{'':>15}"
                f"{self.counts(denoise=True):>12}",
                f"    Baseline:     {base.sum():>12}{'':>15}{base.denoise().sum():>12}",
                f"{self.number_per_run} runs per measurement, {threads} thread{'s' if threads > 1 else ''}",
            ]
        ).strip()
        if not self.built_with_debug_symbols:
            out += (
                "\nWarning: PyTorch was not built with debug symbols."
                "\n         Source information may be limited. Rebuild with"
                "\n         REL_WITH_DEB_INFO=1 for more detailed results."
            )
        return out

    def stats(self, inclusive: bool = False) -> FunctionCounts:
        """Counts per function; inclusive counts include the functions each one called."""
        return self.stmt_inclusive_stats if inclusive else self.stmt_exclusive_stats

    def counts(self, *, denoise: bool = False) -> int:
        """Total instructions of the ``number_per_run`` runs, loop included, as torch's.

        ``denoise=True`` drops the noisy dictionary lookups (torch's filter).
        ``own_counts`` subtracts the loop that drives the statement.
        """
        stats = self.stmt_exclusive_stats
        return (stats.denoise() if denoise else stats).sum()

    def own_counts(self, *, denoise: bool = True) -> int:
        """The statement's own instructions (harness only): the baseline subtracted.

        The baseline is the empty statement measured in the same worker (the
        loop that drives the statement); ``denoise`` drops the noisy
        dictionary lookups by every name CPython gives them. With
        ``collect_baseline=False`` (or a C++ statement) there is no baseline
        and this is ``counts`` with that filter.
        """
        delta = self.stmt_exclusive_stats - self.baseline_exclusive_stats
        return (delta.denoise(every_python=True) if denoise else delta).sum()

    def own_cache(self) -> dict[str, int] | None:
        """The statement's own cache figures (harness only, with ``cache_sim=True``): the baseline's subtracted,
        as ``own_counts(denoise=False)`` subtracts its instructions. None without a cache simulation."""
        if self.stmt_cache is None:
            return None
        base = self.baseline_cache or {}
        return {name: value - base.get(name, 0) for name, value in self.stmt_cache.items()}

    def delta(self, other: CallgrindStats, inclusive: bool = False) -> FunctionCounts:
        """Per-function difference ``self - other``: where the instructions went."""
        return self.stats(inclusive=inclusive) - other.stats(inclusive=inclusive)

    def layering(self, rules: Rules | None = None, *, denoise: bool = True) -> Layering:
        """Instructions of the ``number_per_run`` runs per PyTorch layer, baseline subtracted.

        The counts add up exactly to ``own_counts(denoise=denoise)``; ``rules``: a
        ``layers.load_rules(path)``, default the shipped ones.
        """
        delta = self.stmt_exclusive_stats - self.baseline_exclusive_stats
        if denoise:
            delta = delta.denoise(every_python=True)
        return layer_counts({fn: c for c, fn in delta}, number=self.number_per_run, rules=rules)

    def layers(self, rules: Rules | None = None, *, denoise: bool = True) -> dict[str, float]:
        """Instructions per run of each PyTorch layer (interpreter, bindings, GIL, dispatcher, ...)."""
        return self.layering(rules, denoise=denoise).per_run()

    def as_standardized(self) -> CallgrindStats:
        """The same stats with build paths and library names stripped from function names,
        so profiles from different builds or machines cancel when diffed."""

        def strip(stats: FunctionCounts) -> FunctionCounts:
            return stats.transform(standardize_symbol)

        return CallgrindStats(
            task_spec=self.task_spec,
            number_per_run=self.number_per_run,
            built_with_debug_symbols=self.built_with_debug_symbols,
            baseline_inclusive_stats=strip(self.baseline_inclusive_stats),
            baseline_exclusive_stats=strip(self.baseline_exclusive_stats),
            stmt_inclusive_stats=strip(self.stmt_inclusive_stats),
            stmt_exclusive_stats=strip(self.stmt_exclusive_stats),
            stmt_callgrind_out=None,  # names no longer match the file
            stmt_cache=self.stmt_cache,
            baseline_cache=self.baseline_cache,
        )


def empty_counts(inclusive: bool) -> FunctionCounts:
    return _EMPTY_INCLUSIVE if inclusive else _EMPTY_EXCLUSIVE
