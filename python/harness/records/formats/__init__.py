"""Record formats by file suffix; each module has ``preflight(path)``, ``write(record, path) -> appended``
and ``read(path) -> runs``.

May import: ``harness.model``, ``harness.files``, ``harness.errors``. Imported by ``records.store``.
"""

from __future__ import annotations

from harness.records.formats import csv_format, json_format, jsonl_format

FORMATS = {".json": json_format, ".jsonl": jsonl_format, ".csv": csv_format}
