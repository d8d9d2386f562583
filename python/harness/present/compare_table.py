"""Compare: side-by-side tables of Measurements, byte for byte torch's Compare.

One table per label; a row per (threads, env, sub_label or stmt), grouped by
thread count; a column per description; medians in one unit per table, with
optional significant-figure trimming, colouring relative to the best cell
and IQR warnings. Scripts parse and diff these tables, so the layout (centred
cells, widths, the double reset after a bold colour, the trailing footnote)
is torch's exactly; ``tests/present/test_torch_parity.py`` checks it over a
generated grid.

Deliberate differences (also in the README): a column without a description
gets an empty header (torch raises TypeError), and ``results`` may be any
iterable, a generator included (torch reads it twice and keeps nothing).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Iterable

from harness.model import stats
from harness.model.measurement import Measurement, select_unit, trim_sigfig, unit_to_english

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"

class Colorize(enum.Enum):
    """How ``Compare`` colours cells (torch's enum: ``colorize()`` picks COLUMNWISE or ROWWISE)."""

    NONE = "none"
    COLUMNWISE = "columnwise"
    ROWWISE = "rowwise"


HIGH_VARIANCE_NOTE = "(! XX%) Measurement has high variance, where XX is the IQR / median * 100."


def _color(segment: str, value: float, best: float) -> str:
    """``segment`` coloured by how far ``value`` is from the best value it is compared with."""
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + segment + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + segment + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + segment + TERMINATE * 2
    if value >= best * 2:
        return BAD + segment + TERMINATE * 2
    return segment


RowKey = tuple[int, str, str]


@dataclasses.dataclass
class _ColumnFormat:
    """How one description's numbers are written: one width and precision for the column."""

    template: str
    warnings: bool
    trim: bool

    @classmethod
    def of(cls, cells: list[Measurement], scale: float, trim: bool, highlight: bool) -> _ColumnFormat:
        # Digits before the point as torch counts them (ceil of a float32 log10).
        digits = [math.ceil(stats.log10_f32(m.median / scale)) for m in cells]
        decimals = min(max(m.significant_figures - d, 0) for d, m in zip(digits, cells, strict=True)) if trim else 1
        width = max(digits) + decimals + (1 if decimals else 0)
        warnings = highlight and any(m.has_warnings for m in cells)
        return cls(f"{{:>{width}.{decimals}f}}{{:>{7 if warnings else 0}}}", warnings, trim)

    def text(self, m: Measurement | None, scale: float) -> str:
        if m is None:
            return " " * len(self._number(1.0, 1, ""))
        spread = f" (! {m.iqr / m.median * 100:.0f}%)" if self.warnings and m.has_warnings else ""
        return self._number(m.median / scale, m.significant_figures, spread)

    def _number(self, value: float, figures: int, spread: str) -> str:
        return self.template.format(trim_sigfig(value, figures) if self.trim else value, spread)


class _Table:
    """One label's table."""

    def __init__(self, results: list[Measurement], colorize: Colorize, trim: bool, highlight: bool) -> None:
        self.label = results[0].label
        self.results = results
        self.colorize = colorize
        self.highlight = highlight
        self.unit, self.scale = select_unit(min(m.median for m in results))
        # Rows keep the order statements were first seen within each (threads, env).
        keys = list(dict.fromkeys((m.num_threads, m.env, m.as_row_name) for m in results))
        self.row_keys: list[RowKey] = sorted(keys, key=lambda k: (k[0], k[1]))
        self.columns: list[str | None] = list(dict.fromkeys(m.description for m in results))
        self.cells = {((m.num_threads, m.env, m.as_row_name), m.description): m for m in results}
        self.formats = [
            _ColumnFormat.of([m for k in self.row_keys if (m := self.cells.get((k, c)))], self.scale, trim, highlight)
            for c in self.columns
        ]

    def _row(self, key: RowKey) -> list[Measurement | None]:
        return [self.cells.get((key, c)) for c in self.columns]

    def _names(self) -> list[str]:
        envs = {m.env for m in self.results}
        env_width = max(len(e) for e in envs) + 4 if len(envs) > 1 else 4
        names, previous = [], None
        for threads, env, row_name in self.row_keys:
            if previous is None or previous[0] != threads:
                previous = (threads, "")  # a new thread group names its env again
            shown = f"({env})" if len(envs) > 1 and env != previous[1] else ""
            names.append("  " + shown.ljust(env_width) + row_name)
            previous = (threads, env)
        return names

    def _best(self, key: RowKey) -> list[float | None]:
        row = self._row(key)
        if self.colorize is Colorize.ROWWISE:
            best = min(m.median for m in row if m is not None)
            return [best] * len(row)
        if self.colorize is Colorize.COLUMNWISE:
            group = [k for k in self.row_keys if k[0] == key[0]]
            return [
                min((m.median for k in group if (m := self.cells.get((k, c)))), default=None)
                for c in self.columns
            ]
        return [None] * len(row)

    def render(self) -> str:
        header = ["", *(c or "" for c in self.columns)]
        body = [
            [name, *(f.text(m, self.scale) for f, m in zip(self.formats, self._row(k), strict=True))]
            for name, k in zip(self._names(), self.row_keys, strict=True)
        ]
        widths = [max(len(r[i]) for r in [header, *body]) for i in range(len(header))]
        lines = ["  |  ".join(s.center(w) for s, w in zip(header, widths, strict=True))]
        total = len(lines[0])
        previous_threads = None
        for key, texts in zip(self.row_keys, body, strict=True):
            if key[0] != previous_threads:
                lines.append(f"{key[0]} threads: ".ljust(total, "-"))
                previous_threads = key[0]
            cells = [texts[0].ljust(widths[0])]
            for text, width, m, best in zip(texts[1:], widths[1:], self._row(key), self._best(key), strict=True):
                text = text.center(width)
                cells.append(_color(text, m.median, best) if m is not None and best is not None else text)
            lines.append("  |  ".join(cells))
        warned = self.highlight and any(m.has_warnings for m in self.results)
        title = f" {self.label or ''} ".center(total - 2, "-")
        return (
            f"[{title}]\n" + "\n".join(lines) + "\n\n"
            f"Times are in {unit_to_english(self.unit)}s ({self.unit}).\n"
            + (HIGH_VARIANCE_NOTE + "\n" if warned else "")
        )


class Compare:
    """Tables of many Measurements side by side, as ``torch.utils.benchmark.Compare`` prints them."""

    def __init__(self, results: Iterable[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize = Colorize.NONE
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results: Iterable[Measurement]) -> None:
        """Add more Measurements; anything else is refused with torch's ValueError."""
        results = list(results)
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        self._colorize = Colorize.ROWWISE if rowwise else Colorize.COLUMNWISE

    def highlight_warnings(self) -> None:
        self._highlight_warnings = True

    def print(self) -> None:
        print(str(self))

    def _render(self) -> list[str]:
        by_label: dict[str | None, list[Measurement]] = {}
        for m in Measurement.merge(self._results):
            by_label.setdefault(m.label, []).append(m)
        return [
            _Table(group, self._colorize, self._trim_significant_figures, self._highlight_warnings).render()
            for group in by_label.values()
        ]
