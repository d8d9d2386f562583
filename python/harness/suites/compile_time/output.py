"""``bench compile_time --output X.csv``: name,metric,value rows in X.csv, the run record in X.json.

X.csv is replaced by each run (it is what ``check`` gates), except by an
interrupted run: its partial metrics go beside it (``X.interrupted-RUNID.csv``),
as its record goes beside X.json, so a complete earlier run is never lost.
"""

from __future__ import annotations

from pathlib import Path

from harness.model.record import RunRecord
from harness.records.metrics import write_metric_csv
from harness.records.store import beside, write_record


def write_outputs(path: str | Path, record: RunRecord) -> list[Path]:
    csv_path = Path(path)
    record_path = csv_path.with_suffix(".json")
    if record.interrupted and csv_path.exists():
        csv_path = beside(csv_path, record)
    write_metric_csv(csv_path, record.results)
    return [csv_path, write_record(record, record_path).path]
