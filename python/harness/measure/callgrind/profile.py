"""Reads callgrind output files: per-function instruction counts, exclusive and inclusive.

Why our own parser rather than ``callgrind_annotate``: annotate is a Perl
process per file and per mode (torch runs it twice per dump); this reads a
dump in one pass, in-process, and gives both modes. Function names follow
annotate's spelling (``file:function [object]``) so they line up with
torch's ``FunctionCounts``:

- a function is keyed by the file its cost lines are attributed to, so code
  inlined from another file (``fi=``/``fe=``) is its own entry, without the
  object suffix (exactly as annotate prints it);
- inclusive cost of a function that is called somewhere is the sum of the
  costs of the calls into it; of one never seen called (the region's
  outermost frames), its own cost plus its calls' costs.

A dump's total is its ``totals:`` line, the sum of its functions' own
counts, so a total, its per-function breakdown (symbols, layers,
``CallgrindStats.counts()``, torch's ``counts()``) are one number. The
``summary:`` line callgrind writes beside it disagrees where torch's C++
code runs: by 24 instructions for a region of pure Python, by 0.23-0.27%
for ``x.dim()``, ``x * w`` and ``torch.add(x, 1)`` (``x * w``, 100 runs:
summary 956,216, totals 958,735), always above it; bench reported the
summary and ``collect_callgrind`` the sum, so one count of one statement
read as two. A dump without ``totals:`` falls back to ``summary:``.

The format is documented in valgrind's "Callgrind Format Specification".
"""

from __future__ import annotations

import re
from collections import defaultdict
from pathlib import Path

from harness.errors import HarnessError
from harness.measure.counters.cache import cycle_weights, is_cache_sim
from harness.measure.counters.profile import Profile

_COMPRESSED = re.compile(r"\((\d+)\)(?: (.*))?$")
# Which name table each key reads and writes (the format shares one table
# between files and inlined/called files, and one between objects).
_TABLE = {
    "fl": "fl", "fi": "fl", "fe": "fl", "cfi": "fl", "cfl": "fl", "jfi": "fl",
    "fn": "fn", "cfn": "fn", "jfn": "fn",
    "ob": "ob", "cob": "ob",
}  # fmt: skip


class CallgrindFormatError(HarnessError):
    """A file is not callgrind output we can read."""

    exit_code = 1


def total_from_text(text: str) -> int:
    """Just the total instruction count of a dump (cheap: no per-function work)."""
    return totals_from_text(text)["Ir"]


def totals_from_text(text: str) -> dict[str, int]:
    """The dump's total of each event it recorded, {event: total} in its order (cheap: no per-function work)."""
    events = re.search(r"^events:[ \t]*(.*)$", text, re.M)
    if events is None:
        raise CallgrindFormatError("callgrind output has no 'events:' line")
    names = events.group(1).split()
    _ir_index(names)
    for key in ("totals", "summary"):
        # "totals:" is the file's last line: found from the end, not by a scan of the whole dump.
        at = text.rfind(f"\n{key}:")
        if at >= 0:
            end = text.find("\n", at + 1)
            return _event_values(names, text[at + len(key) + 2 : end if end >= 0 else len(text)].split())
    return parse_text(text).totals


def _event_values(names: list[str], values: list[str]) -> dict[str, int]:
    """{event: value} of a totals line; events it leaves out (trailing zeros) are 0."""
    return {name: int(values[i]) if i < len(values) else 0 for i, name in enumerate(names)}


def _ir_index(events: list[str]) -> int:
    try:
        return events.index("Ir")
    except ValueError:
        raise CallgrindFormatError(
            f"callgrind output records events {events} but not Ir (instructions); "
            "it was not written by --tool=callgrind with default event collection"
        ) from None


def parse_file(path: str | Path) -> Profile:
    try:
        text = Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise CallgrindFormatError(f"cannot read callgrind output {path}: {exc.strerror or exc}") from None
    try:
        return parse_text(text)
    except CallgrindFormatError as exc:
        raise CallgrindFormatError(f"{path}: {exc}") from None


