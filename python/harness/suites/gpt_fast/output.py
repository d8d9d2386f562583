"""gpt-fast files: the CSV, JSON lines for the PyTorch benchmark database, and the run record.

``--output results.csv`` writes
  results.csv       name,metric,target,actual,dtype,device,arch,is_model; appended to
  results.jsonl     one JSON object per row (the open PyTorch benchmark-database shape); appended to
  results.run.json  the run record of this run (every shape's value, peaks, environment); replaced
Every write is atomic: the new content goes to a temporary file renamed over the old one.

Differences from the reference's output_csv/output_json, and why: values are
numbers in the JSON (the reference wrote strings), a missing target is empty
/ null rather than a made-up number, an existing CSV with another header is
an error instead of being overwritten or padded with zeros, and a bare file
name works (the reference's makedirs("") raised).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from harness.files import csv_file, jsonl_file
from harness.model.record import RunRecord
from harness.model.result import TaskResult
from harness.records.store import save
from harness.suites.gpt_fast.experiment import CSV_FIELDS, Experiment
from harness.suites.gpt_fast.peak_check import shown_value
from harness.suites.gpt_fast.runner import experiments_of

BENCHMARK_NAME = "PyTorch gpt-fast benchmark"


def format_number(value: float | None) -> str:
    """Six significant figures, as a plain number; empty for no value."""
    return "" if value is None else str(float(f"{value:.6g}"))


def csv_line(exp: Experiment) -> list[str]:
    """The row's columns; an impossible actual (a utilisation above 1) is left empty, like a missing target."""
    row = {**exp.csv_row(), "actual": shown_value(exp.metric, exp.actual)}
    return [format_number(v) if k in ("target", "actual") else str(v) for k, v in row.items()]


def append_csv(path: str | Path, experiments: Iterable[Experiment]) -> Path:
    """Append rows to ``path``, keeping its rows and header (written if the file is new or empty)."""
    csv_file.append_csv(path, CSV_FIELDS, [csv_line(e) for e in experiments])
    return Path(path)


def database_record(exp: Experiment, extra_info: dict[str, Any] | None = None) -> dict[str, Any]:
    """One row in the open PyTorch benchmark-database shape (benchmark / model / metric)."""
    return {
        "benchmark": {
            "name": BENCHMARK_NAME,
            "mode": "inference",
            "dtype": exp.dtype,
            "extra_info": {"device": exp.device, "arch": exp.arch, **(extra_info or {})},
        },
        "model": {
            "name": exp.name,
            "type": "OSS model" if exp.is_model else "micro-benchmark",
            "origins": ["pytorch"],
        },
        "metric": {
            "name": exp.metric,
            # An impossible value (a utilisation above 1) is withheld, not recorded as a figure.
            "benchmark_values": [] if shown_value(exp.metric, exp.actual) is None else [exp.actual],
            "target_value": exp.target,
        },
    }


def append_jsonl(path: str | Path, records: Iterable[dict[str, Any]]) -> Path:
    jsonl_file.append_jsonl(path, records)
    return Path(path)


def gpt_fast_results(results: Sequence[TaskResult]) -> list[tuple[TaskResult, Experiment]]:
    return [(r, e) for r in results if r.ok and r.task.kind == "gpt_fast" for e in experiments_of(r)]


def _extra_info(result: TaskResult) -> dict[str, Any]:
    ctx = result.extra.get("context", {})
    return {"peaks_source": ctx.get("peaks", {}).get("source"), "size": ctx.get("size")}


def output_paths(csv_path: str | Path) -> tuple[Path, Path, Path]:
    """(CSV, JSON lines, run record) for an --output name ending in .csv."""
    p = Path(csv_path)
    return p, p.with_suffix(".jsonl"), p.with_suffix(".run.json")


def write_outputs(csv_path: str | Path, record: RunRecord) -> list[Path]:
    """Append the run's rows to the CSV and JSON lines and write the run record beside them."""
    csv_file, jsonl_file, record_file = output_paths(csv_path)
    pairs = gpt_fast_results(record.results)
    append_csv(csv_file, [e for _, e in pairs])
    append_jsonl(jsonl_file, [database_record(e, _extra_info(r)) for r, e in pairs])
    save(record, record_file)
    return [csv_file, jsonl_file, record_file]
