"""Compare two runs: per benchmark, base vs new, the change, and whether it is real.

Wall-time results (any result with per-run samples that is not an instruction
count) are judged by a two-sided Mann-Whitney U test on the raw samples and a
minimum effect size: a change is reported only when it is both statistically
significant and large enough to matter. Instruction counts are deterministic
up to small jitter, so they are judged against a noise margin alone.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from collections.abc import Iterable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from harness.model.phases import moved_phase, phases_of
from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.options import DEFAULT_ALPHA, DEFAULT_MIN_EFFECT, DEFAULT_NOISE_MARGIN
from harness.present.cache_table import cache_change_table, cycles_layer_change_table
from harness.present.layer_table import layer_change_table
from harness.present.phase_table import change_text, phase_change_table
from harness.present.table import format_value

VERDICT_STYLE = {
    "faster": "green", "better": "green", "slower": "red", "worse": "red",
    "same": "dim", "noisy": "yellow", "failed": "red", "incomparable": "yellow",
}


@dataclasses.dataclass(frozen=True)
class Thresholds:
    alpha: float = DEFAULT_ALPHA  # significance level of the U test
    min_effect: float = DEFAULT_MIN_EFFECT  # smallest relative wall-time change worth reporting
    noise_margin: float = DEFAULT_NOISE_MARGIN  # relative instruction-count change treated as jitter


@dataclasses.dataclass
class Row:
    suite: str
    name: str
    base: TaskResult
    new: TaskResult
    change: float | None  # relative: (new - base) / base
    p_value: float | None
    verdict: str  # faster/slower (better/worse for higher-is-better), same, noisy, failed, incomparable
    note: str = ""
    # Wall time: the probability that a sample of new exceeds one of base (0.5: no effect),
    # the U statistic over n1 * n2.
    effect: float | None = None

    @property
    def regression(self) -> bool:
        """A significant change in the bad direction."""
        return self.verdict in ("slower", "worse")


@dataclasses.dataclass
class Comparison:
    rows: list[Row]
    added: list[TaskResult]
    removed: list[TaskResult]

    def regressions(self, beyond: float = 0.0) -> list[Row]:
        """Significant regressions whose size exceeds ``beyond`` (relative)."""
        return [r for r in self.rows if r.regression and r.change is not None and abs(r.change) > beyond]

    def newly_failed(self) -> list[Row]:
        """Benchmarks that ran in the base run and fail in the new one: the worst regression of all."""
        return [r for r in self.rows if r.base.ok and not r.new.ok]


def min_p_value(n1: int, n2: int) -> float:
    """The smallest two-sided p the exact U test can give for these sample sizes."""
    return min(1.0, 2.0 / math.comb(n1 + n2, n1))


def u_test(base: list[float], new: list[float]) -> float:
    """Two-sided Mann-Whitney U p-value of the raw samples."""
    from scipy.stats import mannwhitneyu

    if len(set(base) | set(new)) == 1:
        return 1.0  # identical constants: nothing to test, and scipy would divide by zero
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return float(mannwhitneyu(base, new, alternative="two-sided").pvalue)


def superiority(a: list[float], b: list[float]) -> float:
    """P(a sample of ``a`` > one of ``b``), ties counting half: the U statistic of ``a`` over n1 * n2."""
    from scipy.stats import mannwhitneyu

    if len(set(a) | set(b)) == 1:
        return 0.5
    return float(mannwhitneyu(a, b, alternative="two-sided").statistic) / (len(a) * len(b))


def _direction(change: float, higher_is_better: bool) -> str:
    improved = change > 0 if higher_is_better else change < 0
    if higher_is_better:
        return "better" if improved else "worse"
    return "faster" if improved else "slower"


def compare_results(base: TaskResult, new: TaskResult, thresholds: Thresholds = Thresholds()) -> Row:
    """The verdict for one benchmark present in both runs."""
    row = Row(base.task.suite, base.task.name, base, new, None, None, "failed")
    if not (base.ok and new.ok):
        row.note = {(False, False): "failed in both", (False, True): "failed in base"}.get(
            (base.ok, new.ok), "failed in new"
        )
        return row
    if base.value_unit != new.value_unit or base.counts_instructions != new.counts_instructions:
        row.verdict = "incomparable"
        row.note = f"{base.value_unit} vs {new.value_unit}"
        return row
    b, n = base.value, new.value
    if not (math.isfinite(b) and math.isfinite(n)) or b == 0:
        row.verdict, row.note = "noisy", "no comparable value"
        return row
    row.change = (n - b) / abs(b)
    higher = new.higher_is_better
    if base.counts_instructions and new.counts_instructions:
        if abs(row.change) <= thresholds.noise_margin:
            row.verdict = "same"
        else:
            row.verdict = _direction(row.change, higher)
        return row
    big = abs(row.change) >= thresholds.min_effect
    if len(base.samples) < 2 or len(new.samples) < 2:
        row.verdict = "noisy" if big else "same"
        row.note = "too few samples to test"
        return row
    row.p_value = u_test(base.samples, new.samples)
    row.effect = superiority(new.samples, base.samples)
    significant = row.p_value < thresholds.alpha
    if significant and big:
        row.verdict = _direction(row.change, higher)
    elif big:
        row.verdict = "noisy"
        if min_p_value(len(base.samples), len(new.samples)) >= thresholds.alpha:
            row.note = f"{len(base.samples)} vs {len(new.samples)} samples cannot reach p < {thresholds.alpha:g}"
        else:
            row.note = "not significant"
    else:
        row.verdict = "same"
    return row


def compare_runs(base: RunRecord, new: RunRecord, thresholds: Thresholds = Thresholds()) -> Comparison:
    base_by = {r.task.full_name: r for r in base.results}
    new_by = {r.task.full_name: r for r in new.results}
    rows = [compare_results(base_by[k], new_by[k], thresholds) for k in new_by if k in base_by]
    added = [new_by[k] for k in new_by if k not in base_by]
    removed = [base_by[k] for k in base_by if k not in new_by]
    return Comparison(rows=rows, added=added, removed=removed)


# Environment fields that, when they differ, make timings of two runs hard to compare.
_ENV_FIELDS = (
    ("hostname", "host"), ("cpu_model", "CPU"), ("cpu_count", "core count"), ("torch.version", "torch"),
    ("torch.build", "torch build"), ("python", "Python"), ("cpu_governor", "CPU governor"),
)


def _env_get(env: dict[str, Any], dotted: str) -> Any:
    value: Any = env
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, dict) else None
    return value


def environment_notes(base: RunRecord, new: RunRecord) -> list[str]:
    """Why the two runs' numbers may differ for reasons other than the code."""
    notes = []
    for field, label in _ENV_FIELDS:
        b, n = _env_get(base.environment, field), _env_get(new.environment, field)
        if b is not None and n is not None and b != n:
            notes.append(f"{label} differs: {b} (base) vs {n} (new)")
    for name, record in (("base", base), ("new", new)):
        findings = (record.environment.get("noise") or {}).get("findings") or []
        if findings:
            notes.append(f"{name} run had noise warnings: {'; '.join(findings)}")
    return notes


