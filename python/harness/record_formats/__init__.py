"""Record formats by file suffix; each module has ``write(record, path) -> appended`` and ``read(path) -> runs``."""

from __future__ import annotations

from . import csv_format, json_format, jsonl_format

FORMATS = {".json": json_format, ".jsonl": jsonl_format, ".csv": csv_format}
