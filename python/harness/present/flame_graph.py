"""The report's flame graphs: each counted benchmark's call tree, and what changed since an earlier run.

A result counted with ``bench --flame`` keeps its call tree
(``extra["flame"]``, ``measure.callgrind.call_tree``). The section draws the
latest run's trees with d3-flame-graph (vendored in ``assets/`` and inlined,
so the page stays one file that works offline): hover tells a function, its
PyTorch layer, its instructions per run and its share; a click zooms; the
search box highlights matching functions and sums them. Where an earlier
run of the report has the same benchmark's tree, a differential graph is
drawn too: the new tree's shape, each frame coloured by how much its
inclusive count grew (red) or shrank (blue), with the functions whose own
counts moved most listed beside it. A count that simulated the caches
(``bench --cache-sim --flame``) also has its tree by estimated cycles
(``extra["flame_cycles"]``), drawn the same way. A graph is built when its
benchmark is opened, so a report of many benchmarks opens as fast as one.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

from harness.model.result import TaskResult
from harness.present.html_parts import Runs, escape
from harness.present.table import format_value

ASSETS = Path(__file__).with_name("assets")
FLAME = "flame"  # the result's extra field (measure.callgrind.flame.FLAME)
FLAME_CYCLES = "flame_cycles"  # the tree by estimated cycles, when the count simulated the caches
TOP_CHANGES = 8

CSS = """
.flame { margin: .4em 0 1em; }
.flame .bar { display: flex; gap: .8em; align-items: center; font-size: .85em; margin: .3em 0; flex-wrap: wrap; }
.flame .bar input { font-size: 1em; padding: .1em .3em; width: 16em; }
.flame .details { color: #444; min-height: 1.2em; }
.flame svg { max-width: none; }
.flame .canvas { overflow-x: auto; }
.legend span { display: inline-block; padding: 0 .4em; margin: 0 .2em .2em 0; border-radius: 2px; font-size: .8em; }
"""

# One colour per layer (measure.callgrind.layers.LAYERS), so a layer reads the same in every graph.
LAYER_COLOURS = {
    "interpreter": "#8fb3e0", "bindings": "#c9a0dc", "gil": "#f2b8c6", "dispatcher": "#f5c26b",
    "autograd": "#a7d99a", "aten": "#f4a582", "kernel": "#e8705f", "allocator": "#b9b07a",
    "tensorimpl": "#9fd8d3", "tls": "#d6c9a3", "profiler": "#cccccc", "libc": "#d8d8d8", "other": "#e4e4e4",
}

# Expands the compact trees, draws a graph when its <details> opens (or at once, for the first),
# and records how long each took in data-render-ms (benchmarks/self/flame_graph_speed.py reads it).
SCRIPT = """
(function () {
  var store = JSON.parse(document.getElementById("flame-data").textContent);
  var colours = store.colours;
  function fmt(x) {
    var a = Math.abs(x);
    return x.toLocaleString("en-US", {maximumFractionDigits: a >= 100 ? 0 : (a >= 1 ? 1 : 2)});
  }
  function expand(g, item) {
    var full = g.names[item[0]], at = full.indexOf(":");
    // Drawn by function name; the tooltip gives file and function.
    var node = {n: at >= 0 && full.charAt(at + 1) !== ":" ? full.slice(at + 1) : full, f: full,
                y: g.layers[item[0]] || "", v: item[1]};
    if (item.length > 3) node.d = item[3];
    if (item.length > 2 && item[2].length) node.c = item[2].map(function (c) { return expand(g, c); });
    return node;
  }
  function draw(box) {
    if (box.getAttribute("data-drawn") === "1") return;
    var t0 = performance.now();
    var g = store.graphs[box.getAttribute("data-graph")];
    var root = expand(g, g.tree);
    var total = root.v;
    var canvas = box.querySelector(".canvas");
    var width = Math.max(600, (canvas.clientWidth || 964) - 4);
    var details = box.querySelector(".details");
    var tip = flamegraph.tooltip.defaultFlamegraphTooltip().text(function (d) {
      var v = d.data.v / g.number;
      var text = d.data.f + " | layer: " + (d.data.y || "-") + " | " + fmt(v) + " " + g.unit + " per run | " +
        (100 * d.data.v / total).toFixed(2) + "% of the benchmark";
      if (g.diff) {
        var delta = (d.data.d || 0) / g.number;
        text += " | change: " + (delta > 0 ? "+" : "") + fmt(delta) + " per run";
      }
      return text;
    });
    // Drawn at once (no grow-in animation); zooms animate.
    var chart = flamegraph.default().width(width).cellHeight(16).minFrameSize(1).transitionDuration(0)
      .sort(false).tooltip(tip).setDetailsElement(details)
      .setSearchMatch(function (d, term) {
        var name = d.data.f || "";
        return !!term && name.toLowerCase().indexOf(term.toLowerCase()) >= 0;
      })
      .setSearchHandler(function (results, sum, all) {
        details.textContent = results.length ? ("search: " + results.length + " frames, " + fmt(sum / g.number) +
          " " + g.unit + " per run (" + (100 * sum / all).toFixed(2) + "%)") : "";
      });
    if (g.diff) {
      chart.setColorMapper(function (d, original) {
        return flamegraph.colorMapper.differentialColorMapper(d, original);
      });
    } else {
      chart.setColorMapper(function (d) { return d.highlight ? "#e600e6" : (colours[d.data.y] || colours.other); });
    }
    d3.select(canvas).datum(root).call(chart);
    chart.transitionDuration(200);
    var search = box.querySelector("input.search");
    search.addEventListener("input", function () {
      if (search.value) { chart.search(search.value); } else { chart.clear(); }
    });
    box.querySelector("button.reset").addEventListener("click", function () { chart.resetZoom(); });
    box.chart = chart;
    box.setAttribute("data-drawn", "1");
    box.setAttribute("data-render-ms", (performance.now() - t0).toFixed(1));
  }
  document.querySelectorAll(".flame").forEach(function (box) {
    var holder = box.closest("details");
    if (!holder || holder.open) { draw(box); }
    else { holder.addEventListener("toggle", function () { if (holder.open) draw(box); }); }
  });
  var status = document.getElementById("flame-status");
  status.setAttribute("data-ready", "1");
  status.textContent = store.graphs.length + " flame graph(s)";
})();
"""


@cache
def _asset(name: str) -> str:
    text = (ASSETS / name).read_text(encoding="utf-8")
    return text.replace("</script", "<\\/script")


def has_flame(result: TaskResult) -> bool:
    return result.ok and isinstance(result.extra.get(FLAME), dict)


def flame_section(runs: Runs) -> str | None:
    """The section: the latest run's flame graphs, each with its differential against the latest
    earlier run that has the same benchmark's tree; None when no run has a tree."""
    latest = None
    for index in range(len(runs) - 1, -1, -1):
        if any(has_flame(r) for r in runs[index][1].results):
            latest = index
            break
    if latest is None:
        return None
    graphs: list[dict[str, Any]] = []
    blocks: list[str] = []
    for result in runs[latest][1].results:
        if not has_flame(result):
            continue
        title = f"{result.task.suite}/{result.task.name}" + (f"@{result.task.side}" if result.task.side else "")
        parts = [f"<details{' open' if not blocks else ''}><summary><code>{escape(title)}</code>: "
                 f"{escape(format_value(result.value, result.value_unit))} instructions per run "
                 f"(run #{latest + 1})</summary>"]
        earlier = _earlier(runs, latest, result)
        for key, unit in ((FLAME, "instructions"), (FLAME_CYCLES, "estimated cycles")):
            flame = result.extra.get(key)
            if not isinstance(flame, dict):
                continue
            graphs.append(_graph(flame, unit))
            parts.append(_box(len(graphs) - 1, f"call tree, by inclusive {unit}"))
            before = earlier[1].extra.get(key) if earlier is not None else None
            if earlier is not None and isinstance(before, dict):
                graphs.append(differential(before, flame, unit))
                caption = (f"differential of {unit} against run #{earlier[0] + 1}: red grew, blue shrank, "
                           f"grey unchanged (widths: run #{latest + 1})")
                parts.append(_box(len(graphs) - 1, caption))
                parts.append(_changes_table(before, flame, unit))
        parts.append("</details>")
        blocks.append("\n".join(parts))
    legend = "".join(f'<span style="background:{c}">{escape(layer)}</span>' for layer, c in LAYER_COLOURS.items())
    store = json.dumps({"graphs": graphs, "colours": LAYER_COLOURS}, separators=(",", ":")).replace("</", "<\\/")
    return "\n".join([
        '<h2 id="flame-graphs">Flame graphs</h2>',
        "<p>Each benchmark's call tree by inclusive instructions (and by estimated cycles where the count "
        "simulated the caches), of its first repeat, the empty loop's "
        "baseline subtracted, so the widest frame is the count in the table. Hover a frame for its function, "
        "layer, count and share; click to zoom in (the bottom frame zooms out); the search box highlights "
        "functions by name. Frames are coloured by PyTorch layer: <span class=\"legend\">" + legend + "</span> "
        '(<span id="flame-status" data-ready="0">static</span>).</p>',
        f"<style>{_asset('d3-flamegraph.css')}{CSS}</style>",
        f"<script>{_asset('d3.min.js')}</script>",
        f"<script>{_asset('d3-flamegraph.min.js')}</script>",
        *blocks,
        f'<script type="application/json" id="flame-data">{store}</script>',
        f"<script>{SCRIPT}</script>",
    ])


def _box(ident: int, caption: str) -> str:
    return (
        f'<div class="flame" data-graph="{ident}" data-drawn="0"><div class="bar"><strong>{escape(caption)}</strong>'
        '<input class="search" type="search" placeholder="search functions">'
        '<button class="reset" type="button">reset zoom</button>'
        '<span class="details"></span></div><div class="canvas"></div></div>'
    )


def _graph(flame: Mapping[str, Any], unit: str = "instructions") -> dict[str, Any]:
    return {"names": flame["names"], "layers": flame.get("layers") or [], "number": flame.get("number") or 1,
            "tree": flame["tree"], "diff": False, "unit": unit}


def _earlier(runs: Runs, latest: int, result: TaskResult) -> tuple[int, TaskResult] | None:
    for index in range(latest - 1, -1, -1):
        for other in runs[index][1].results:
            if has_flame(other) and other.task.key == result.task.key and other.task.side == result.task.side:
                return index, other
    return None


# -- the differential -------------------------------------------------------------------------------


def differential(base: Mapping[str, Any], new: Mapping[str, Any], unit: str = "instructions") -> dict[str, Any]:
    """``new``'s tree with each node's change of inclusive count since ``base`` at the same path
    (4th element, in ``new``'s units: instructions of its ``number`` runs). A tree against
    itself changes nowhere."""
    scale = (new.get("number") or 1) / (base.get("number") or 1)
    base_names, new_names = base["names"], new["names"]

    def walk(item: list[Any], other: list[Any] | None) -> list[Any]:
        matched = {base_names[c[0]]: c for c in _children(other)} if other is not None else {}
        children = [walk(c, matched.get(new_names[c[0]])) for c in _children(item)]
        before = other[1] * scale if other is not None else 0
        delta = item[1] - before
        return [item[0], item[1], children, round(delta, 2) if delta != int(delta) else int(delta)]

    graph = _graph(new, unit)
    graph["tree"] = walk(new["tree"], base["tree"])
    graph["diff"] = True
    return graph


def _children(item: list[Any] | None) -> list[list[Any]]:
    return item[2] if item is not None and len(item) > 2 else []


def own_counts(flame: Mapping[str, Any]) -> dict[str, float]:
    """{function: its own instructions per run, summed over the tree}: they add up to the root's count."""
    names, number = flame["names"], flame.get("number") or 1
    out: defaultdict[str, float] = defaultdict(float)
    stack = [flame["tree"]]
    while stack:
        item = stack.pop()
        kids = _children(item)
        out[names[item[0]]] += (item[1] - sum(c[1] for c in kids)) / number
        stack.extend(kids)
    return dict(out)


def _changes_table(base: Mapping[str, Any], new: Mapping[str, Any], unit: str = "instructions") -> str:
    before, after = own_counts(base), own_counts(new)
    layers = {**dict(zip(base["names"], base.get("layers") or [], strict=False)),
              **dict(zip(new["names"], new.get("layers") or [], strict=False))}
    moved = [(name, before.get(name, 0.0), after.get(name, 0.0)) for name in set(before) | set(after)]
    moved = [m for m in moved if abs(m[2] - m[1]) >= 0.005]
    if not moved:
        return '<p class="note">No change: every function\'s own count is the same in both runs.</p>'
    moved.sort(key=lambda m: (-abs(m[2] - m[1]), m[0]))
    rows = "".join(
        f"<tr><td><code>{escape(name)}</code></td><td>{escape(layers.get(name) or '')}</td>"
        f'<td class="num">{escape(format_value(b, "instructions"))}</td>'
        f'<td class="num">{escape(format_value(a, "instructions"))}</td>'
        f'<td class="num">{"+" if a > b else ""}{escape(format_value(a - b, "instructions"))}</td></tr>'
        for name, b, a in moved[:TOP_CHANGES]
    )
    return (f"<table class=\"sortable\"><thead><tr><th>function (own {unit} per run)</th><th>layer</th>"
            "<th>before</th><th>after</th><th>change</th></tr></thead><tbody>" + rows + "</tbody></table>")
