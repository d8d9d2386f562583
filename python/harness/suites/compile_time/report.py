"""The HTML report's section for compile-time results (kind ``compile_time``): instructions per case."""

from __future__ import annotations

from harness.model.phases import SEP, Phases, phases_of
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
    parts = [
        "<h2 id=\"compile-time\">Compile time (instructions)</h2>",
        f"<p>Instructions spent compiling each case, from run #{index + 1}; red bars are noisy.</p>",
        f'<div class="plot">{svg}</div>',
    ]
    phased = [(r.task.name, p) for r in results if (p := phases_of(r.extra)) is not None]
    if phased:
        names, stacks = phase_stacks(phased)
        parts += [
            "<p>Each case by torch compile phase (bench --phases): a phase's own instructions, nested "
            f"phases deeper than {STACK_DEPTH} levels folded into their parent, the smaller ones together as "
            f"&quot;{FOLDED}&quot;; each bar adds up to the case's count.</p>",
            '<div class="plot">'
            + plots.stacked_bars([c for c, _ in phased], ["instructions"], stacks, names, "instructions")
            + "</div>",
        ]
    parts.append(results_table(results, extra_columns=("counter",)))
    return "\n".join(parts)


STACK_DEPTH = 3
STACK_SEGMENTS = 9
FOLDED = "smaller phases"


def phase_stacks(phased: list[tuple[str, Phases]]) -> tuple[list[str], dict[tuple[str, str], list[float]]]:
    """(segment names, {(case, "instructions"): values}): phases cut at STACK_DEPTH, the largest kept."""
    folded: list[tuple[str, dict[str, float]]] = []
    sizes: dict[str, float] = {}
    for case, phases in phased:
        values: dict[str, float] = {}
        for path, value in phases.exclusive.items():
            short = SEP.join(path.split(SEP)[:STACK_DEPTH])
            values[short] = values.get(short, 0.0) + value
            sizes[short] = sizes.get(short, 0.0) + value
        folded.append((case, values))
    kept = sorted(sizes, key=lambda p: -sizes[p])[:STACK_SEGMENTS]
    names = [*kept, FOLDED]
    stacks = {}
    for case, values in folded:
        rest = sum(v for p, v in values.items() if p not in kept)
        stacks[(case, "instructions")] = [values.get(p, 0.0) for p in kept] + [rest]
    return names, stacks
