"""Flame graphs of a 10,000-function profile: how fast the report draws and answers one, and whether
its totals are exact.

Prints, from one run on this machine (the figure, the target):
  1. the profile: functions and calls in the dump, its parse and the call tree's expansion (ms), the
     nodes the tree keeps, the report's size (one file, nothing fetched)
  2. in headless Chromium: drawing the flame graph (ms from the start of its script to the graph in the
     page), zooming into the widest frame below the root (a click), a search, and the differential
     graph's drawing                                                        target < 1000 ms each
  3. totals: the tree's root against the dump's total, and the differential of a run against itself
                                                 target: equal exactly; every change 0

The profile is made up (seeded): 10,000 functions in a layered call graph (each calling 1-4 of the
next layers', 40 layers deep, a few calls back up for cycles), written in callgrind's format and read
by harness's own parser, so the same path a real count takes. The timings come from the page's own
clock (performance.now()) via a script this harness appends to a copy of the report, read back with
`chromium --headless --dump-dom`.

Run: .venv/bin/python benchmarks/self/flame_graph_speed.py [--functions 10000] [--keep report.html]
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness.measure.callgrind.call_tree import MAX_NODES, MIN_SHARE, call_tree, to_json
from harness.measure.callgrind.layers import load_rules
from harness.measure.callgrind.profile import parse_text
from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.model.task import Task
from harness.present.flame_graph import differential
from harness.present.html_report import build_report

TARGET_MS = 1000.0
NUMBER = 100

# Appended to a copy of the report: times a zoom (a click on the widest frame above the root), a search
# and the differential's drawing, each from the page's clock, and writes them into the DOM.
PROBE = """
<script>
(function () {
  var out = document.createElement("pre"); out.id = "probe"; document.body.appendChild(out);
  var boxes = document.querySelectorAll(".flame");
  var first = boxes[0];
  var frames = first.querySelectorAll("g.frame");
  var widest = null, best = -1;
  frames.forEach(function (g) {
    var d = g.__data__;
    if (d && d.depth === 1 && d.value > best) { best = d.value; widest = g; }
  });
  var t0 = performance.now();
  widest.dispatchEvent(new MouseEvent("click", {bubbles: true}));
  var zoom = performance.now() - t0;
  t0 = performance.now();
  first.chart.search("fn_1");
  var search = performance.now() - t0;
  var diff = parseFloat(boxes[1].getAttribute("data-render-ms"));
  out.textContent = "render=" + first.getAttribute("data-render-ms") + " zoom=" + zoom.toFixed(1) +
    " search=" + search.toFixed(1) + " diff=" + diff.toFixed(1) + " frames=" + frames.length;
})();
</script>
"""


def synthetic_dump(functions: int, seed: int = 0) -> str:
    """A callgrind dump of ``functions`` functions whose calls form a layered graph with a few cycles."""
    rng = random.Random(seed)
    depth = 40
    # A few entry points, the rest spread over the layers below them.
    layers = [list(range(5))] + [list(range(5 + i, functions, depth - 1)) for i in range(depth - 1)]
    own = {f: rng.randint(5, 400) for f in range(functions)}
    callees: dict[int, list[int]] = {f: [] for f in range(functions)}
    for d in range(depth - 1):
        for f in layers[d]:
            callees[f] = rng.sample(layers[d + 1], k=min(len(layers[d + 1]), rng.randint(1, 4)))
            if rng.random() < 0.02 and d > 2:
                callees[f].append(rng.choice(layers[d - 2]))  # a cycle back up
    # A call's cost: its callee's inclusive cost shared among the callee's callers (a call back up, a
    # cycle, costs what its callee's own cost is, so the graph stays finite).
    callers: dict[int, int] = dict.fromkeys(range(functions), 0)
    for f in range(functions):
        for c in callees[f]:
            callers[c] += 1
    inclusive: dict[int, int] = {}
    cost: dict[tuple[int, int], int] = {}
    for d in range(depth - 1, -1, -1):
        for f in layers[d]:
            for c in callees[f]:
                cost[f, c] = max(1, inclusive.get(c, own[c]) // callers[c])
            inclusive[f] = own[f] + sum(cost[f, c] for c in callees[f])
    lines = ["# callgrind format", "version: 1", "creator: flame_graph_speed.py", "positions: line", "events: Ir", "",
             "ob=/usr/lib/libsynthetic.so", "fl=synthetic.c"]
    total = 0
    for f in range(functions):
        lines += [f"fn=fn_{f}", f"{f % 900 + 1} {own[f]}"]
        total += own[f]
        for c in callees[f]:
            lines += [f"cfn=fn_{c}", "calls=1 1", f"{f % 900 + 1} {cost[f, c]}"]
    text = "\n".join(lines)
    return text + f"\ntotals: {total}\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--functions", type=int, default=10_000)
    parser.add_argument("--keep", metavar="FILE", help="also write the report here")
    parser.add_argument("--min-share", type=float, default=MIN_SHARE,
                        help=f"the tree's smallest node, as a share of the total (default {MIN_SHARE}; 0: only "
                        f"the node cap, {MAX_NODES}, limits it)")
    args = parser.parse_args()

    text = synthetic_dump(args.functions)
    t0 = time.perf_counter()
    profile = parse_text(text)
    parse_ms = (time.perf_counter() - t0) * 1000
    rules = load_rules()
    t0 = time.perf_counter()
    tree = call_tree(profile, min_share=args.min_share)
    flame = to_json(tree, lambda f: rules.classify(f)[0], NUMBER)
    tree_ms = (time.perf_counter() - t0) * 1000
    calls = sum(len(v) for v in profile.calls.values())
    print(f"1. profile: {len(profile.functions):,} functions, {calls:,} calls; parse {parse_ms:.0f} ms, "
          f"call tree {tree_ms:.0f} ms, {tree.size():,} nodes kept")

    # A second run: the same profile with one function's own cost doubled, for the differential.
    changed = parse_text(re.sub(r"^(fn=fn_5\n\d+) (\d+)$", lambda m: f"{m.group(1)} {int(m.group(2)) * 2}",
                                text, flags=re.M))
    flame2 = to_json(call_tree(changed, min_share=args.min_share), lambda f: rules.classify(f)[0], NUMBER)
    task = Task(suite="speed", name="synthetic", kind="timer", params={}, mode="instructions")

    def run(start: str, data: dict, total: int) -> RunRecord:
        result = TaskResult(task=task, status="ok", unit="instructions", samples=[total / NUMBER],
                            number_per_run=NUMBER, extra={"flame": data})
        return RunRecord({"start_time": start}, [result])

    page = build_report([("a.json", run("2026-01-01T00:00:00", flame, profile.total)),
                         ("b.json", run("2026-01-02T00:00:00", flame2, changed.total))])
    fetches = re.findall(r"""(src|href)\s*=\s*["']?(https?:)?//""", page)
    print(f"   report: one file, {len(page) / 1e6:.2f} MB, {len(fetches)} external references")
    if args.keep:
        Path(args.keep).write_text(page)

    chromium = next(
        (shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None
    )
    ok = True
    if chromium is None:
        print("2. Chromium not found: no browser timings (bash scripts/setup.sh --test installs it)")
    else:
        with tempfile.TemporaryDirectory() as tmp:
            probe = Path(tmp) / "report.html"
            probe.write_text(page.replace("</body>", PROBE + "</body>"))
            t0 = time.perf_counter()
            dom = subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                                  f"--user-data-dir={tmp}/profile", "--window-size=1200,900", "--dump-dom",
                                  probe.as_uri()], capture_output=True, text=True, timeout=300)
            wall = time.perf_counter() - t0
        found = re.search(r'<pre id="probe">([^<]*)</pre>', dom.stdout)
        if found is None:
            print("2. the probe did not run:", dom.stderr[-1500:])
            return 1
        figures = dict(item.split("=") for item in found.group(1).split())
        print(f"2. Chromium (whole headless run {wall:.1f} s), page clock, {figures['frames']} frames drawn:")
        for key, what in (("render", "draw the flame graph"), ("zoom", "zoom (click)"), ("search", "search"),
                          ("diff", "draw the differential")):
            ms = float(figures[key])
            ok &= ms < TARGET_MS
            print(f"   {what:<24} {ms:8.1f} ms   target < {TARGET_MS:.0f} ms   {'ok' if ms < TARGET_MS else 'MISSED'}")

    same = differential(flame, flame)
    changes = []
    stack = [same["tree"]]
    while stack:
        item = stack.pop()
        changes.append(item[3])
        stack.extend(item[2])
    exact = flame["tree"][1] == profile.total
    print(f"3. totals: root {flame['tree'][1]:,} vs the dump's {profile.total:,}: {'equal' if exact else 'DIFFERENT'}; "
          f"the differential of the run against itself: {sum(1 for c in changes if c):,} of {len(changes):,} "
          f"nodes changed (target 0)")
    ok &= exact and not any(changes)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
