"""What a count keeps of its call tree: ``extra["flame"]`` for the report's flame graphs, and the files
``bench --keep-profiles DIR`` writes for other viewers.

Both are asked for by task parameters the run's own process reads when it
finishes a count (``details.finish``), never the counting child: a request's
bytes move a count (``run.instructions.counted_request`` drops them), so a
count with a flame graph is the same count as one without.

- ``flame``: keep the call tree of the first repeat (baseline subtracted,
  ``number`` runs, each function's PyTorch layer) in ``extra["flame"]``; when
  the count simulated the caches (``--cache-sim``), the same tree by estimated
  cycles in ``extra["flame_cycles"]``.
- ``keep_profile``: a directory; write the first repeat's callgrind dump
  (``NAME.callgrind.out``, for KCachegrind/QCachegrind or
  ``callgrind_annotate``) and its call tree in speedscope's file format
  (``NAME.speedscope.json``, https://www.speedscope.app), and name both in
  ``extra["profiles"]``.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from harness._version import __version__
from harness.errors import UsageError
from harness.files.atomic import atomic_write_text
from harness.files.oserrors import path_error
from harness.measure.callgrind.call_tree import CYCLES, ROOT, Node, call_tree, to_json
from harness.measure.callgrind.layers import load_rules
from harness.measure.callgrind.stats import standardize_symbol
from harness.measure.counters.profile import Profile
from harness.model.task import Task

FLAME = "flame"  # task parameter: keep the call tree in extra["flame"]
FLAME_CYCLES = "flame_cycles"  # the extra field of the tree by estimated cycles, when the caches were simulated
KEEP_PROFILE = "keep_profile"  # task parameter: the directory the profile files go to
PARAMS = (FLAME, KEEP_PROFILE)  # read where a count is finished; a counting child never sees them
SPEEDSCOPE_SCHEMA = "https://www.speedscope.app/file-format-schema.json"
# The exported tree keeps far more than the report's: a viewer of the file zooms into it.
EXPORT_MIN_SHARE = 0.00001
EXPORT_MAX_NODES = 50_000


def wants_tree(params: Mapping[str, Any]) -> bool:
    return bool(params.get(FLAME) or params.get(KEEP_PROFILE))


def flame_details(task: Task, stmt: Profile, baseline: Profile | None, number: int, text: str | None) -> dict[str, Any]:
    """The extra fields ``task``'s parameters ask for, from its first repeat's profile (and dump ``text``)."""
    params = task.params
    extra: dict[str, Any] = {}
    if params.get(FLAME):
        rules = load_rules(params.get("layers") or None)
        extra["flame"] = to_json(call_tree(stmt, baseline), lambda f: rules.classify(f)[0], number)
        if stmt.cycles_calls:  # a cache simulation: the same tree by estimated cycles
            tree = call_tree(stmt, baseline, metric=CYCLES)
            extra[FLAME_CYCLES] = to_json(tree, lambda f: rules.classify(f)[0], number, metric=CYCLES)
    directory = params.get(KEEP_PROFILE)
    if directory:
        extra["profiles"] = keep_profile(Path(directory), task, stmt, baseline, number, text)
    return extra


def file_stem(task: Task) -> str:
    """A file name for ``task``: suite, name and side, with anything a shell would trip on made ``_``."""
    name = f"{task.suite}.{task.name}" + (f"@{task.side}" if task.side else "")
    return re.sub(r"[^A-Za-z0-9._=,+@-]", "_", name)


def keep_profile(directory: Path, task: Task, stmt: Profile, baseline: Profile | None, number: int,
                 text: str | None) -> list[str]:
    stem = file_stem(task)
    tree = call_tree(stmt, baseline, min_share=EXPORT_MIN_SHARE, max_nodes=EXPORT_MAX_NODES)
    files = {f"{stem}.speedscope.json": json.dumps(speedscope(tree, task.full_name, number))}
    if text is not None:
        files = {f"{stem}.callgrind.out": text, **files}
    return write_profiles(directory, files)


def write_profiles(directory: Path, files: Mapping[str, str]) -> list[str]:
    """Each {file name: content} into ``directory``, in order; the paths written. A file that cannot be
    written is a PathError naming it and ``--keep-profiles`` (the benchmark fails with it)."""
    written = []
    for name, content in files.items():
        path = directory / name
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write_text(path, content)
        except OSError as exc:
            raise path_error(
                exc, path, "write a kept profile", "give --keep-profiles a directory you can write"
            ) from None
        written.append(str(path))
    return written


def speedscope(tree: Node, name: str, number: int) -> dict[str, Any]:
    """``tree`` as one sampled profile of speedscope's format: a sample per node with an own cost, weighed by it.

    The weights are instructions of ``number`` runs (speedscope's unit "none"), baseline
    subtracted: they add up to the count in the table times ``number``.
    """
    frames: list[dict[str, str]] = []
    index: dict[str, int] = {}
    samples: list[list[int]] = []
    weights: list[int] = []

    def frame(label: str) -> int:
        shown = standardize_symbol(label)
        if shown not in index:
            index[shown] = len(frames)
            function, _, file = _split(shown)
            frames.append({"name": function, "file": file} if file else {"name": function})
        return index[shown]

    stack: list[tuple[Node, list[int]]] = [(tree, [])]
    while stack:
        node, path = stack.pop()
        here = path if node.name == ROOT else [*path, frame(node.name)]
        own = node.self_value
        if own > 0:
            samples.append(here or [frame("(unattributed)")])
            weights.append(own)
        stack.extend((child, here) for child in reversed(node.children))
    return {
        "$schema": SPEEDSCOPE_SCHEMA,
        "shared": {"frames": frames},
        "profiles": [{
            "type": "sampled", "name": f"{name} (instructions of {number} runs, baseline subtracted)",
            "unit": "none", "startValue": 0, "endValue": max(tree.value, 0), "samples": samples, "weights": weights,
        }],
        "name": name,
        "activeProfileIndex": 0,
        "exporter": f"harness {__version__}",
    }


def _split(label: str) -> tuple[str, str, str]:
    """(function, object, file) of ``file:function [object]``."""
    m = re.match(r"^(.*?) \[([^\[\]]+)\]$", label)
    body, obj = (m.group(1), m.group(2)) if m else (label, "")
    file, sep, function = body.partition(":")
    if not sep or "(" in file or " " in file:  # no file part: the colon was the function's own
        return body, obj, ""
    return function, obj, file


def with_flame(tasks: list[Task], flame: bool, keep_profiles: str | None) -> list[Task]:
    """Instruction-count tasks that keep their call tree (``flame``) or their profile files (``keep_profiles``,
    made absolute: the counts are finished in this process, but a path names the same place anywhere)."""
    if not any(t.mode == "instructions" for t in tasks):
        option = "--flame" if flame else "--keep-profiles"
        raise UsageError(f"{option} draws on instruction counts: add --mode instructions (or both)")
    extra: dict[str, Any] = {}
    if flame:
        extra[FLAME] = True
    if keep_profiles:
        extra[KEEP_PROFILE] = str(Path(keep_profiles).resolve())
    return [dataclasses.replace(t, params={**t.params, **extra}) if t.mode == "instructions" else t for t in tasks]
