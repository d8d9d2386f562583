"""Presenting results: terminal tables, comparisons, the gate, the HTML report. Nothing here measures.

Lives here: ``table`` (result tables, by kind), ``grouped_table`` and
``grouped_report`` (the dispatch-overhead table and report section of
grouped results), ``layer_table`` (instructions per PyTorch layer: the
table, the rule behind each function, the change between two results),
``compare_table`` (torch's Compare of Measurements),
``run_comparison`` (two runs: change, significance, verdict), ``check`` and
``check_table`` (the expected-values gate), ``html_report``,
``html_parts`` and ``plots`` (the HTML report), ``progress`` (a run's
progress on the terminal).
May import: ``harness.bench`` (its events), ``harness.kinds``,
``harness.measure`` (the layer names),
``harness.records``, ``harness.define``, ``harness.model``,
``harness.files``, ``harness.errors``, ``harness.options``.
Imported by: the CLI, the pytest plugin, the public API (Compare), the suites' tables.
"""
