"""Which values of one result the history keeps: its own value and, for a count made with ``--cache-sim``,
each cache figure, every one a series of its own.

A series is a row of ``benchmarks`` with a ``metric``: "" for the result's own
value (its time, its count, its kind's headline; every row of a history made
before schema version 3 is one), else the name of a cache figure as the
record's ``extra["cache"]`` names it (per run, baseline subtracted:
``estimated_cycles``, ``L1_hits``, ``LL_hits``, ``RAM_hits``, ``Ir``, ``Dr``,
``D1mr``, ...). A figure is a series like any other, so ``history show``,
``history changes``, ``--fail-on-regression`` and the trend charts read it as
they read a time: ``--metric`` picks which (by default the own value and the
estimated cycles, the cache simulation's headline).

The names are the record's, not a list of this module's: ``measure`` (which
knows the figures) is a floor above ``history``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

VALUE = "value"  # the command line's name of a result's own value, stored as the metric ""
CACHE_HEADLINE = "estimated_cycles"
DEFAULT = (VALUE, CACHE_HEADLINE)  # what show and changes read without --metric
ALL = "all"


def stored_name(metric: str) -> str:
    """The ``benchmarks.metric`` of a metric the command line names (``value`` is "")."""
    return "" if metric == VALUE else metric


def shown_name(stored: str) -> str:
    return stored or VALUE


def figure_unit(name: str) -> str:
    """The unit of a cache figure per run: what it counts."""
    if name == CACHE_HEADLINE:
        return "cycles"
    if name == "Ir":
        return "instructions"
    if name.endswith("_hits"):
        return "hits"
    return {"Dr": "reads", "Dw": "writes"}.get(name, "misses")  # I1mr, D1mr, D1mw, ILmr, DLmr, DLmw


# Units of counts: integers per run, shown with thousands separators, judged with a count's noise margin.
COUNT_UNITS = frozenset(("instructions", "cycles", "hits", "reads", "writes", "misses"))


def cache_figures(extra: Mapping[str, object], ok: bool = True) -> dict[str, float]:
    """A result's cache figures per run (``extra["cache"]``), the finite numbers only; {} for a result
    without them or a failed one."""
    cache = extra.get("cache") if ok else None
    if not isinstance(cache, Mapping):
        return {}
    return {str(k): float(v) for k, v in cache.items()
            if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)}