def symbol_deltas(base: TaskResult, new: TaskResult) -> list[tuple[str, float, float, float]]:
    """(symbol, base, new, new - base) per function, most expensive growth first.

    Uses ``extra["symbols"]``: {symbol: instructions per run}, as the callgrind
    runner records them; a symbol missing on one side counts as 0 there.
    """
    b = _symbols(base)
    n = _symbols(new)
    out = [(s, b.get(s, 0.0), n.get(s, 0.0), n.get(s, 0.0) - b.get(s, 0.0)) for s in dict.fromkeys([*b, *n])]
    out.sort(key=lambda t: (-t[3], t[0]))
    return out


def _symbols(result: TaskResult) -> dict[str, float]:
    raw = result.extra.get("symbols")
    if not isinstance(raw, dict):
        return {}
    out = {}
    for k, v in raw.items():
        if isinstance(v, int | float) and not isinstance(v, bool):
            out[str(k)] = float(v)
    return out


# -- presentation ---------------------------------------------------------------


def _value_text(r: TaskResult) -> str:
    if not r.ok:
        return "[red]failed[/red]"
    text = format_value(r.value, r.value_unit)
    return text + (f" [yellow](! {r.relative_iqr:.0%})[/yellow]" if r.noisy else "")


def _by_suite(items: Iterable[Any], suite_of) -> dict[str, list[Any]]:
    out: dict[str, list[Any]] = {}
    for item in items:
        out.setdefault(suite_of(item), []).append(item)
    return out


def comparison_tables(comparison: Comparison, show_p: bool = True, sides: tuple[str, str] | None = None) -> list[Table]:
    """A table per suite. ``sides``: the labels of an A/B run's two sides, whose table also shows
    the change in the benchmark's unit (instructions: exact) and, for wall time, the effect size."""
    tables = []
    base_label, new_label = sides or ("base", "new")
    for suite, rows in _by_suite(comparison.rows, lambda r: r.suite).items():
        table = Table(title=f"{suite}: {base_label} vs {new_label}", title_justify="left")
        table.add_column("benchmark", overflow="fold")
        table.add_column(base_label, justify="right")
        table.add_column(new_label, justify="right")
        if sides:
            table.add_column("change", justify="right")
        table.add_column("change %" if sides else "change", justify="right")
        if show_p:
            table.add_column("p", justify="right")
        if sides:
            table.add_column("effect", justify="right")
        table.add_column("verdict")
        for r in rows:
            change = "" if r.change is None else f"{r.change * 100:+.{3 if sides else 1}f}%"
            style = VERDICT_STYLE.get(r.verdict, "")
            verdict = f"[{style}]{r.verdict}[/{style}]" if style else r.verdict
            if r.note:
                verdict += f" [dim]({escape(r.note)})[/dim]"
            cells = [escape(r.name), _value_text(r.base), _value_text(r.new)]
            if sides:
                cells.append(_difference_text(r))
            cells.append(change)
            if show_p:
                cells.append("" if r.p_value is None else f"{r.p_value:.3g}")
            if sides:
                cells.append("" if r.effect is None else f"{r.effect:.2f}")
            table.add_row(*cells, verdict)
        tables.append(table)
    return tables


