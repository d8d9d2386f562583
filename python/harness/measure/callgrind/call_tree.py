"""A count's call tree, expanded from callgrind's call graph: what a flame graph draws.

Callgrind records a call *graph*: each function's own cost and, per caller
and callee, the inclusive cost of the calls between them. It does not record
which path a call came by, so the tree is expanded from the roots with the
usual proportional rule: a function reached along a path carrying ``v`` of
its inclusive cost ``I`` hands each callee ``v * cost(call) / I``. A callee
already on the path (recursion, a cycle such as the interpreter calling
itself through a C function) is not expanded again; its cost stays in the
caller's own part. Nodes under ``min_share`` of the total, deeper than
``max_depth`` or beyond ``max_nodes`` (the largest nodes are expanded
first) are cut the same way, so a 10,000-function profile stays a few
thousand nodes.

Values are integers and each node's value is at least its children's sum;
whatever the children do not account for is the node's own ("self") cost.
The root's value is the count exactly (the dump's total, less the
baseline's): a flame graph adds up to the number in the table.

The compact form kept in a result (``extra["flame"]``, ``to_json``) is
``{"names": [...], "layers": [...], "tree": [name index, value, [children]]}``
with standardised names (``stats.standardize_symbol``) so runs on different
machines line up in a differential graph.
"""

from __future__ import annotations

import dataclasses
import heapq
from collections import defaultdict
from collections.abc import Callable, Mapping
from typing import Any

from harness.measure.callgrind.stats import standardize_symbol
from harness.measure.counters.cache import figures
from harness.measure.counters.profile import Profile

ROOT = "all"
CYCLES = "estimated_cycles"  # the other metric a tree can be drawn by (a cache simulation's dump)
MIN_SHARE = 0.0005  # nodes under 0.05% of the total are folded into their caller's own cost
MAX_DEPTH = 160
MAX_NODES = 4000


@dataclasses.dataclass
class Node:
    name: str
    value: int
    children: list[Node] = dataclasses.field(default_factory=list)

    @property
    def self_value(self) -> int:
        return self.value - sum(c.value for c in self.children)

    def walk(self) -> Any:
        stack = [self]
        while stack:
            node = stack.pop()
            yield node
            stack.extend(node.children)

    def size(self) -> int:
        return sum(1 for _ in self.walk())


