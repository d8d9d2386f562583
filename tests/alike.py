"""Counts of one statement from processes started apart: equal, or apart by at most ``APART`` of the count.

One worker repeats a count exactly (every count runs in a fresh fork of one
zygote; tests assert ``==`` there). Two workers started apart with the same
environment (fresh and kept, local and on Ray, ``--jobs 1`` and ``--jobs 2``)
give the same figures in almost every run, and rarely differ by a few events
in millions: in CI, once each, a TorchScript statement from Python counted
34,264.30 against 34,264.33 instructions a run, and a ``--cache-sim`` count
34.22 against 34.24 data misses a run (docs/instruction-counts.md, "Kept and
fresh, any cache path"). ``APART`` is ten times the largest these tests'
statements showed and a seventh of the 0.07% that a worker's heap moved by
the cache's path did before it was mended, which these tests still catch.
(A TorchScript function compiled in a setup moved up to 0.15% between
workers in runs outside the suite: the page says so; no test counts one.)
"""

from __future__ import annotations

APART = 1e-4


def far_apart(a: dict[str, float], b: dict[str, float], scale: float | None = None) -> dict[str, tuple[float, float]]:
    """The entries of ``a`` and ``b`` further apart than ``APART`` of ``scale`` (by default each entry's own
    larger value)."""
    assert a.keys() == b.keys(), (sorted(a), sorted(b))
    return {k: (a[k], b[k]) for k in a
            if abs(a[k] - b[k]) > APART * (scale if scale is not None else max(abs(a[k]), abs(b[k])))}


def assert_counts_alike(a: dict[str, float], b: dict[str, float]) -> None:
    """Each count of ``a`` is ``b``'s, to ``APART`` of itself."""
    far = far_apart(a, b)
    assert not far, far


def assert_cache_alike(a: dict[str, float], b: dict[str, float]) -> None:
    """Every ``--cache-sim`` figure of ``a`` is ``b``'s, to ``APART`` of the estimated cycles: a miss more or
    less moves a small figure (D1mr) by more of itself than of the count it belongs to."""
    far = far_apart(a, b, scale=max(a["estimated_cycles"], b["estimated_cycles"]))
    assert not far, far