def _difference_text(r: Row) -> str:
    if not (r.base.ok and r.new.ok) or r.change is None:
        return ""
    diff = r.new.value - r.base.value
    if r.base.counts_instructions:
        return f"{diff:+,.1f}"
    sign = "+" if diff >= 0 else "-"
    return sign + format_value(abs(diff), r.base.value_unit)


def print_comparison(
    comparison: Comparison,
    console: Console,
    symbols: bool = False,
    top: int = 10,
    notes: Iterable[str] = (),
    sides: tuple[str, str] | None = None,
    layers: bool = False,
    phases: bool = False,
) -> None:
    for note in notes:
        console.print(f"[yellow]note:[/yellow] {escape(note)}", highlight=False)
    for table in comparison_tables(comparison, sides=sides):
        console.print(table)
    cache = cache_change_table((f"{row.suite}/{row.name}", row.base, row.new) for row in comparison.rows)
    if cache is not None:  # both runs counted with --cache-sim
        console.print(cache)
    for label, results in (("added (only in new)", comparison.added), ("removed (only in base)", comparison.removed)):
        if results:
            console.print(f"[bold]{label}:[/bold]")
            for r in results:
                console.print(f"  {escape(r.task.full_name)}", highlight=False)
    if symbols:
        _print_symbols(comparison, console, top)
    if layers:
        _print_layers(comparison, console)
    if phases:
        _print_phases(comparison, console)


def _print_phases(comparison: Comparison, console: Console) -> None:
    """Per benchmark with phases in both runs: the phase that moved, then the table of phase changes."""
    shown = 0
    for row in comparison.rows:
        base, new = phases_of(row.base.extra), phases_of(row.new.extra)
        if base is None or new is None or base.unit != new.unit:
            continue
        shown += 1
        moved = moved_phase(base, new)
        name = f"{row.suite}/{row.name}"
        if moved is None:
            console.print(f"{escape(name)}: no phase moved", highlight=False, soft_wrap=True)
            continue
        console.print(f"{escape(name)}: the phase that moved: {escape(change_text(moved, base.total, base.unit))}",
                      highlight=False, soft_wrap=True)
        console.print(phase_change_table(f"{name}: per torch compile phase", base, new))
    if not shown:
        console.print("no benchmark in both runs has phases; they come from bench compile_time --phases")


def _print_layers(comparison: Comparison, console: Console) -> None:
    tables = [t for row in comparison.rows
              if (t := layer_change_table(f"{row.suite}/{row.name}", row.base, row.new)) is not None]
    tables += [t for row in comparison.rows
               if (t := cycles_layer_change_table(f"{row.suite}/{row.name}", row.base, row.new)) is not None]
    for table in tables:
        console.print(table)
    if not tables:
        console.print("no benchmark in both runs has layers; they come from bench --mode instructions --layers")


def _print_symbols(comparison: Comparison, console: Console, top: int) -> None:
    shown = 0
    for row in comparison.rows:
        if not (_symbols(row.base) and _symbols(row.new)):
            continue
        deltas = symbol_deltas(row.base, row.new)
        grown = [d for d in deltas if d[3] > 0][:top]
        total = sum(d[3] for d in deltas)
        table = Table(
            title=f"{row.suite}/{row.name}: functions that got more expensive (instructions per run; "
            f"all symbols together {total:+,.0f})",
            title_justify="left",
        )
        table.add_column("function")
        table.add_column("base", justify="right")
        table.add_column("new", justify="right")
        table.add_column("delta", justify="right")
        for symbol, b, n, d in grown:
            table.add_row(escape(symbol), f"{b:,.0f}", f"{n:,.0f}", f"[red]{d:+,.0f}[/red]")
        if not grown:
            table.add_row("[dim](no function got more expensive)[/dim]", "", "", "")
        console.print(table)
        shown += 1
    if not shown:
        console.print("no benchmark in both runs has per-symbol counts (extra[\"symbols\"]); "
                      "they come from instruction-count runs with callgrind")