def call_tree(profile: Profile, baseline: Profile | None = None, *, metric: str = "Ir", min_share: float = MIN_SHARE,
              max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> Node:
    """The tree of ``profile`` (less ``baseline``'s, path by path) by ``metric``: "Ir" (instructions) or
    "estimated_cycles" (a cache simulation's dump); its root's value is ``total(profile) - total(baseline)``
    exactly."""
    total = graph_total(profile, metric) - (graph_total(baseline, metric) if baseline is not None else 0)
    limits = {"min_share": min_share, "max_depth": max_depth, "max_nodes": max_nodes}
    tree = _expand(profile, metric, **limits)
    if baseline is not None:
        tree = _subtract(tree, _expand(baseline, metric, **limits))
    tree.value = total  # equal already, unless the dump's total is its summary: line (no totals:)
    if total <= 0:
        return Node(ROOT, total)
    _settle(tree)
    return tree


def graph_total(profile: Profile, metric: str = "Ir") -> int:
    """A profile's total by ``metric``: the dump's instructions, or its estimated cycles."""
    if metric == "Ir":
        return profile.total
    if metric == CYCLES:
        return int(figures(profile.totals or {"Ir": profile.total})[CYCLES])
    raise ValueError(f"unknown call tree metric {metric!r}: Ir or {CYCLES}")


def _expand(profile: Profile, metric: str, *, min_share: float, max_depth: int, max_nodes: int) -> Node:
    if metric == CYCLES:
        own, calls = profile.cycles_functions, profile.cycles_calls
    else:
        own, calls = profile.functions or profile.exclusive, profile.calls
    total = graph_total(profile, metric)
    called: defaultdict[str, int] = defaultdict(int)
    for out in calls.values():
        for callee, cost in out.items():
            called[callee] += cost
    inclusive = {f: own.get(f, 0) + sum(calls.get(f, {}).values()) for f in set(own) | set(calls)}
    root = Node(ROOT, total)
    # Roots: what of a function's cost no call into it explains (the region's outermost frames).
    # Their sum is the total: every call's cost is counted once as made and once as received.
    starts = {f: inclusive.get(f, 0) - called.get(f, 0) for f in set(inclusive) | set(called)}
    starts = {f: v for f, v in starts.items() if v > 0}
    spread = sum(starts.values())
    scale = min(1.0, total / spread) if spread else 0.0
    floor = max(1, int(total * min_share))
    nodes = 1
    # Largest first: the node budget goes to what a reader sees.
    heap: list[tuple[int, int, Node, str, frozenset[str], int]] = []
    order = 0
    for f, v in sorted(starts.items(), key=lambda kv: (-kv[1], kv[0])):
        value = int(v * scale)
        if value >= floor and nodes < max_nodes:
            child = Node(f, value)
            root.children.append(child)
            nodes += 1
            heapq.heappush(heap, (-value, order, child, f, frozenset((f,)), 1))
            order += 1
    while heap:
        _, _, node, f, path, depth = heapq.heappop(heap)
        if depth >= max_depth or inclusive.get(f, 0) <= 0:
            continue
        per = node.value / inclusive[f]
        for callee, cost in sorted(calls.get(f, {}).items(), key=lambda kv: (-kv[1], kv[0])):
            value = int(cost * per)
            if value < floor or nodes >= max_nodes:
                break
            if callee in path:
                continue
            child = Node(callee, value)
            node.children.append(child)
            nodes += 1
            heapq.heappush(heap, (-value, order, child, callee, path | {callee}, depth + 1))
            order += 1
    return root


def _subtract(tree: Node, base: Node) -> Node:
    """``tree`` less ``base``, path by path; a path only ``base`` has is taken from its caller's own cost."""
    node = Node(tree.name, tree.value - base.value)
    by_name = {c.name: c for c in base.children}
    for child in tree.children:
        other = by_name.pop(child.name, None)
        node.children.append(_subtract(child, other) if other is not None else _copy(child))
    node.children = [c for c in node.children if c.value > 0]
    return node


def _copy(node: Node) -> Node:
    return Node(node.name, node.value, [_copy(c) for c in node.children])


def _settle(node: Node) -> None:
    """Make every node's own part >= 0, its value kept: what its children claim beyond it is taken
    from them, largest first (their own parts, then their children's)."""
    excess = -node.self_value
    if excess > 0:
        for child in sorted(node.children, key=lambda c: -c.value):
            excess -= _take(child, excess)
            if excess <= 0:
                break
        node.children = [c for c in node.children if c.value > 0]
    for child in node.children:
        _settle(child)


def _take(node: Node, amount: int) -> int:
    """Take up to ``amount`` from ``node`` (its own part first); how much was taken."""
    taken = min(amount, max(0, node.self_value), node.value)
    node.value -= taken
    for child in sorted(node.children, key=lambda c: -c.value):
        if taken >= amount:
            break
        got = _take(child, amount - taken)
        node.value -= got
        taken += got
    node.children = [c for c in node.children if c.value > 0]
    return taken


# -- the compact form kept in a result ------------------------------------------------------------


def to_json(tree: Node, layer_of: Callable[[str], str] | None = None, number: int = 1,
            metric: str = "Ir") -> dict[str, Any]:
    """``tree`` with standardised names, siblings of one name merged, as nested lists with a name table."""
    names: list[str] = []
    layers: list[str] = []
    index: dict[str, int] = {}

    def name_index(label: str, shown: str) -> int:
        if shown not in index:
            index[shown] = len(names)
            names.append(shown)
            layers.append(layer_of(label) if layer_of is not None and label != ROOT else "")
        return index[shown]

    def pack(node: Node) -> list[Any]:
        merged: dict[str, list[Any]] = {}
        for child in node.children:
            packed = pack(child)
            key = names[packed[0]]
            if key in merged:
                merged[key] = _merge(merged[key], packed, names)
            else:
                merged[key] = packed
        shown = node.name if node.name == ROOT else standardize_symbol(node.name)
        out: list[Any] = [name_index(node.name, shown), node.value]
        if merged:
            out.append(sorted(merged.values(), key=lambda c: -c[1]))
        return out

    tree_json = pack(tree)
    return {"metric": metric, "number": number, "names": names, "layers": layers, "tree": tree_json}


def _merge(a: list[Any], b: list[Any], names: list[str]) -> list[Any]:
    children: dict[str, list[Any]] = {names[c[0]]: c for c in (a[2] if len(a) > 2 else [])}
    for c in b[2] if len(b) > 2 else []:
        key = names[c[0]]
        children[key] = _merge(children[key], c, names) if key in children else c
    out = [a[0], a[1] + b[1]]
    if children:
        out.append(sorted(children.values(), key=lambda c: -c[1]))
    return out


def from_json(data: Mapping[str, Any]) -> Node:
    names = data["names"]

    def unpack(item: list[Any]) -> Node:
        return Node(names[item[0]], item[1], [unpack(c) for c in (item[2] if len(item) > 2 else [])])

    return unpack(data["tree"])


def layers_of(data: Mapping[str, Any]) -> dict[str, str]:
    return {name: layer for name, layer in zip(data["names"], data.get("layers") or [], strict=False)}
