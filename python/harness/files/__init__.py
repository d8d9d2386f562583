"""Files: atomic writes, CSV and JSON-lines files read with clear errors, the per-user cache.

Lives here: ``atomic`` (a reader sees the old file or the new one),
``csv_file`` and ``jsonl_file`` (read with line numbers, append atomically),
``temporary`` (the one naming of temporary files, held by their writer,
swept by the next write), ``lock`` (the writers' lock of a file),
``cache`` (the per-user cache root, private to its owner), ``oserrors``
(an OSError on a path harness owns as one message: path, problem, fix).
docs/files.md lists every file harness writes and what each promises.
May import: ``harness.errors`` and ``harness.options`` only.
Imported by: every layer that writes a file.
"""
