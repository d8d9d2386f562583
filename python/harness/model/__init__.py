"""The model: the plain data every layer passes around.

Lives here: ``task`` (Task: one runnable benchmark), ``result`` (TaskResult:
what running it produced), ``record`` (RunRecord: a run's environment and
results, schema version 1), ``measurement`` (torch's TaskSpec and
Measurement), ``stats`` (the one statistics rule, the C++ core's),
``events`` (Event: a run's progress, sent by ``bench`` and rendered by
``present``), ``phases`` (a count or a time split by torch's compile events).
May import: ``harness.errors``, ``harness.options``, ``harness.core``.
Imported by: everything above it (workers, measure, define, records, run,
bench, present, suites).
"""
