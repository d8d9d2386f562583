"""``bench compile_time --output X.csv``: name,metric,value rows in X.csv, the run record in X.json."""

from __future__ import annotations

from pathlib import Path

from harness.model.record import RunRecord
from harness.records.metrics import write_metric_csv
from harness.records.store import save


def write_outputs(path: str | Path, record: RunRecord) -> list[Path]:
    csv_path = Path(path)
    write_metric_csv(csv_path, record.results)
    record_path = csv_path.with_suffix(".json")
    save(record, record_path)
    return [csv_path, record_path]