def parse_text(text: str) -> Profile:
    lines = text.splitlines()
    npos = 1
    ir = 0
    names: list[str] = ["Ir"]
    summary: dict[str, int] | None = None
    totals: dict[str, int] | None = None
    trigger = ""
    body_start = len(lines)
    for i, line in enumerate(lines):
        if line.startswith("positions:"):
            npos = len(line.split()[1:]) or 1
        elif line.startswith("events:"):
            names = line.split()[1:]
            ir = _ir_index(names)
            body_start = i + 1
            break
        elif line.startswith("desc: Trigger:"):
            trigger = line[len("desc: Trigger:") :].strip()
    else:
        raise CallgrindFormatError("no 'events:' line: not callgrind output")
    cost_at = npos + ir
    nev = len(names)
    # Every event's cost per function, only for a dump with more than instructions (a cache simulation).
    many = nev > 1
    self_vec: dict[str, list[int]] = {}
    incl_vec: dict[str, list[int]] = {}  # own costs + costs of calls made
    called_vec: dict[str, list[int]] = {}  # costs of calls into it

    def add(table: dict[str, list[int]], name: str, vec: list[int]) -> None:
        into = table.get(name)
        if into is None:
            table[name] = list(vec)
        else:
            for i, v in enumerate(vec):
                into[i] += v

    tables: dict[str, dict[str, str]] = {"fl": {}, "fn": {}, "ob": {}}

    def name_of(key: str, value: str) -> str:
        m = _COMPRESSED.match(value)
        if m is None:
            return value
        table = tables[_TABLE[key]]
        if m.group(2) is not None:
            table[m.group(1)] = m.group(2)
            return m.group(2)
        try:
            return table[m.group(1)]
        except KeyError:
            raise CallgrindFormatError(f"name ({m.group(1)}) used before it was defined ({key}=)") from None

    self_cost: defaultdict[str, int] = defaultdict(int)
    incl_own: defaultdict[str, int] = defaultdict(int)  # own cost + costs of calls made
    called_cost: defaultdict[str, int] = defaultdict(int)  # costs of calls into it
    object_of: dict[str, str] = {}
    # The call graph per function as a whole, not per inlined file (``Profile.functions``/``calls``),
    # keyed (object, function) and named at the end by the file of the function's own fn= line.
    fn_own: defaultdict[tuple[str, str], int] = defaultdict(int)
    fn_calls: defaultdict[tuple[str, str], defaultdict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
    home: dict[tuple[str, str], str] = {}  # the fl= file of a function's own fn= line
    named: dict[tuple[str, str], str] = {}  # the file a caller's cfi= gave it (a function never entered)
    fn_key = callee_key = ("", "")
    # A cache simulation's call graph in estimated cycles too: the formula is linear in the events,
    # so a line's cycles are its events weighed (``counters.cache.cycle_weights``).
    weights = cycle_weights(names) if many and is_cache_sim(names) else None
    cyc_own: defaultdict[tuple[str, str], int] = defaultdict(int)
    cyc_calls: defaultdict[tuple[str, str], defaultdict[tuple[str, str], int]] = defaultdict(lambda: defaultdict(int))
    fl_file = call_obj = ""
    cur_obj = cur_file = cur_fn = cfile = ""
    cur_name = ":"
    callee: str | None = None
    in_call = False

    for line in lines[body_start:]:
        if not line:
            continue
        c = line[0]
        if c.isdigit() or c in "+-*":
            parts = line.split()
            cost = int(parts[cost_at]) if len(parts) > cost_at else 0
            vec: list[int] = []  # every event's cost (a dump of more than Ir), in ``names`` order
            if many:
                vec = [int(v) for v in parts[npos : npos + nev]]
                vec.extend([0] * (nev - len(vec)))  # trailing zero costs may be left out
                add(incl_vec, cur_name, vec)
            if in_call:
                in_call = False
                assert callee is not None
                called_cost[callee] += cost
                incl_own[cur_name] += cost
                fn_calls[fn_key][callee_key] += cost
                if weights is not None:
                    cyc_calls[fn_key][callee_key] += sum(v * w for v, w in zip(vec, weights, strict=True))
                if many:
                    add(called_vec, callee, vec)
            else:
                self_cost[cur_name] += cost
                incl_own[cur_name] += cost
                fn_own[fn_key] += cost
                if weights is not None:
                    cyc_own[fn_key] += sum(v * w for v, w in zip(vec, weights, strict=True))
                if many:
                    add(self_vec, cur_name, vec)
            continue
        if c == "#":
            continue
        key, sep, value = line.partition("=")
        if not sep:
            if line.startswith("summary:"):
                summary = _event_values(names, line.split(":", 1)[1].split())
            elif line.startswith("totals:"):
                totals = _event_values(names, line.split(":", 1)[1].split())
            continue
        if key == "fn":
            cur_fn = name_of(key, value)
            cur_name = f"{cur_file}:{cur_fn}"
            object_of[cur_name] = cur_obj
            self_cost.setdefault(cur_name, 0)
            fn_key = (cur_obj, cur_fn)
            home.setdefault(fn_key, fl_file)
        elif key == "fl":
            cur_file = fl_file = name_of(key, value)
        elif key in ("fi", "fe"):
            cur_file = name_of(key, value)
            cur_name = f"{cur_file}:{cur_fn}"
        elif key == "ob":
            cur_obj = name_of(key, value)
        elif key in ("cfi", "cfl"):
            cfile = name_of(key, value)
        elif key == "cfn":
            called = name_of(key, value)
            callee = f"{cfile or cur_file}:{called}"
            callee_key = (call_obj or cur_obj, called)
            named.setdefault(callee_key, cfile or fl_file)
            cfile = call_obj = ""
        elif key == "cob":
            call_obj = name_of(key, value)
        elif key == "calls":
            in_call = True
        elif key in _TABLE:  # cob, jfi, jfn: only their name definitions matter
            name_of(key, value)
        # jump=/jcnd= carry no instruction cost

    def label(name: str) -> str:
        obj = object_of.get(name)
        return f"{name} [{obj}]" if obj else name

    exclusive = {label(n): c for n, c in self_cost.items() if c}
    inclusive_raw = dict(incl_own)
    inclusive_raw.update(called_cost)
    inclusive = {label(n): c for n, c in inclusive_raw.items() if c}
    found = totals if totals is not None else summary
    if found is None:  # neither line: the sum of the functions' own costs
        found = {name: sum(vec[i] for vec in self_vec.values()) for i, name in enumerate(names)}
        found["Ir"] = sum(exclusive.values())
    exclusive_events: dict[str, dict[str, int]] = {}
    inclusive_events: dict[str, dict[str, int]] = {}
    if many:
        incl_all = dict(incl_vec)
        incl_all.update(called_vec)
        for i, name in enumerate(names):
            if name != "Ir":
                exclusive_events[name] = {label(n): v[i] for n, v in self_vec.items() if v[i]}
                inclusive_events[name] = {label(n): v[i] for n, v in incl_all.items() if v[i]}
    def fn_label(key: tuple[str, str]) -> str:
        name = f"{home.get(key, named.get(key, ''))}:{key[1]}"
        return f"{name} [{key[0]}]" if key[0] else name

    functions = {fn_label(k): c for k, c in fn_own.items() if c}
    calls = {fn_label(k): {fn_label(c): n for c, n in out.items() if n} for k, out in fn_calls.items()}
    return Profile(total=found["Ir"], exclusive=exclusive, inclusive=inclusive, trigger=trigger, events=names,
                   totals=found, exclusive_events=exclusive_events, inclusive_events=inclusive_events,
                   functions=functions, calls={k: out for k, out in calls.items() if out},
                   cycles_functions={fn_label(k): c for k, c in cyc_own.items() if c},
                   cycles_calls={fn_label(k): {fn_label(c): n for c, n in out.items() if n}
                                 for k, out in cyc_calls.items() if any(out.values())})
