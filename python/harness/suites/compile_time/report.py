"""The HTML report's section for compile-time results (kind ``compile_time``): instructions per case."""

from __future__ import annotations

from harness.present import plots
from harness.present.html_parts import Runs, latest_with, results_table


def compile_time_section(runs: Runs) -> str | None:
    found = latest_with(runs, lambda r: r.task.kind == "compile_time" and r.counts_instructions)
    if found is None:
        return None
    index, results = found
    svg = plots.horizontal_bars(
        [r.task.name for r in results], [r.value for r in results], [r.noisy for r in results],
        "instructions",
    )
    return "\n".join([
        "<h2 id=\"compile-time\">Compile time (instructions)</h2>",
        f"<p>Instructions spent compiling each case, from run #{index + 1}; red bars are noisy.</p>",
        f'<div class="plot">{svg}</div>',
        results_table(results, extra_columns=("counter",)),
    ])
