"""Compare: side-by-side tables of Measurements, the same layout as torch's Compare.

One table per label; a row per (threads, env, sub_label or stmt); a column per
description; medians in one unit per table with optional significant-figure
trimming, colouring relative to the best cell, and IQR warnings.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from harness.model.measurement import Measurement, select_unit, trim_sigfig, unit_to_english

BEST = "\033[92m"
GOOD = "\033[34m"
BAD = "\033[2m\033[91m"
VERY_BAD = "\033[31m"
BOLD = "\033[1m"
TERMINATE = "\033[0m"


def _color(segment: str, value: float, best: float) -> str:
    if value <= best * 1.01 or value <= best + 100e-9:
        return BEST + BOLD + segment + TERMINATE * 2
    if value <= best * 1.1:
        return GOOD + BOLD + segment + TERMINATE * 2
    if value >= best * 5:
        return VERY_BAD + BOLD + segment + TERMINATE * 2
    if value >= best * 2:
        return BAD + segment + TERMINATE
    return segment


class Compare:
    def __init__(self, results: Iterable[Measurement]) -> None:
        self._results: list[Measurement] = []
        self.extend_results(results)
        self._trim_significant_figures = False
        self._colorize: str | None = None  # None, "column" or "row"
        self._highlight_warnings = False

    def __str__(self) -> str:
        return "\n".join(self._render())

    def extend_results(self, results: Iterable[Measurement]) -> None:
        for r in results:
            if not isinstance(r, Measurement):
                raise ValueError(f"Expected an instance of `Measurement`, got {type(r)} instead.")
        self._results.extend(results)

    def trim_significant_figures(self) -> None:
        self._trim_significant_figures = True

    def colorize(self, rowwise: bool = False) -> None:
        self._colorize = "row" if rowwise else "column"

    def highlight_warnings(self) -> None:
        self._highlight_warnings = True

    def print(self) -> None:
        print(str(self))

    # -- rendering ------------------------------------------------------------
    def _render(self) -> list[str]:
        merged = Measurement.merge(self._results)
        by_label: dict[str | None, list[Measurement]] = {}
        for m in merged:
            by_label.setdefault(m.label, []).append(m)
        out: list[str] = []
        for label, group in by_label.items():
            out.extend(self._table(label, group))
            out.append("")
        return out

    def _table(self, label: str | None, group: list[Measurement]) -> list[str]:
        columns: list[str | None] = list(dict.fromkeys(m.description for m in group))
        row_keys = list(dict.fromkeys((m.num_threads, m.env, m.as_row_name) for m in group))
        cells = {((m.num_threads, m.env, m.as_row_name), m.description): m for m in group}
        unit, scale = select_unit(min(m.median for m in group))

        def value(m: Measurement) -> float:
            v = m.median / scale
            return trim_sigfig(v, m.significant_figures) if self._trim_significant_figures else v

        # One number format per column, wide enough for its largest value and
        # with as many decimals as its least precise cell justifies.
        formats: dict[str | None, str] = {}
        for col in columns:
            ms = [cells[(k, col)] for k in row_keys if (k, col) in cells]
            leading = [max(int(math.ceil(math.log10(value(m)))), 1) if value(m) > 0 else 1 for m in ms]
            if self._trim_significant_figures:
                decimals = min(max(m.significant_figures - d, 0) for d, m in zip(leading, ms, strict=True))
            else:
                decimals = 1
            width = max(leading) + decimals + (1 if decimals else 0)
            formats[col] = f"{{:>{width}.{decimals}f}}"

        best_in_col = {
            col: min(cells[(k, col)].median for k in row_keys if (k, col) in cells) for col in columns
        }
        rows_text: list[list[str]] = []
        for key in row_keys:
            present = [cells[(key, c)].median for c in columns if (key, c) in cells]
            row = []
            for col in columns:
                m = cells.get((key, col))
                if m is None:
                    row.append("")
                    continue
                text = formats[col].format(value(m))
                if self._highlight_warnings and m.has_warnings:
                    text += f" (! {m.iqr / m.median * 100:.0f}%)"
                row.append(text)
            rows_text.append(row)
            if self._colorize:
                for i, col in enumerate(columns):
                    m = cells.get((key, col))
                    if m is not None:
                        best = min(present) if self._colorize == "row" else best_in_col[col]
                        row[i] = (row[i], m.median, best)  # type: ignore[call-overload]

        names = ["" if len({k[1] for k in row_keys}) <= 1 else f"({k[1]}) " for k in row_keys]
        names = [f"{n}{k[2]}" for n, k in zip(names, row_keys, strict=True)]
        name_width = max([len(n) for n in names] + [10]) + 6
        col_widths = [
            max([len(str(col or ""))] + [len(r[i][0] if isinstance(r[i], tuple) else r[i]) for r in rows_text])
            for i, col in enumerate(columns)
        ]

        def fmt_cell(cell: object, width: int) -> str:
            if isinstance(cell, tuple):
                text, v, best = cell
                return _color(text.rjust(width), v, best)
            return str(cell).rjust(width)

        header = " " * name_width + "|" + "|".join(f"  {str(c or '').center(w)}  " for c, w in zip(columns, col_widths, strict=True))
        total = len(header)
        title = f" {label} " if label else ""
        lines = [f"[{title.center(total - 2, '-')}]", header]
        last_threads = None
        for key, name, row in zip(row_keys, names, rows_text, strict=True):
            if key[0] != last_threads:
                prefix = f"{key[0]} threads: "
                lines.append(prefix + "-" * max(total - len(prefix), 0))
                last_threads = key[0]
            cells_txt = "|".join(f"  {fmt_cell(c, w)}  " for c, w in zip(row, col_widths, strict=True))
            lines.append(f"      {name}".ljust(name_width) + "|" + cells_txt)
        lines.append("")
        lines.append(f"Times are in {unit_to_english(unit)}s ({unit}).")
        return lines
