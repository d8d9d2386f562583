"""Instructions per PyTorch layer: callgrind's per-function counts classified by ordered rules.

The rules are data (``layers.toml`` beside this module, or a user's file of
the same form): each names a layer and a regular expression on the
function's name, on its object file (callgrind's ``ob=``), or on both. The
first rule that matches claims the function; what no rule claims is
"other". Because every function lands in exactly one layer, the layers of a
profile add up to its total exactly.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import tomllib
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path

from harness.errors import UsageError

# (name, title) in the order tables and plots show them; "other" last.
LAYERS: tuple[tuple[str, str], ...] = (
    ("interpreter", "interpreter"),
    ("bindings", "Python bindings"),
    ("gil", "GIL"),
    ("dispatcher", "dispatcher"),
    ("autograd", "autograd"),
    ("aten", "ATen glue"),
    ("kernel", "kernel"),
    ("allocator", "allocator"),
    ("tensorimpl", "TensorImpl/refcount"),
    ("tls", "thread-local state"),
    ("profiler", "profiler hooks"),
    ("libc", "libc and loader"),
    ("other", "other"),
)
LAYER_NAMES = tuple(name for name, _ in LAYERS)
TITLES = dict(LAYERS)
# The layers a Python caller adds and a C++ caller does not have.
PYTHON_LAYERS = ("interpreter", "bindings", "gil")
SHIPPED_RULES = Path(__file__).with_name("layers.toml")
# A function the profile's total holds but no function entry does (costs
# callgrind attributed before any fn= line); kept so the layers still add up.
UNATTRIBUTED = "(unattributed)"
_OBJECT = re.compile(r"^(.*) \[([^\[\]]+)\]$")


class LayerRulesError(UsageError):
    """A layer rules file that cannot be used: which file, which line, what to fix."""


@dataclasses.dataclass(frozen=True)
class Rule:
    layer: str
    symbol: re.Pattern[str] | None
    object: re.Pattern[str] | None
    line: int  # the rule's [[rule]] line in its file, for --explain-layers

    def matches(self, symbol: str, obj: str) -> bool:
        if self.symbol is not None and not self.symbol.search(symbol):
            return False
        return self.object is None or bool(self.object.search(obj))


@dataclasses.dataclass(frozen=True)
class Rules:
    path: str
    rules: tuple[Rule, ...]

    def classify(self, function: str) -> tuple[str, int]:
        """(layer, line of the claiming rule; 0 for "other") of a callgrind function label."""
        return _classify(self, function)


def split_label(function: str) -> tuple[str, str]:
    """("file:function", object file) of a label ``file:function [object]``; object "" when absent
    (code inlined from another file carries no object, as in callgrind_annotate)."""
    m = _OBJECT.match(function)
    return (m.group(1), m.group(2)) if m else (function, "")


@functools.lru_cache(maxsize=8192)
def _classify(rules: Rules, function: str) -> tuple[str, int]:
    symbol, obj = split_label(function)
    for rule in rules.rules:
        if rule.matches(symbol, obj):
            return rule.layer, rule.line
    return "other", 0


def load_rules(path: str | Path | None = None) -> Rules:
    """The rules of ``path`` (default: the shipped ``layers.toml``); LayerRulesError naming the line."""
    return _load(str(Path(path).resolve()) if path else str(SHIPPED_RULES))


@functools.lru_cache(maxsize=16)
def _load(path: str) -> Rules:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise LayerRulesError(f"cannot read layer rules {path}: {exc.strerror or exc}; "
                              "give an existing TOML file to --layers-rules") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise LayerRulesError(f"{path}: not valid TOML: {exc}") from None
    unknown = sorted(set(data) - {"rule"})
    if unknown:
        raise LayerRulesError(f"{path}:1: unknown top-level key(s) {', '.join(unknown)}; "
                              "a rules file holds only [[rule]] tables")
    entries = data.get("rule")
    if not isinstance(entries, list) or not entries:
        raise LayerRulesError(f"{path}:1: no [[rule]] tables; each rule names a layer and a symbol or object regex")
    starts = _rule_lines(text)
    rules = []
    for i, entry in enumerate(entries):
        line = starts[i] if i < len(starts) else 1
        rules.append(_rule(path, text, line, entry))
    return Rules(path, tuple(rules))


def _rule_lines(text: str) -> list[int]:
    return [n for n, line in enumerate(text.splitlines(), 1) if line.strip().startswith("[[rule]]")]


def _key_line(text: str, start: int, key: str) -> int:
    """The line of ``key = ...`` in the rule opening at line ``start`` (else ``start``)."""
    lines = text.splitlines()
    for n in range(start, len(lines)):
        stripped = lines[n].strip()
        if stripped.startswith("["):
            break
        if re.match(rf"{re.escape(key)}\s*=", stripped):
            return n + 1
    return start


def _rule(path: str, text: str, line: int, entry: object) -> Rule:
    where = f"{path}:{line}"
    if not isinstance(entry, dict):
        raise LayerRulesError(f"{where}: a rule must be a [[rule]] table")
    extra = sorted(set(entry) - {"layer", "symbol", "object"})
    if extra:
        raise LayerRulesError(f"{where}: unknown key(s) {', '.join(extra)}; a rule has layer, symbol and object")
    layer = entry.get("layer")
    if layer not in LAYER_NAMES:
        raise LayerRulesError(f"{path}:{_key_line(text, line, 'layer')}: unknown layer {layer!r}; "
                              f"use one of {', '.join(LAYER_NAMES)}")
    if "symbol" not in entry and "object" not in entry:
        raise LayerRulesError(f"{where}: the rule for {layer!r} has neither 'symbol' nor 'object'")
    patterns: dict[str, re.Pattern[str] | None] = {}
    for key in ("symbol", "object"):
        value = entry.get(key)
        if value is None:
            patterns[key] = None
            continue
        at = f"{path}:{_key_line(text, line, key)}"
        if not isinstance(value, str):
            raise LayerRulesError(f"{at}: {key} must be a string (a regular expression)")
        try:
            patterns[key] = re.compile(value)
        except re.error as exc:
            raise LayerRulesError(f"{at}: {key} is not a valid regular expression: {exc}") from None
    return Rule(str(layer), patterns["symbol"], patterns["object"], line)


@dataclasses.dataclass(frozen=True)
class Layering:
    """Instructions of ``number`` runs per layer, every layer present; ``sum(counts) == total``."""

    counts: dict[str, int]
    number: int
    symbols: dict[str, list[tuple[str, int, int]]]  # layer -> (function, count, rule line), largest first

    @property
    def total(self) -> int:
        return sum(self.counts.values())

    def per_run(self) -> dict[str, float]:
        return {layer: c / self.number for layer, c in self.counts.items()}

    def top_symbols(self, n: int = 5) -> dict[str, list[list[object]]]:
        """{layer: [[function, instructions per run, rule line], ...]}: the JSON kept in a result."""
        return {
            layer: [[fn, round(c / self.number, 2), line] for fn, c, line in items[:n]]
            for layer, items in self.symbols.items() if items
        }


def layer_counts(
    exclusive: Mapping[str, int], baseline: Mapping[str, int] | None = None, *, number: int = 1,
    rules: Rules | None = None, total: int | None = None,
) -> Layering:
    """Classify ``exclusive - baseline`` (per-function counts of ``number`` runs).

    ``total``: the count the layers must add up to (a profile's total minus
    the baseline's); any difference from the functions' sum (a dump read
    from its ``summary:`` line, having no ``totals:``) is put in "other" as
    ``UNATTRIBUTED`` rather than lost.
    """
    rules = rules or load_rules()
    delta: defaultdict[str, int] = defaultdict(int)
    for fn, c in exclusive.items():
        delta[fn] += c
    for fn, c in (baseline or {}).items():
        delta[fn] -= c
    counts = dict.fromkeys(LAYER_NAMES, 0)
    symbols: dict[str, list[tuple[str, int, int]]] = {name: [] for name in LAYER_NAMES}
    for fn, c in delta.items():
        if not c:
            continue
        layer, line = rules.classify(fn)
        counts[layer] += c
        symbols[layer].append((fn, c, line))
    if total is not None and total != sum(counts.values()):
        rest = total - sum(counts.values())
        counts["other"] += rest
        symbols["other"].append((UNATTRIBUTED, rest, 0))
    for items in symbols.values():
        items.sort(key=lambda item: (-abs(item[1]), item[0]))
    return Layering(counts, number, symbols)


def ordered(layers: Mapping[str, float]) -> list[tuple[str, float]]:
    """A record's layers in display order (unknown names, from a newer harness, at the end)."""
    known = [(name, layers[name]) for name in LAYER_NAMES if name in layers]
    return known + [(name, v) for name, v in layers.items() if name not in TITLES]


def title(layer: str) -> str:
    return TITLES.get(layer, layer)
