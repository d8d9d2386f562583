"""A count's totals and per-function parts (top symbols, layers, whole profiles), made from its
callgrind dumps where the result is received, not where it was counted.

A counting child of a worker runs under valgrind, where reading a dump,
parsing it and ranking its functions cost 0.15-0.25 s of a 0.8 s count of a
small statement (Python's interpreter, translated again once instrumentation
stops), and seconds for the dumps of a large one; even reading the total and
the baseline, and sending the dump's text on, took it 0.1-0.2 s. The process
that asked for the count (a run's worker pool, ``collect_callgrind``, on the
same machine) does the same work natively in milliseconds. So a counting
child answers with the paths of its dumps, left unread in its worker's
directory (``CallgrindCounter.measure_dumps``), and of its baseline's file
under ``PENDING``, and ``finish`` reads and removes the dumps and turns them
into what the result would have held: the same samples, totals, functions
and numbers, whichever process computed them. A result counted in the
process that reports it (no worker) is finished at once.
"""

from __future__ import annotations

import collections
import json
import os
import statistics
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from harness.errors import HarnessError
from harness.measure.callgrind.flame import flame_details, wants_tree
from harness.measure.callgrind.layers import layer_counts, load_rules
from harness.measure.callgrind.profile import parse_text, totals_from_text
from harness.measure.callgrind.stats import is_noisy, standardize_symbol
from harness.measure.counters.cache import FIGURES, GEOMETRY, figures, is_cache_sim, per_function_cycles
from harness.measure.counters.profile import Profile
from harness.model.result import TaskResult

TOP_SYMBOLS = 30
PENDING = "pending_details"  # the extra field of an unfinished result: {"dumps": [paths], "baseline": ..., ...}


def profile_json(p: Profile) -> dict[str, Any]:
    data = {"total": p.total, "exclusive": p.exclusive, "inclusive": p.inclusive, "out": p.source}
    if is_cache_sim(p.events):  # a cache simulation's other events; an Ir-only profile's JSON is as it was
        data.update(events=p.events, totals=p.totals, exclusive_events=p.exclusive_events,
                    inclusive_events=p.inclusive_events)
    if p.calls:  # the call graph: a baseline's, for a flame graph to subtract it path by path
        data.update(functions=p.functions, calls=p.calls)
    if p.cycles_calls:
        data.update(cycles_functions=p.cycles_functions, cycles_calls=p.cycles_calls)
    return data


def profile_from_json(data: dict[str, Any]) -> Profile:
    return Profile(total=data["total"], exclusive=data["exclusive"], inclusive=data["inclusive"],
                   events=data.get("events") or ["Ir"], totals=data.get("totals") or {"Ir": data["total"]},
                   exclusive_events=data.get("exclusive_events") or {},
                   inclusive_events=data.get("inclusive_events") or {},
                   functions=data.get("functions") or {}, calls=data.get("calls") or {},
                   cycles_functions=data.get("cycles_functions") or {}, cycles_calls=data.get("cycles_calls") or {})


def top_symbols(stmt: Profile, baseline: Profile | None, number: int, n: int = TOP_SYMBOLS) -> dict[str, float]:
    """{function: instructions per run} of the statement minus the baseline, largest |value| first.

    Names are standardised (build paths and library names stripped) so runs
    on different machines line up; noisy dictionary lookups are dropped.
    """
    delta: collections.Counter[str] = collections.Counter()
    for fn, c in stmt.exclusive.items():
        delta[standardize_symbol(fn)] += c
    if baseline is not None:
        for fn, c in baseline.exclusive.items():
            delta[standardize_symbol(fn)] -= c
    items = [(fn, c / number) for fn, c in delta.items() if c and not is_noisy(fn)]
    items.sort(key=lambda kv: (-abs(kv[1]), kv[0]))
    return {fn: round(v, 2) for fn, v in items[:n]}


def wants_details(detail: str, layers: str | None) -> bool:
    """Whether a result needs its dumps parsed: anything but totals, or layers."""
    return detail != "total" or layers is not None


def count_details(stmt: list[Profile], baseline: Profile | None, number: int, detail: str,
                  layers: str | None) -> dict[str, Any]:
    """The extra fields made from parsed profiles: ``symbols``, ``layers`` and ``layer_symbols``, ``callgrind``."""
    extra: dict[str, Any] = {}
    base_total = baseline.total if baseline is not None else 0
    if stmt and is_cache_sim(stmt[0].events):
        extra.update(cache_details(stmt, baseline, number, layers))
    if detail != "total" and stmt and stmt[0].exclusive:
        extra["symbols"] = top_symbols(stmt[0], baseline, number)
    if layers is not None and stmt and stmt[0].exclusive:
        layering = layer_counts(
            stmt[0].exclusive, baseline.exclusive if baseline is not None else None, number=number,
            rules=load_rules(layers or None), total=stmt[0].total - base_total,
        )
        extra["layers"] = layering.counts
        extra["layer_symbols"] = layering.top_symbols()
    if detail == "full":
        extra["callgrind"] = {
            "stmt": [profile_json(s) for s in stmt],
            "baseline": profile_json(baseline) if baseline is not None else None,
        }
    return extra


