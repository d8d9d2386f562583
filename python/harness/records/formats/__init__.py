"""Record formats by file suffix; each module has ``write(record, path) -> appended`` and
``read(path) -> runs`` (which refuses foreign and newer files), and ``ONE_RUN = True`` when saving
replaces the file's run instead of adding one.

Lives here: ``json_format`` (``.json``), ``jsonl_format`` (``.jsonl``),
``csv_format`` (``.csv``).
May import: ``harness.model``, ``harness.files``, ``harness.errors``.
Imported by: ``harness.records.store``.
"""

from __future__ import annotations

from harness.records.formats import csv_format, json_format, jsonl_format

FORMATS = {".json": json_format, ".jsonl": jsonl_format, ".csv": csv_format}
