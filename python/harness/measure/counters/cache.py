"""Cache-aware counts: callgrind's cache simulation at one fixed geometry, and the figures made from it.

A count with ``--cache-sim`` runs its worker under ``valgrind --tool=callgrind
--cache-sim=yes`` with the geometry below given explicitly: left to itself,
callgrind reads the host's caches (and warns when it cannot simulate them),
so two machines would count the same statement differently. The record
states the geometry (``GEOMETRY``) beside the figures.

From callgrind's events (instructions ``Ir``, data reads ``Dr`` and writes
``Dw``, first-level misses ``I1mr D1mr D1mw``, last-level misses ``ILmr DLmr
DLmw``) come iai-callgrind's hits and its estimate of cycles:

- L1 hits  = Ir + Dr + Dw - (I1mr + D1mr + D1mw)
- LL hits  = (I1mr + D1mr + D1mw) - (ILmr + DLmr + DLmw)
- RAM hits = ILmr + DLmr + DLmw
- estimated cycles = L1 hits + 5 x LL hits + 35 x RAM hits

It lives in ``counters/`` (below ``callgrind/``) because it is plain
arithmetic on event counts: the callgrind counter, the records and the
presenters all read it.
"""

from __future__ import annotations

from collections.abc import Mapping

# iai-callgrind's weights: cycles per hit of each level.
L1_CYCLES, LL_CYCLES, RAM_CYCLES = 1, 5, 35

# (size in bytes, associativity, line size in bytes), as CodSpeed fixes them.
I1 = (32768, 8, 64)
D1 = (32768, 8, 64)
LL = (8388608, 16, 64)
LL_BYTES = LL[0]
GEOMETRY = {"I1": list(I1), "D1": list(D1), "LL": list(LL)}  # what a record states: [bytes, ways, line bytes]


def record_geometry() -> dict[str, object]:
    """What a run record's environment says of the simulation: the geometry and the cycle weights."""
    return {"geometry": {k: list(v) for k, v in GEOMETRY.items()}, "weights": {"L1": L1_CYCLES, "LL": LL_CYCLES,
                                                                              "RAM": RAM_CYCLES}}


EVENTS = ("Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw")
DERIVED = ("L1_hits", "LL_hits", "RAM_hits", "estimated_cycles")
# Every figure of a cache-aware count, in the order records and tables show them.
FIGURES = (*EVENTS, *DERIVED)


def valgrind_flags() -> list[str]:
    """callgrind's options for the cache simulation at the fixed geometry."""
    return ["--cache-sim=yes", *(f"--{name}={','.join(map(str, shape))}" for name, shape in
                                 (("I1", I1), ("D1", D1), ("LL", LL)))]


def figures(events: Mapping[str, float]) -> dict[str, float]:
    """Every figure (``FIGURES``) of one count's event totals; a missing event counts 0."""
    e = {name: events.get(name, 0) for name in EVENTS}
    l1_misses = e["I1mr"] + e["D1mr"] + e["D1mw"]
    ll_misses = e["ILmr"] + e["DLmr"] + e["DLmw"]
    l1_hits = e["Ir"] + e["Dr"] + e["Dw"] - l1_misses
    ll_hits = l1_misses - ll_misses
    out = dict(e)
    out.update(L1_hits=l1_hits, LL_hits=ll_hits, RAM_hits=ll_misses,
               estimated_cycles=L1_CYCLES * l1_hits + LL_CYCLES * ll_hits + RAM_CYCLES * ll_misses)
    return out


def cycle_weights(events: list[str]) -> list[int]:
    """Each event's weight in ``estimated_cycles``, in ``events`` order: the formula is linear, so a cost
    line's cycles are its events weighed (how the parser gives a call graph in cycles)."""
    zero = figures({})["estimated_cycles"]
    return [int(figures({name: 1})["estimated_cycles"] - zero) if name in EVENTS else 0 for name in events]


def is_cache_sim(events: list[str]) -> bool:
    """Whether a dump's events are a cache simulation's."""
    return "D1mr" in events


def per_function_cycles(per_event: Mapping[str, Mapping[str, int]]) -> dict[str, int]:
    """{function: estimated cycles} from {event: {function: cost}} (Ir included)."""
    names: set[str] = set()
    for costs in per_event.values():
        names.update(costs)
    out: dict[str, int] = {}
    for name in names:
        value = figures({event: per_event.get(event, {}).get(name, 0) for event in EVENTS})["estimated_cycles"]
        if value:
            out[name] = int(value)
    return out
