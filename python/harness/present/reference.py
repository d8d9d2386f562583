"""A run's metrics next to published reference values (PyTorch's): ours, theirs, the ratio. Never a gate.

The reference file is an expected-results file (``name,metric,expected,
noise_margin``) with three more columns saying where each value comes from:
``counter`` (PyTorch's pr_time_benchmarks use ``perf``: the hardware
counter of torch's ``_instruction_counter``), ``torch`` (the version or
commit the value was recorded on) and ``source`` (the file and commit it was
copied from). Ours come from the run record: the counter of each result and
the torch version of the run. Where they differ the row says so, because a
ratio across counters or versions measures those as well as the work.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from rich import box
from rich.markup import escape
from rich.table import Table

from harness.errors import UsageError
from harness.present.check import ExpectedFile, Key, read_expected

PROVENANCE_COLUMNS = ("counter", "torch", "source")


@dataclasses.dataclass
class Provenance:
    """Where our values come from: the torch version of the run and each result's counter."""

    torch: str | None = None
    counters: dict[str, str] = dataclasses.field(default_factory=dict)  # case name -> counter


@dataclasses.dataclass
class ReferenceRow:
    name: str
    metric: str
    ours: float | None
    theirs: float
    notes: list[str]

    @property
    def ratio(self) -> float | None:
        """ours / theirs, or None without a value of ours."""
        return None if self.ours is None or self.theirs == 0 else self.ours / self.theirs


def read_reference(path: str | Path) -> ExpectedFile:
    """The reference file; it must name where its values come from."""
    reference = read_expected(path)
    missing = [c for c in PROVENANCE_COLUMNS if c not in reference.header]
    if missing:
        raise UsageError(
            f"{reference.path}: a reference file needs the column(s) {', '.join(missing)} besides "
            f"name,metric,expected,noise_margin: say which counter, torch version and source each value comes from"
        )
    return reference


def provenance_of(results: str | Path) -> Provenance:
    """The run record of RESULTS: itself (.json), or the ``X.json`` that ``bench --output X.csv`` writes beside it."""
    from harness.records.store import load

    path = Path(results)
    record_path = path if path.suffix == ".json" else path.with_suffix(".json")
    if not record_path.exists():
        return Provenance()
    try:
        record = load(record_path)
    except UsageError:
        return Provenance()
    counters = {
        str(r.extra.get("case") or r.task.name): str(r.extra["counter"])
        for r in record.results
        if r.extra.get("counter")
    }
    return Provenance(torch=(record.environment.get("torch") or {}).get("version"), counters=counters)


def compare(reference: ExpectedFile, ours: dict[Key, float], provenance: Provenance) -> list[ReferenceRow]:
    """A row per reference row (file order): our value, theirs, and what differs besides the work."""
    header = reference.header
    rows = []
    for row in reference.rows.values():
        cell = dict(zip(header, row.cells, strict=True))
        value = ours.get(row.key)
        notes = []
        if value is not None:
            counter = provenance.counters.get(row.name)
            theirs_counter = cell["counter"].strip()
            if counter and counter != theirs_counter:
                notes.append(f"counter: {counter}, theirs {theirs_counter}")
            elif not counter:
                notes.append(f"our counter unknown (theirs {theirs_counter})")
            theirs_torch = cell["torch"].strip()
            if provenance.torch is None:
                notes.append(f"our torch unknown (theirs {theirs_torch})")
            elif provenance.torch != theirs_torch:
                notes.append(f"torch: {provenance.torch}, theirs {theirs_torch}")
        else:
            notes.append("not in this run")
        rows.append(ReferenceRow(row.name, row.metric, value, row.expected, notes))
    return rows


def reference_table(rows: list[ReferenceRow], title: str) -> Table:
    metrics = sorted({r.metric for r in rows})
    # One metric (the usual case) goes in the title, so the table stays narrow.
    table = Table(
        title=title + (f": {metrics[0]}" if len(metrics) == 1 else ""), title_justify="left", box=box.SIMPLE_HEAD
    )
    table.add_column("name", no_wrap=True)
    if len(metrics) > 1:
        table.add_column("metric")
    for column in ("ours", "theirs", "ours/theirs"):
        table.add_column(column, justify="right", no_wrap=True)
    table.add_column("differs besides the work")
    for r in rows:
        ratio = r.ratio
        cells = [escape(r.name), *([escape(r.metric)] if len(metrics) > 1 else [])]
        cells += [
            "" if r.ours is None else f"{r.ours:,.0f}",
            f"{r.theirs:,.0f}",
            "" if ratio is None else f"{ratio:.2f}",
            escape("; ".join(r.notes)),
        ]
        table.add_row(*cells)
    return table