def cache_details(stmt: list[Profile], baseline: Profile | None, number: int, layers: str | None) -> dict[str, Any]:
    """A cache simulation's figures: ``cache`` (every figure per run, baseline subtracted, the median over
    the repeats), ``cache_geometry``, and with layers ``cycles_layers`` (estimated cycles of ``number``
    runs per layer, adding up to ``cache["estimated_cycles"] * number``)."""
    base = figures(baseline.totals) if baseline is not None else {}
    per_repeat = [figures(s.totals) for s in stmt]
    cache = {name: statistics.median((f[name] - base.get(name, 0)) / number for f in per_repeat) for name in FIGURES}
    extra: dict[str, Any] = {"cache": cache, "cache_geometry": GEOMETRY}
    first = stmt[0]
    if layers is not None and first.exclusive_events:
        stmt_cycles = per_function_cycles({e: first.exclusive_of(e) for e in first.events})
        base_cycles = (per_function_cycles({e: baseline.exclusive_of(e) for e in baseline.events})
                       if baseline is not None else None)
        layering = layer_counts(stmt_cycles, base_cycles, number=number, rules=load_rules(layers or None),
                                total=int(per_repeat[0]["estimated_cycles"] - base.get("estimated_cycles", 0)))
        extra["cycles_layers"] = layering.counts
    return extra


def pending(dumps: list[str], baseline: Profile | str | None, detail: str, layers: str | None,
            keep_text: bool) -> dict[str, Any]:
    """What a counting child sends instead of its counts: its dumps' paths, its baseline (a profile,
    or the path of the file a zygote keeps it in), and how to finish them."""
    return {"dumps": dumps, "baseline": profile_json(baseline) if isinstance(baseline, Profile) else None,
            "baseline_file": baseline if isinstance(baseline, str) else None,
            "detail": detail, "layers": layers, "keep_text": keep_text}


def finish(result: TaskResult) -> TaskResult:
    """``result`` with its pending counts and details made (unchanged when it has none); its dumps
    are removed, whatever happens. A dump that is gone or does not parse, or a layers file that
    does not load, fails the result with the reason, as in the child."""
    work = result.extra.pop(PENDING, None)
    if not isinstance(work, dict):
        return result
    paths = work.get("dumps")
    try:
        texts = [Path(path).read_text(encoding="utf-8", errors="replace") for path in paths]
        detail, layers = work["detail"], work.get("layers")
        tree = wants_tree(result.task.params)  # the run's own task: the counting child never saw these
        stmt = [profile_of(text, wants_details(detail, layers) or (tree and i == 0), bool(work.get("keep_text")))
                for i, text in enumerate(texts)]
        baseline = _baseline(work)
        number = result.number_per_run or 1
        base_total = baseline.total if baseline is not None else 0
        result.samples = [(s.total - base_total) / number for s in stmt]
        result.extra["totals"] = [s.total for s in stmt]
        result.extra["baseline"] = base_total / number if baseline is not None else None
        result.extra.update(count_details(stmt, baseline, number, detail, layers))
        if tree and stmt:
            result.extra.update(flame_details(result.task, stmt[0], baseline, number, texts[0]))
    except HarnessError as exc:  # a dump callgrind cut short, a layers file with a mistake
        return _failed(result, str(exc))
    except OSError as exc:  # the worker's directory went (the worker ended, or it was cleaned)
        return _failed(result, f"the counting worker's dump could not be read: {exc}")
    except (KeyError, TypeError, ValueError) as exc:
        return _failed(result, f"the counting worker's answer is malformed ({PENDING}: {exc!r})")
    finally:
        discard(paths if isinstance(paths, list) else ())
    return result


def profile_of(text: str, parse: bool, keep_text: bool) -> Profile:
    """A dump's profile: parsed per function, or only its total (cheap); with its text when kept."""
    if parse:
        profile = parse_text(text)
    else:
        totals = totals_from_text(text)
        profile = Profile(total=totals["Ir"], exclusive={}, inclusive={}, events=list(totals), totals=totals)
    if keep_text:
        profile.source = text
    return profile


def discard(dumps: Iterable[str | Path]) -> None:
    """Remove left dumps (read, or no result will name them); those already gone are no matter."""
    for path in dumps:
        try:
            os.unlink(path)
        except (OSError, TypeError):
            pass


def _baseline(work: dict[str, Any]) -> Profile | None:
    if work.get("baseline_file"):
        return profile_from_json(json.loads(Path(work["baseline_file"]).read_text(encoding="utf-8")))
    return profile_from_json(work["baseline"]) if work.get("baseline") else None


def _failed(result: TaskResult, error: str) -> TaskResult:
    """What the counting child itself would have answered had the same error been raised there."""
    kept = {k: v for k, v in result.extra.items() if k == "elapsed_s"}
    return TaskResult(task=result.task, status="failed", error=error, extra=kept)
